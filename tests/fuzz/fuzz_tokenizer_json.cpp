// Fuzzes tokenizer.json (HuggingFace BPE, and WordPiece): the input is the file, a NUL byte, then a text. A
// tokenizer that loads must encode the text (and a fixed hostile one) to ids inside its vocab,
// the same ids twice, and decode them and every single id without throwing.
#include <cstring>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"

using namespace tscope;

namespace {

void checkEncodes(const Tokenizer& tokenizer, std::string_view text) {
  const std::vector<int> ids = tokenizer.encode(text);
  for (int id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.vocabSize(), "id " + std::to_string(id) + " outside the vocab");
  FUZZ_CHECK(tokenizer.encode(text) == ids, "encode is not deterministic for " + printableBytes(text));
  (void)tokenizer.decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::asString(data, size);
  const size_t separator = input.find('\0');
  if (separator == std::string::npos) return 0;
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = hfTokenizerFromText("tokenizer.json", input.substr(0, separator));
  } catch (const Error&) {
    return 0;
  }
  // model.type WordPiece gives BERT's tokenizer (fuzz_wordpiece goes deeper into it).
  FUZZ_CHECK(tokenizer->kind() == tscope::TokenizerKind::HfBpe || tokenizer->kind() == tscope::TokenizerKind::WordPiece, "kind");
  FUZZ_CHECK(tokenizer->bosId() < tokenizer->vocabSize() && tokenizer->eotId() < tokenizer->vocabSize(), "bos/eot id");
  checkEncodes(*tokenizer, "Hello world, it's 2026!  \r\n\t \xe2\x82\xac\xff <s> \xe2\x96\x81x");
  checkEncodes(*tokenizer, std::string_view(input).substr(separator + 1, 4096));
  for (int id = 0; id < tokenizer->vocabSize() && id < 512; ++id)
    FUZZ_CHECK(tokenizer->decode(std::vector<int>{id}).size() <= tokenizer->tokenBytes(id).size() + 1, "decode of one id");
  return 0;
}

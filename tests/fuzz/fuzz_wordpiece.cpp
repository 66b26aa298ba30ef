// Fuzzes BERT's WordPiece tokenizer: the input is a vocab.txt (or, when it starts with '{', a
// tokenizer.json), a NUL byte, then a text. A tokenizer that loads must encode the text (and a
// fixed hostile one) to ids inside its vocab, the same ids twice, and decode them and every single
// id without throwing; BERT's pre-tokenizer must give non-empty words free of white space that,
// put together, are the text without its white space.
#include <string>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"
#include "model/tokenize/tokenizer_wordpiece.h"
#include "model/tokenize/unicode_text.h"
#include "model/tokenize/wordpiece_text.h"

using namespace tscope;

namespace {

void checkEncodes(const Tokenizer& tokenizer, std::string_view text) {
  const std::vector<int> ids = tokenizer.encode(text);
  for (int id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer.vocabSize(), "id " + std::to_string(id) + " outside the vocab");
  FUZZ_CHECK(tokenizer.encode(text) == ids, "encode is not deterministic for " + printableBytes(text));
  (void)tokenizer.decode(ids);
}

std::string withoutSpace(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const unicode::ClassifiedUnit unit = unicode::classifyUnitAt(text, pos);
    if (unit.charClass != unicode::CharClass::Space) out.append(text.substr(pos, unit.length));
    pos += unit.length;
  }
  return out;
}

void checkPreTokenizer(std::string_view text) {
  const std::string normalized = wordpiece::bertNormalize(text, wordpiece::BertNormalizerOptions{});
  std::string joined;
  for (std::string_view word : wordpiece::bertPreTokenize(normalized)) {
    FUZZ_CHECK(!word.empty() && withoutSpace(word) == word, "a pre-tokenized word is empty or has white space");
    joined += word;
  }
  FUZZ_CHECK(joined == withoutSpace(normalized), "the words are not the text without its white space");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::asString(data, size);
  const size_t separator = input.find('\0');
  if (separator == std::string::npos) return 0;
  const std::string_view text = std::string_view(input).substr(separator + 1, 4096);
  checkPreTokenizer(text);
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    if (input[0] == '{') tokenizer = hfTokenizerFromText("tokenizer.json", input.substr(0, separator));
    else tokenizer = wordPieceTokenizerFromVocabText("vocab.txt", input.substr(0, separator));
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(tokenizer->vocabSize() > 0, "empty vocab accepted");
  checkEncodes(*tokenizer, "Hello world, it's 2026!  \r\n\t \xe2\x82\xac\xff [MASK]x[CLS] \xe6\x88\x91\xe7\x88\xb1 caf\xc3\xa9 \xe2\x80\x8b");
  checkEncodes(*tokenizer, text);
  for (int id = 0; id < tokenizer->vocabSize() && id < 512; ++id) {
    FUZZ_CHECK(!tokenizer->tokenBytes(id).empty(), "token " + std::to_string(id) + " has no text");
    (void)tokenizer->decode(std::vector<int>{id});
  }
  return 0;
}

// Fuzzes the character tokenizer's encode on arbitrary bytes, with a vocabulary of one- to
// four-byte characters. Each UTF-8 character of the input (each invalid byte on its own) must give
// one id inside the vocab, and decoding must give the input back with every character outside the
// vocab (and every invalid byte) replaced by "<unk>".
#include <set>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;

namespace {

const std::vector<std::string> kCharacters = {
    "a", "b", "z", "A", " ", "\n", "0", "|", "<", "\xc3\xa9", "\xe2\x82\xac", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "\x7f", "\x01"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Tokenizer> tokenizer = makeCharTokenizer(kCharacters);
  static const std::set<std::string> known(kCharacters.begin(), kCharacters.end());
  const std::string text = fuzz::asString(data, size);
  const std::vector<int> ids = tokenizer->encode(text);
  const std::vector<std::string> characters = splitUtf8Characters(text);
  FUZZ_CHECK(ids.size() == characters.size(), "one id per character");
  std::string expected;
  for (size_t i = 0; i < ids.size(); ++i) {
    FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer->vocabSize(), "id outside the vocab");
    const bool isKnown = known.count(characters[i]) != 0;
    FUZZ_CHECK(isKnown == (ids[i] != 0), "character " + printableBytes(characters[i]));
    expected += isKnown ? characters[i] : "<unk>";
  }
  FUZZ_CHECK(tokenizer->decode(ids) == expected, "decode(encode(x)) for x = " + printableBytes(text));
  return 0;
}

// Fuzzes chars.json, the character tokenizer's file. A tokenizer that loads must map each of its
// characters to its own id and back, and any text to ids inside its vocab.
#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = charTokenizerFromJsonText("chars.json", fuzz::asString(data, size));
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(tokenizer->vocabSize() >= 1 && tokenizer->tokenBytes(0) == "<unk>", "id 0 is <unk>");
  std::string everyCharacter;
  std::vector<int> everyId;
  for (int id = 1; id < tokenizer->vocabSize(); ++id) {
    const std::string character = tokenizer->tokenBytes(id);
    FUZZ_CHECK(tokenizer->encode(character) == std::vector<int>{id}, "character " + printableBytes(character));
    everyCharacter += character;
    everyId.push_back(id);
  }
  FUZZ_CHECK(tokenizer->encode(everyCharacter) == everyId, "all characters in a row");
  FUZZ_CHECK(tokenizer->decode(everyId) == everyCharacter, "decode of all ids");
  for (int id : tokenizer->encode(fuzz::asString(data, size))) FUZZ_CHECK(id >= 0 && id < tokenizer->vocabSize(), "id outside the vocab");
  return 0;
}

// Finding the masked-LM special tokens by their text (see special_tokens.h).
#include "model/tokenize/special_tokens.h"

#include <string>

namespace tscope {

MaskedLmTokens findMaskedLmTokens(const Tokenizer& tokenizer) {
  MaskedLmTokens found;
  int* slots[] = {&found.pad, &found.cls, &found.sep, &found.mask};
  const int vocab = tokenizer.vocabSize();
  for (int id = 0; id < vocab; ++id) {
    const std::string bytes = tokenizer.tokenBytes(id);
    if (bytes.size() < 5 || bytes.size() > 6 || bytes.front() != '[') continue;
    for (size_t k = 0; k < kMaskedLmTokenNames.size(); ++k)
      if (*slots[k] < 0 && bytes == kMaskedLmTokenNames[k]) *slots[k] = id;
  }
  return found;
}

}  // namespace tscope

// The special tokens of a masked language model (BERT's names): [PAD], [CLS] (in front of every
// input), [SEP] (after it) and [MASK] (a hidden token to fill in). A tokenizer holds them as
// ordinary vocabulary entries that encode() never produces from text (tscope's Brown BERT appends
// them after its BPE; BERT's WordPiece vocabulary has them as ids 0, 101, 102, 103); they are found
// by their text.
#pragma once
#include <array>
#include <string_view>

#include "model/tokenize/tokenizer.h"

namespace tscope {

inline constexpr std::array<std::string_view, 4> kMaskedLmTokenNames = {"[PAD]", "[CLS]", "[SEP]", "[MASK]"};

struct MaskedLmTokens {
  int pad = -1, cls = -1, sep = -1, mask = -1;                         // -1: the tokenizer has no such token
  bool complete() const { return cls >= 0 && sep >= 0 && mask >= 0; }  // what a fill-in needs ([PAD] is optional)
  bool isSpecial(int id) const { return id >= 0 && (id == pad || id == cls || id == sep || id == mask); }
};

// Each special token's id: the first id whose tokenBytes are exactly its name.
MaskedLmTokens findMaskedLmTokens(const Tokenizer& tokenizer);

}  // namespace tscope

// BERT's masked-language-model objective (Devlin et al. 2019, section 3.1 and appendix A.1): a
// training window is [CLS] text [SEP]; 15% of the text positions are chosen, and of those 80% are
// replaced by [MASK], 10% by a random token and 10% kept; the loss counts the chosen positions
// only, each predicting its original token.
#pragma once
#include <cstdint>
#include <span>

#include "model/core/rng.h"
#include "model/tokenize/special_tokens.h"

namespace tscope {

inline constexpr double kMaskedLmRate = 0.15;

// Fills one window of T = text.size() + 2 tokens: inputs = [CLS] text [SEP] with the chosen
// positions corrupted, targets = [CLS] text [SEP] uncorrupted, scored = 1 at the chosen positions.
// Random replacements are drawn from [0, textVocab) (never a special token). At least one position
// is chosen. Draws only from `rng`, so the same seed masks the same way.
void maskWindow(std::span<const int> text, const MaskedLmTokens& specials, int textVocab, Rng& rng, int* inputs, int* targets, uint8_t* scored);

}  // namespace tscope

// BERT's masking of one training window (see masked_lm.h).
#include "model/train/masked_lm.h"

#include "model/core/error.h"

namespace tscope {

void maskWindow(std::span<const int> text, const MaskedLmTokens& specials, int textVocab, Rng& rng, int* inputs, int* targets, uint8_t* scored) {
  if (!specials.complete() || textVocab < 1) throw Error("masked-LM data needs [CLS], [SEP] and [MASK] tokens and a text vocabulary");
  const int n = static_cast<int>(text.size()), T = n + 2;
  inputs[0] = targets[0] = specials.cls;
  inputs[T - 1] = targets[T - 1] = specials.sep;
  scored[0] = scored[T - 1] = 0;
  int chosen = 0;
  for (int i = 0; i < n; ++i) {
    const int t = i + 1;
    inputs[t] = targets[t] = text[i];
    scored[t] = rng.uniform() < kMaskedLmRate;
    chosen += scored[t];
  }
  if (chosen == 0 && n > 0) scored[1 + static_cast<int>(rng.next() % static_cast<uint64_t>(n))] = 1;
  for (int t = 1; t <= n; ++t) {
    if (!scored[t]) continue;
    const double u = rng.uniform();
    if (u < 0.8) inputs[t] = specials.mask;
    else if (u < 0.9) inputs[t] = static_cast<int>(rng.next() % static_cast<uint64_t>(textVocab));
  }
}

}  // namespace tscope

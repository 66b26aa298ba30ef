// Shared helpers for the engine tests: random weights with every parameter non-trivial, and
// error measures that report the largest difference they saw.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "model/sampling.h"
#include "model/weights.h"

namespace tscope::testing {

// A GPT-2-style config of the given size (L layers, H heads, C = d_model, V vocab, P positions).
inline ModelConfig smallConfig(int L, int H, int C, int V, int P) {
  ModelConfig c;
  c.n_layer = L;
  c.n_head = H;
  c.n_embd = C;
  c.vocab_size = V;
  c.n_positions = P;
  return c;
}

// GPT-2 init plus noise on LayerNorm weights and biases, so no bias path is trivially zero.
inline Weights randomWeights(const ModelConfig& config, uint64_t seed) {
  Weights w(config);
  w.initRandom(seed);
  Rng rng(seed + 1000);
  for (const auto& spec : w.layout()) {
    if (!spec.name.ends_with(".bias") && spec.name.find("ln_") == std::string::npos) continue;
    float* p = w.param(spec.name);
    for (size_t i = 0; i < spec.numel(); ++i) p[i] += static_cast<float>(0.2 * (rng.uniform() - 0.5));
  }
  return w;
}

struct Difference {
  double maxAbs = 0;     // largest |a - b|
  double maxRef = 0;     // largest |b|
  size_t where = 0;      // index of the largest difference
  double relative() const { return maxRef > 0 ? maxAbs / maxRef : maxAbs; }
  std::string describe() const {
    return "max |diff| " + std::to_string(maxAbs) + " at " + std::to_string(where) + ", max |ref| " + std::to_string(maxRef) +
           ", relative " + std::to_string(relative());
  }
};

inline Difference compare(const float* a, const float* b, size_t n) {
  Difference d;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(b[i]) && a[i] == b[i]) continue;  // matching -inf (masked scores)
    const double diff = std::isfinite(a[i]) ? std::fabs((double)a[i] - b[i]) : INFINITY;
    if (diff > d.maxAbs || std::isnan(diff)) {
      d.maxAbs = std::isnan(diff) ? INFINITY : diff;
      d.where = i;
    }
    if (std::isfinite(b[i])) d.maxRef = std::max(d.maxRef, std::fabs((double)b[i]));
  }
  return d;
}

inline Difference compare(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return Difference{INFINITY, 0, 0};
  return compare(a.data(), b.data(), a.size());
}

}  // namespace tscope::testing

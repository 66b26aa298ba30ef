// Inputs and comparisons the efficient-attention tests share (forward and backward): a seeded
// random head, small knobs, the fast path's output, and differences relative to an output's scale.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/nn/efficient_attention.h"

namespace tscope {

// One head's q, k, v (n, d) drawn from the seeded normals; q and k scaled so the softmax is peaked
// as in a trained model.
struct RandomHead {
  std::vector<float> q, k, v;
  HeadQkv head;
  RandomHead(int n, int d, bool causal, uint64_t seed, double qkScale = 1.5) {
    const size_t cells = static_cast<size_t>(n) * d;
    q = seededNormals(seed * 3 + 101, cells, qkScale);
    k = seededNormals(seed * 3 + 102, cells, qkScale);
    v = seededNormals(seed * 3 + 103, cells, 1.0);
    head = {q.data(), k.data(), v.data(), n, d, causal};
  }
};

// max |a - b| / max(1e-3, max |b|): the difference relative to the output's scale.
inline double relativeMaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-3;
  for (size_t x = 0; x < b.size(); ++x) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[x]) - b[x]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[x])));
  }
  return diff / scale;
}

// Knobs small enough for the test shapes (each variant reads its own).
inline AttentionVariantParams smallKnobs(AttentionVariant variant) {
  AttentionVariantParams p;
  p.variant = variant;
  p.tile = 16;
  p.window = 5;
  p.buckets = 4;
  p.rounds = 2;
  p.chunk = 8;
  p.projected = 8;
  p.features = 32;
  p.seed = 7;
  return p;
}

inline std::vector<float> fastOut(const HeadQkv& head, const AttentionVariantParams& params) {
  std::vector<float> out(static_cast<size_t>(head.n) * head.d, -99.0f);
  attentionVariantFast(head, params, out.data());
  return out;
}

}  // namespace tscope

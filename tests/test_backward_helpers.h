// Inputs shared by the backward tests (plain loops, Eigen, CUDA): seeded random vectors, the qkv
// a forward leaves behind, the grid of attention variants every BackwardOps is checked over, and
// host <-> backend copies.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/positional.h"
#include "model/generate/sampling.h"

namespace tscope::testing {

// n floats uniform in [-scale, scale) from Rng(seed) (scale in double).
inline std::vector<float> randomVector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return v;
}

// Forward-shaped qkv (batch*T, qkvDim) as the forward leaves it: with RoPE, Q and K rotated.
inline std::vector<float> forwardQkv(const AttentionShape& shape, int batch, uint64_t seed) {
  const int width = shape.qkvDim();
  auto qkv = randomVector(static_cast<size_t>(batch) * shape.T * width, seed, 1.5);
  if (shape.ropeBase > 0)
    for (int b = 0; b < batch; ++b) {
      float* seq = qkv.data() + static_cast<size_t>(b) * shape.T * width;
      applyRope(seq, shape.T, shape.nHead + shape.kvHeads(), shape.headDim, width, 0, shape.ropeBase, shape.ropeFrequencies);
    }
  return qkv;
}

// Host vector <-> backend buffer.
inline Buffer toDevice(Backend& device, const std::vector<float>& host) {
  Buffer buffer = device.allocate(host.size());
  device.upload(buffer.data(), host.data(), host.size());
  return buffer;
}

inline std::vector<float> toHost(Backend& device, const Buffer& buffer) {
  std::vector<float> host(buffer.size());
  device.download(host.data(), buffer.data(), host.size());
  return host;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for every i, where L = g . forward(x).
// The largest difference is recorded as a test property named `what` (see --gtest_output=xml).
inline void expectGradientMatches(const std::string& what, std::vector<float>& x, const std::vector<float>& g,
                                  const std::function<std::vector<float>()>& forward, const std::vector<float>& analytic, double h = 1e-2) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  auto dot = [&g](const std::vector<float>& y) {
    double s = 0;
    for (size_t i = 0; i < g.size(); ++i) s += (double)g[i] * y[i];
    return s;
  };
  double maxDiff = 0, maxRef = 0;
  size_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + h);
    const double plus = dot(forward());
    x[i] = static_cast<float>(saved - h);
    const double minus = dot(forward());
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    if (std::abs(numeric - analytic[i]) > maxDiff) {
      maxDiff = std::abs(numeric - analytic[i]);
      worst = i;
    }
    maxRef = std::max(maxRef, std::abs(numeric));
  }
  ::testing::Test::RecordProperty(what, std::to_string(maxDiff) + " (max |numeric| " + std::to_string(maxRef) + ")");
  EXPECT_LT(maxDiff, 5e-3 * std::max(1.0, maxRef)) << what << ": max |numeric - analytic| " << maxDiff << " at " << worst << ", max |numeric| "
                                                   << maxRef;
}

// A causal attention shape of T tokens, H heads of D (no cache beyond T, no positions).
inline AttentionShape attentionShape(int T, int H, int D) {
  AttentionShape shape;
  shape.T = T;
  shape.nHead = H;
  shape.headDim = D;
  return shape;
}

struct AttentionCase {
  const char* name;
  int T, H, kvHeads, D;
  bool causal;
  int window;
  double ropeBase;
  bool alibi;
  // The training shape (pos0 = 0, no cache beyond T); `slopes` (H) must outlive it.
  AttentionShape shape(const std::vector<float>& slopes) const {
    AttentionShape s;
    s.T = T;
    s.nHead = H;
    s.nKvHead = kvHeads;
    s.headDim = D;
    s.cacheRows = T;
    s.causal = causal;
    s.window = window;
    s.ropeBase = ropeBase;
    s.alibiSlopes = alibi ? slopes.data() : nullptr;
    return s;
  }
};

// Every mask, head grouping and positional variant, alone and combined. T = 45 and 70 are not
// multiples of the query tiles; windows cross tile edges.
inline std::vector<AttentionCase> attentionCases() {
  return {
      {"causal", 45, 4, 4, 8, true, 0, 0, false},
      {"bidirectional", 45, 4, 4, 8, false, 0, 0, false},
      {"causal window", 70, 2, 2, 8, true, 9, 0, false},
      {"bidirectional window", 70, 2, 2, 8, false, 9, 0, false},
      {"GQA", 45, 6, 2, 8, true, 0, 0, false},
      {"MQA", 45, 4, 1, 8, true, 0, 0, false},
      {"RoPE", 45, 4, 4, 8, true, 0, 10000, false},
      {"ALiBi", 45, 4, 4, 8, true, 0, 0, true},
      {"bidirectional ALiBi", 45, 4, 4, 8, false, 0, 0, true},
      {"GQA + RoPE + causal window", 70, 4, 2, 8, true, 17, 500, false},
      {"MQA + RoPE + ALiBi, bidirectional window", 70, 3, 1, 6, false, 20, 10000, true},
  };
}

}  // namespace tscope::testing

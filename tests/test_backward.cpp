// Gradient checks for the reference backward passes: each op's analytic gradient against central
// finite differences of L = sum(g * op(x)) for a random g, over every input element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "model/backward_reference.h"
#include "model/ops_reference.h"
#include "model/sampling.h"

using namespace tscope;

namespace {

std::vector<float> randomVector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double)a[i] * b[i];
  return s;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for every i, where L = g . forward(x).
void expectGradientMatches(const char* what, std::vector<float>& x, const std::vector<float>& g,
                           const std::function<std::vector<float>()>& forward, const std::vector<float>& analytic, double h = 1e-2) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double maxDiff = 0, maxRef = 0;
  size_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + h);
    const double plus = dot(g, forward());
    x[i] = static_cast<float>(saved - h);
    const double minus = dot(g, forward());
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    if (std::abs(numeric - analytic[i]) > maxDiff) {
      maxDiff = std::abs(numeric - analytic[i]);
      worst = i;
    }
    maxRef = std::max(maxRef, std::abs(numeric));
  }
  EXPECT_LT(maxDiff, 5e-3 * std::max(1.0, maxRef)) << what << ": max |numeric - analytic| " << maxDiff << " at " << worst
                                                   << ", max |numeric| " << maxRef;
}

}  // namespace

TEST(Backward, LayerNormMatchesFiniteDifferences) {
  const int T = 3, C = 6;
  auto x = randomVector(T * C, 1, 2.0), w = randomVector(C, 2), b = randomVector(C, 3), g = randomVector(T * C, 4);
  auto forward = [&] {
    std::vector<float> out(T * C);
    ref::layerNorm(out.data(), x.data(), w.data(), b.data(), T, C, 1e-5f);
    return out;
  };
  std::vector<float> dx(T * C, 0), dw(C, 0), db(C, 0);
  ref::layerNormBackward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), T, C, 1e-5f);
  expectGradientMatches("layerNorm d/dx", x, g, forward, dx);
  expectGradientMatches("layerNorm d/dweight", w, g, forward, dw);
  expectGradientMatches("layerNorm d/dbias", b, g, forward, db);
}

TEST(Backward, MatmulBothLayoutsMatchFiniteDifferences) {
  const int T = 3, K = 4, N = 5;
  auto x = randomVector(T * K, 5), w = randomVector(K * N, 6), b = randomVector(N, 7), g = randomVector(T * N, 8);
  auto forward = [&] {
    std::vector<float> out(T * N);
    ref::matmul(out.data(), x.data(), w.data(), b.data(), T, K, N);
    return out;
  };
  std::vector<float> dx(T * K, 0), dw(K * N, 0), db(N, 0);
  ref::matmulBackward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), T, K, N);
  expectGradientMatches("matmul d/dx", x, g, forward, dx);
  expectGradientMatches("matmul d/dweight", w, g, forward, dw);
  expectGradientMatches("matmul d/dbias", b, g, forward, db);
  auto forwardT = [&] {  // w read as (N, K)
    std::vector<float> out(T * N);
    ref::matmulTransposed(out.data(), x.data(), w.data(), T, K, N);
    return out;
  };
  std::vector<float> dxT(T * K, 0), dwT(K * N, 0);
  ref::matmulTransposedBackward(dxT.data(), dwT.data(), g.data(), x.data(), w.data(), T, K, N);
  expectGradientMatches("matmulTransposed d/dx", x, g, forwardT, dxT);
  expectGradientMatches("matmulTransposed d/dweight", w, g, forwardT, dwT);
}

TEST(Backward, GeluMatchesFiniteDifferences) {
  auto x = randomVector(40, 9, 4.0), g = randomVector(40, 10);
  auto forward = [&] {
    auto y = x;
    ref::activate(y.data(), y.size(), Activation::GeluTanh);
    return y;
  };
  std::vector<float> dx(40, 0);
  ref::geluTanhBackward(dx.data(), g.data(), x.data(), x.size());
  expectGradientMatches("gelu", x, g, forward, dx, 1e-3);
}

TEST(Backward, CausalAttentionMatchesFiniteDifferences) {
  const int T = 4, H = 2, D = 3, C = H * D;
  auto qkv = randomVector(T * 3 * C, 11, 1.5), g = randomVector(T * C, 12);
  auto forward = [&] {
    std::vector<float> out(T * C), kCache(T * C), vCache(T * C), copy = qkv;
    AttentionShape shape{T, 0, H, D, T};
    ref::attention(out.data(), nullptr, nullptr, copy.data(), kCache.data(), vCache.data(), shape);
    return out;
  };
  std::vector<float> probs(H * T * T), out(T * C), kCache(T * C), vCache(T * C), copy = qkv;
  AttentionShape shape{T, 0, H, D, T};
  ref::attention(out.data(), probs.data(), nullptr, copy.data(), kCache.data(), vCache.data(), shape);
  std::vector<float> dqkv(T * 3 * C, 0);
  ref::attentionBackward(dqkv.data(), g.data(), qkv.data(), probs.data(), T, H, D);
  expectGradientMatches("attention d/dqkv", qkv, g, forward, dqkv);
}

TEST(Backward, EmbeddingScattersIntoTheUsedRows) {
  const int T = 3, C = 2;
  const int tokens[T] = {4, 1, 4};
  const auto g = randomVector(T * C, 13);
  std::vector<float> dwte(5 * C, 0), dwpe(T * C, 0);
  ref::embedBackward(dwte.data(), dwpe.data(), g.data(), tokens, T, C);
  for (int c = 0; c < C; ++c) {
    EXPECT_FLOAT_EQ(dwte[4 * C + c], g[0 * C + c] + g[2 * C + c]);  // a repeated token sums its gradients
    EXPECT_FLOAT_EQ(dwte[1 * C + c], g[1 * C + c]);
    EXPECT_EQ(dwte[0 * C + c], 0.0f);
    EXPECT_FLOAT_EQ(dwpe[2 * C + c], g[2 * C + c]);
  }
}

TEST(Backward, CrossEntropyMatchesFiniteDifferencesAndHonoursTheMask) {
  const int T = 3, V = 5;
  auto logits = randomVector(T * V, 14, 3.0);
  const int targets[T] = {2, 0, 4};
  const unsigned char scored[T] = {1, 0, 1};
  std::vector<float> dlogits(T * V);
  const double loss = ref::crossEntropyForwardBackward(dlogits.data(), logits.data(), targets, scored, T, V);
  // The loss itself, by hand: mean over the two scored positions of -log softmax.
  double expected = 0;
  for (int t : {0, 2}) {
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(logits[t * V + v]);
    expected += (std::log(sum) - logits[t * V + targets[t]]) / 2;
  }
  EXPECT_NEAR(loss, expected, 1e-6);
  for (int v = 0; v < V; ++v) EXPECT_EQ(dlogits[1 * V + v], 0.0f) << "unscored position has no gradient";
  std::vector<float> scratch(T * V);
  std::vector<float> one = {1.0f};
  auto lossOf = [&] { return std::vector<float>{(float)ref::crossEntropyForwardBackward(scratch.data(), logits.data(), targets, scored, T, V)}; };
  expectGradientMatches("cross-entropy d/dlogits", logits, one, lossOf, dlogits, 1e-3);
}

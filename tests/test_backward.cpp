// Gradient checks for the reference backward free functions (ops_reference.h, backward_reference.h):
// each op's analytic gradient against central finite differences of L = sum(g * op(x)) for a random
// g, over every input element; and the reference BackwardOps against the free functions. Every
// device's BackwardOps (the reference's included) against finite differences, attention in every
// variant of AttentionShape, is tests/test_device_gradients.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/train/backward.h"
#include "model/train/backward_reference.h"
#include "model/core/error.h"
#include "model/nn/ops_reference.h"
#include "model/nn/positional.h"
#include "model/generate/sampling.h"
#include "tests/test_backward_helpers.h"

using namespace tscope;
using tscope::testing::attentionShape;
using tscope::testing::expectGradientMatches;
using tscope::testing::randomVector;

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

// The mean form (ref::crossEntropyForwardBackward) is the reference ops' sum form with scale 1 /
// scored rows. The sum form itself, on every device: tests/test_device_gradients.cpp.
TEST(Backward, CrossEntropyMeanFormIsTheSumFormScaled) {
  const int rows = 4, V = 5;
  const float scale = 0.25f;
  auto logits = randomVector(rows * V, 35, 3.0);
  const int targets[rows] = {2, 0, 4, 1};
  const uint8_t scored[rows] = {1, 0, 1, 1};
  std::vector<float> dlogits(rows * V, 7.0f);
  const double sum = makeReferenceBackwardOps()->crossEntropy(dlogits.data(), logits.data(), targets, scored, rows, V, scale);
  std::vector<float> dmean(rows * V);
  const double mean = ref::crossEntropyForwardBackward(dmean.data(), logits.data(), targets, scored, rows, V);
  EXPECT_NEAR(mean, sum / 3, 1e-9) << "mean loss";
  for (size_t i = 0; i < dmean.size(); ++i) EXPECT_NEAR(dmean[i], dlogits[i] / (3 * scale), 1e-7) << "mean gradient at " << i;
}

// --- the BackwardOps object is the free functions, and accumulates -------------------------

namespace {

// Runs `call` twice on gradient buffers: once from random starting values (through the ops
// object) and once from the same values through the free function; they must agree exactly, and
// the ops object's result must equal start + its result from zero (accumulation).
void expectSameAndAccumulates(const char* what, std::vector<std::vector<float>*> grads, const std::function<void()>& viaOps,
                              const std::function<void()>& viaFree) {
  std::vector<std::vector<float>> start;
  for (size_t i = 0; i < grads.size(); ++i) start.push_back(randomVector(grads[i]->size(), 70 + i));
  for (size_t i = 0; i < grads.size(); ++i) *grads[i] = start[i];
  viaOps();
  std::vector<std::vector<float>> ops;
  for (auto* g : grads) ops.push_back(*g);
  for (size_t i = 0; i < grads.size(); ++i) *grads[i] = start[i];
  viaFree();
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_EQ(ops[i], *grads[i]) << what << ": gradient " << i << " ops object vs free function";
  for (auto* g : grads) std::fill(g->begin(), g->end(), 0.0f);
  viaOps();
  for (size_t i = 0; i < grads.size(); ++i) {
    double maxDiff = 0;
    for (size_t j = 0; j < grads[i]->size(); ++j) maxDiff = std::max(maxDiff, std::abs((double)ops[i][j] - start[i][j] - (*grads[i])[j]));
    EXPECT_LT(maxDiff, 1e-5) << what << ": gradient " << i << " does not accumulate (+=): max |result - start - fromZero| " << maxDiff;
  }
}

}  // namespace

TEST(Backward, OpsObjectAgreesWithTheFreeFunctions) {
  const auto ops = makeReferenceBackwardOps();
  EXPECT_EQ(ops->name(), "reference");
  EXPECT_EQ(ops->threadCount(), 1);
  const int rows = 4, T = 2, C = 6, K = 6, N = 5, V = 7;
  const int tokens[rows] = {3, 6, 3, 0};
  auto x = randomVector(rows * C, 80), w = randomVector(C, 81), dy = randomVector(rows * C, 82);
  auto mw = randomVector(K * N, 83), dyN = randomVector(rows * N, 84);
  std::vector<float> a, b, c;
  a.resize(V * C), b.resize(T * C);
  expectSameAndAccumulates(
      "embed", {&a, &b}, [&] { ops->embed(a.data(), b.data(), dy.data(), tokens, rows, T, C); },
      [&] { ref::embedBackward(a.data(), b.data(), dy.data(), tokens, rows, T, C); });
  a.resize(rows * C), b.resize(C), c.resize(C);
  expectSameAndAccumulates(
      "layerNorm", {&a, &b, &c}, [&] { ops->layerNorm(a.data(), b.data(), c.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); },
      [&] { ref::layerNormBackward(a.data(), b.data(), c.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); });
  expectSameAndAccumulates(
      "rmsNorm", {&a, &b}, [&] { ops->rmsNorm(a.data(), b.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); },
      [&] { ref::rmsNormBackward(a.data(), b.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); });
  a.resize(rows * K), b.resize(K * N), c.resize(N);
  expectSameAndAccumulates(
      "matmul", {&a, &b, &c}, [&] { ops->matmul(a.data(), b.data(), c.data(), dyN.data(), x.data(), mw.data(), rows, K, N); },
      [&] { ref::matmulBackward(a.data(), b.data(), c.data(), dyN.data(), x.data(), mw.data(), rows, K, N); });
  expectSameAndAccumulates(
      "matmulTransposed", {&a, &b}, [&] { ops->matmulTransposed(a.data(), b.data(), dyN.data(), x.data(), mw.data(), rows, K, N); },
      [&] { ref::matmulTransposedBackward(a.data(), b.data(), dyN.data(), x.data(), mw.data(), rows, K, N); });
  a.resize(rows * C), b.resize(rows * C);
  for (Activation kind : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu})
    expectSameAndAccumulates(
        "activation", {&a}, [&] { ops->activation(a.data(), dy.data(), x.data(), a.size(), kind); },
        [&] { ref::activationBackward(a.data(), dy.data(), x.data(), a.size(), kind); });
  expectSameAndAccumulates(
      "swiglu", {&a, &b}, [&] { ops->swiglu(a.data(), b.data(), dy.data(), x.data(), dy.data(), a.size()); },
      [&] { ref::swigluBackward(a.data(), b.data(), dy.data(), x.data(), dy.data(), a.size()); });
  auto shape = attentionShape(T, 2, 2);
  shape.nKvHead = 1;
  shape.ropeBase = 10000;
  auto qkv = randomVector(rows * shape.qkvDim(), 85);
  a.resize(qkv.size());
  expectSameAndAccumulates(
      "attention", {&a}, [&] { ops->attention(a.data(), dy.data(), qkv.data(), shape, rows / T); },
      [&] { ref::attentionBackward(a.data(), dy.data(), qkv.data(), shape, rows / T); });
}

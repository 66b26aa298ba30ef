// Gradient checks for the reference backward passes: each op's analytic gradient against central
// finite differences of L = sum(g * op(x)) for a random g, over every input element; attention in
// every variant of AttentionShape; and the reference BackwardOps against the free functions.
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
using tscope::testing::randomVector;

namespace {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double)a[i] * b[i];
  return s;
}

// Checks analytic[i] against (L(x + h e_i) - L(x - h e_i)) / 2h for every i, where L = g . forward(x).
// The largest difference is recorded as a test property named `what` (see --gtest_output=xml).
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
  ::testing::Test::RecordProperty(what, std::to_string(maxDiff) + " (max |numeric| " + std::to_string(maxRef) + ")");
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

// --- the BackwardOps interface (reference): every op against finite differences ---------------

TEST(Backward, RmsNormMatchesFiniteDifferences) {
  const int rows = 4, C = 6;
  auto x = randomVector(rows * C, 21, 2.0), w = randomVector(C, 22), g = randomVector(rows * C, 23);
  auto forward = [&] {
    std::vector<float> out(rows * C);  // (rows, C)
    ref::rmsNorm(out.data(), x.data(), w.data(), rows, C, 1e-5f);
    return out;
  };
  std::vector<float> dx(rows * C, 0), dw(C, 0);
  makeReferenceBackwardOps()->rmsNorm(dx.data(), dw.data(), g.data(), x.data(), w.data(), rows, C, 1e-5f);
  expectGradientMatches("rmsNorm d/dx", x, g, forward, dx);
  expectGradientMatches("rmsNorm d/dweight", w, g, forward, dw);
}

TEST(Backward, ActivationsMatchFiniteDifferences) {
  const auto ops = makeReferenceBackwardOps();
  for (Activation kind : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu}) {
    const std::string what = kind == Activation::GeluTanh ? "gelu tanh" : kind == Activation::GeluErf ? "gelu erf" : "relu";
    auto x = randomVector(40, 24, 4.0), g = randomVector(40, 25);
    for (auto& v : x)
      if (std::abs(v) < 0.05f) v = 0.5f;  // keep ReLU's kink out of the finite-difference stencil
    auto forward = [&] {
      auto y = x;  // (n)
      ref::activate(y.data(), y.size(), kind);
      return y;
    };
    std::vector<float> dx(40, 0);
    ops->activation(dx.data(), g.data(), x.data(), x.size(), kind);
    expectGradientMatches((what + " d/dx").c_str(), x, g, forward, dx, 1e-3);
  }
  // ReLU's derivative is 0 at exactly 0 (and below).
  const float zeroIn[2] = {0.0f, -1.0f}, one[2] = {1.0f, 1.0f};
  float dzero[2] = {0, 0};
  ops->activation(dzero, one, zeroIn, 2, Activation::Relu);
  EXPECT_EQ(dzero[0], 0.0f) << "relu'(0)";
  EXPECT_EQ(dzero[1], 0.0f) << "relu'(-1)";
  float dummy = 0;
  EXPECT_THROW(ops->activation(&dummy, one, one, 1, Activation::SwiGlu), Error);
}

TEST(Backward, SwigluMatchesFiniteDifferences) {
  const size_t n = 30;
  auto gate = randomVector(n, 26, 4.0), value = randomVector(n, 27, 2.0), g = randomVector(n, 28);
  auto forward = [&] {
    auto out = value;  // (n) = silu(gate) * value
    ref::swiglu(out.data(), gate.data(), n);
    return out;
  };
  std::vector<float> dgate(n, 0), dvalue(n, 0);
  makeReferenceBackwardOps()->swiglu(dgate.data(), dvalue.data(), g.data(), gate.data(), value.data(), n);
  expectGradientMatches("swiglu d/dgate", gate, g, forward, dgate, 1e-3);
  expectGradientMatches("swiglu d/dvalue", value, g, forward, dvalue, 1e-3);
}

TEST(Backward, MatmulSkipsTheGradientsNotWanted) {
  const int rows = 3, K = 4, N = 5;
  auto x = randomVector(rows * K, 29), w = randomVector(K * N, 30), g = randomVector(rows * N, 31);
  auto forward = [&] {
    std::vector<float> out(rows * N);  // (rows, N)
    ref::matmul(out.data(), x.data(), w.data(), nullptr, rows, K, N);
    return out;
  };
  std::vector<float> dw(K * N, 0);
  makeReferenceBackwardOps()->matmul(nullptr, dw.data(), nullptr, g.data(), x.data(), w.data(), rows, K, N);
  expectGradientMatches("matmul (no din, no dbias) d/dweight", w, g, forward, dw);
}

TEST(Backward, EmbeddingOfABatchWrapsPositionsPerSequence) {
  const int T = 3, rows = 2 * T, C = 2, V = 5;
  const int tokens[rows] = {4, 1, 4, 0, 1, 2};
  auto wte = randomVector(V * C, 32), wpe = randomVector(T * C, 33), g = randomVector(rows * C, 34);
  auto forward = [&] {
    std::vector<float> out(rows * C);  // (rows, C): each sequence starts at position 0
    for (int b = 0; b < rows / T; ++b) ref::embed(out.data() + b * T * C, tokens + b * T, wte.data(), wpe.data(), T, C, 0);
    return out;
  };
  const auto ops = makeReferenceBackwardOps();
  std::vector<float> dwte(V * C, 0), dwpe(T * C, 0);
  ops->embed(dwte.data(), dwpe.data(), g.data(), tokens, rows, T, C);
  expectGradientMatches("embed d/dwte", wte, g, forward, dwte);
  expectGradientMatches("embed d/dpositions", wpe, g, forward, dwpe);
  std::vector<float> dwteOnly(V * C, 0);
  ops->embed(dwteOnly.data(), nullptr, g.data(), tokens, rows, T, C);  // sinusoidal/no positions: not trained
  EXPECT_EQ(dwteOnly, dwte) << "dwte must not depend on whether positions are trained";
}

TEST(Backward, CrossEntropyReturnsTheSumAndHonoursScaleMaskAndAliasing) {
  const int rows = 4, V = 5;
  const float scale = 0.25f;
  auto logits = randomVector(rows * V, 35, 3.0);
  const int targets[rows] = {2, 0, 4, 1};
  const uint8_t scored[rows] = {1, 0, 1, 1};
  const auto ops = makeReferenceBackwardOps();
  std::vector<float> dlogits(rows * V, 7.0f);  // = not +=: the 7s must go
  const double sum = ops->crossEntropy(dlogits.data(), logits.data(), targets, scored, rows, V, scale);
  double expected = 0;  // by hand: the sum of -log softmax over the scored rows
  for (int r : {0, 2, 3}) {
    double z = 0;
    for (int v = 0; v < V; ++v) z += std::exp((double)logits[r * V + v]);
    expected += std::log(z) - logits[r * V + targets[r]];
  }
  EXPECT_NEAR(sum, expected, 1e-9 * rows + 1e-6) << "returned sum of -log p over scored rows";
  for (int v = 0; v < V; ++v) EXPECT_EQ(dlogits[1 * V + v], 0.0f) << "unscored row has no gradient (column " << v << ")";
  // dlogits is the gradient of scale * sum.
  std::vector<float> scratch(rows * V), one = {1.0f};
  auto scaledLoss = [&] {
    return std::vector<float>{static_cast<float>(scale * ops->crossEntropy(scratch.data(), logits.data(), targets, scored, rows, V, scale))};
  };
  expectGradientMatches("crossEntropy d(scale * sum)/dlogits", logits, one, scaledLoss, dlogits, 1e-3);
  // In place (dlogits == logits) gives the same sum and the same gradient.
  auto inPlace = logits;
  const double sumInPlace = ops->crossEntropy(inPlace.data(), inPlace.data(), targets, scored, rows, V, scale);
  EXPECT_EQ(sumInPlace, sum) << "in-place sum";
  EXPECT_EQ(inPlace, dlogits) << "in-place gradient";
  // No mask: every row counts.
  std::vector<float> dall(rows * V);
  const double sumAll = ops->crossEntropy(dall.data(), logits.data(), targets, nullptr, rows, V, 1.0f);
  double z1 = 0;
  for (int v = 0; v < V; ++v) z1 += std::exp((double)logits[1 * V + v]);
  EXPECT_NEAR(sumAll, expected + std::log(z1) - logits[1 * V + targets[1]], 1e-6) << "unmasked sum";
  // The mean form is the sum form with scale 1 / scored rows.
  std::vector<float> dmean(rows * V);
  const double mean = ref::crossEntropyForwardBackward(dmean.data(), logits.data(), targets, scored, rows, V);
  EXPECT_NEAR(mean, sum / 3, 1e-9) << "mean loss";
  for (size_t i = 0; i < dmean.size(); ++i) EXPECT_NEAR(dmean[i], dlogits[i] / (3 * scale), 1e-7) << "mean gradient at " << i;
}

// --- attention in every variant: the reference forward, differentiated ---------------------

namespace {

// out (batch*T, H*D): the reference backend's forward over `batch` sequences of shape.T tokens,
// each with its own scratch cache of T rows. qkv (batch*T, qkvDim) is left as the forward leaves
// it (with RoPE: Q and K rotated in place).
std::vector<float> attentionForward(std::vector<float>& qkv, const AttentionShape& shape, int batch) {
  const auto backend = makeReferenceBackend();
  const int T = shape.T, C = shape.nHead * shape.headDim, width = shape.qkvDim();
  std::vector<float> out((size_t)batch * T * C), kCache((size_t)T * shape.kvDim()), vCache((size_t)T * shape.kvDim());
  for (int b = 0; b < batch; ++b)
    backend->attention(out.data() + (size_t)b * T * C, nullptr, nullptr, qkv.data() + (size_t)b * T * width, kCache.data(),
                       vCache.data(), shape);
  return out;
}

// The backward of `shape` with batch 2 against finite differences of the forward, with respect to
// Q | K | V as they were before any rotation.
void expectAttentionGradientMatches(const char* what, AttentionShape shape, uint64_t seed) {
  const int batch = 2;
  shape.pos0 = 0;
  shape.cacheRows = shape.T;
  const int rows = batch * shape.T, C = shape.nHead * shape.headDim;
  auto qkv = randomVector((size_t)rows * shape.qkvDim(), seed, 1.5), g = randomVector((size_t)rows * C, seed + 1);
  auto forward = [&] {
    auto copy = qkv;  // the forward rotates in place
    return attentionForward(copy, shape, batch);
  };
  auto left = qkv;
  attentionForward(left, shape, batch);
  std::vector<float> dqkv(qkv.size(), 0);
  makeReferenceBackwardOps()->attention(dqkv.data(), g.data(), left.data(), shape, batch);
  expectGradientMatches(what, qkv, g, forward, dqkv);
}

AttentionShape attentionShape(int T, int H, int D) {
  AttentionShape shape;
  shape.T = T;
  shape.nHead = H;
  shape.headDim = D;
  return shape;
}

}  // namespace

TEST(BackwardAttention, CausalMatchesFiniteDifferences) {
  expectAttentionGradientMatches("causal attention d/dqkv", attentionShape(5, 2, 4), 40);
}

TEST(BackwardAttention, BidirectionalMatchesFiniteDifferences) {
  auto shape = attentionShape(5, 2, 4);
  shape.causal = false;
  expectAttentionGradientMatches("bidirectional attention d/dqkv", shape, 42);
}

TEST(BackwardAttention, SlidingWindowMatchesFiniteDifferences) {
  auto shape = attentionShape(6, 2, 4);
  shape.window = 2;
  expectAttentionGradientMatches("causal window-2 attention d/dqkv", shape, 44);
  shape.causal = false;
  shape.window = 3;
  expectAttentionGradientMatches("bidirectional window-3 attention d/dqkv", shape, 46);
}

TEST(BackwardAttention, GroupedQueryMatchesFiniteDifferences) {
  auto shape = attentionShape(5, 4, 4);
  shape.nKvHead = 2;
  expectAttentionGradientMatches("GQA (H=4, Hkv=2) attention d/dqkv", shape, 48);
}

TEST(BackwardAttention, MultiQueryMatchesFiniteDifferences) {
  auto shape = attentionShape(5, 4, 4);
  shape.nKvHead = 1;
  expectAttentionGradientMatches("MQA (H=4, Hkv=1) attention d/dqkv", shape, 50);
}

TEST(BackwardAttention, RopeMatchesFiniteDifferences) {
  auto shape = attentionShape(5, 2, 4);
  shape.ropeBase = 10000;
  expectAttentionGradientMatches("RoPE (base 10000) attention d/dqkv", shape, 52);
  shape.ropeBase = 3;  // every pair turns by a large angle
  expectAttentionGradientMatches("RoPE (base 3) attention d/dqkv", shape, 54);
  // Llama 3 scaling, D 4, base 3: wavelengths 6.3 and 10.9 with original context 16 and frequency
  // factors 1 and 2 put pair 0 in the kept band (< 8) and pair 1 in the blended one.
  const std::vector<double> scaled = ropeInverseFrequencies(4, 3.0, RopeScaling{8.0, 1.0, 2.0, 16.0});
  ASSERT_EQ(scaled[0], 1.0);
  ASSERT_LT(scaled[1], std::pow(3.0, -0.5) * 0.9);
  shape.ropeFrequencies = scaled.data();
  expectAttentionGradientMatches("RoPE (base 3, Llama 3 scaled) attention d/dqkv", shape, 55);
}

TEST(BackwardAttention, AlibiMatchesFiniteDifferences) {
  auto shape = attentionShape(5, 4, 4);
  const auto slopes = alibiSlopes(4);
  shape.alibiSlopes = slopes.data();
  expectAttentionGradientMatches("ALiBi causal attention d/dqkv", shape, 56);
  shape.causal = false;
  expectAttentionGradientMatches("ALiBi bidirectional attention d/dqkv", shape, 58);
}

TEST(BackwardAttention, RopeWithGroupedQueryAndWindowMatchesFiniteDifferences) {
  auto shape = attentionShape(6, 4, 4);
  shape.nKvHead = 2;
  shape.window = 3;
  shape.ropeBase = 10;
  expectAttentionGradientMatches("RoPE + GQA + window attention d/dqkv", shape, 60);
  // Everything at once, bidirectional, with one kv head.
  const auto slopes = alibiSlopes(4);
  shape.nKvHead = 1;
  shape.causal = false;
  shape.alibiSlopes = slopes.data();
  expectAttentionGradientMatches("RoPE + MQA + window + ALiBi bidirectional attention d/dqkv", shape, 62);
}

TEST(BackwardAttention, NeedsNoCache) {
  auto shape = attentionShape(2, 1, 2);
  shape.pos0 = 1;
  std::vector<float> dqkv(2 * shape.qkvDim()), dout(2 * 2), qkv(dqkv.size());
  EXPECT_THROW(makeReferenceBackwardOps()->attention(dqkv.data(), dout.data(), qkv.data(), shape, 1), Error);
}

// --- the BackwardOps object is the free functions, and accumulates -------------------------

namespace {

// Runs `call` twice on gradient buffers: once from random starting values (through the ops
// object) and once from the same values through the free function; they must agree exactly, and
// the ops object's result must equal start + its result from zero (accumulation).
void expectSameAndAccumulates(const char* what, std::vector<std::vector<float>*> grads,
                              const std::function<void()>& viaOps, const std::function<void()>& viaFree) {
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
    for (size_t j = 0; j < grads[i]->size(); ++j)
      maxDiff = std::max(maxDiff, std::abs((double)ops[i][j] - start[i][j] - (*grads[i])[j]));
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
  expectSameAndAccumulates("embed", {&a, &b}, [&] { ops->embed(a.data(), b.data(), dy.data(), tokens, rows, T, C); },
                           [&] { ref::embedBackward(a.data(), b.data(), dy.data(), tokens, rows, T, C); });
  a.resize(rows * C), b.resize(C), c.resize(C);
  expectSameAndAccumulates("layerNorm", {&a, &b, &c},
                           [&] { ops->layerNorm(a.data(), b.data(), c.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); },
                           [&] { ref::layerNormBackward(a.data(), b.data(), c.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); });
  expectSameAndAccumulates("rmsNorm", {&a, &b}, [&] { ops->rmsNorm(a.data(), b.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); },
                           [&] { ref::rmsNormBackward(a.data(), b.data(), dy.data(), x.data(), w.data(), rows, C, 1e-5f); });
  a.resize(rows * K), b.resize(K * N), c.resize(N);
  expectSameAndAccumulates("matmul", {&a, &b, &c},
                           [&] { ops->matmul(a.data(), b.data(), c.data(), dyN.data(), x.data(), mw.data(), rows, K, N); },
                           [&] { ref::matmulBackward(a.data(), b.data(), c.data(), dyN.data(), x.data(), mw.data(), rows, K, N); });
  expectSameAndAccumulates("matmulTransposed", {&a, &b},
                           [&] { ops->matmulTransposed(a.data(), b.data(), dyN.data(), x.data(), mw.data(), rows, K, N); },
                           [&] { ref::matmulTransposedBackward(a.data(), b.data(), dyN.data(), x.data(), mw.data(), rows, K, N); });
  a.resize(rows * C), b.resize(rows * C);
  for (Activation kind : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu})
    expectSameAndAccumulates("activation", {&a}, [&] { ops->activation(a.data(), dy.data(), x.data(), a.size(), kind); },
                             [&] { ref::activationBackward(a.data(), dy.data(), x.data(), a.size(), kind); });
  expectSameAndAccumulates("swiglu", {&a, &b}, [&] { ops->swiglu(a.data(), b.data(), dy.data(), x.data(), dy.data(), a.size()); },
                           [&] { ref::swigluBackward(a.data(), b.data(), dy.data(), x.data(), dy.data(), a.size()); });
  auto shape = attentionShape(T, 2, 2);
  shape.nKvHead = 1;
  shape.ropeBase = 10000;
  auto qkv = randomVector(rows * shape.qkvDim(), 85);
  a.resize(qkv.size());
  expectSameAndAccumulates("attention", {&a}, [&] { ops->attention(a.data(), dy.data(), qkv.data(), shape, rows / T); },
                           [&] { ref::attentionBackward(a.data(), dy.data(), qkv.data(), shape, rows / T); });
}

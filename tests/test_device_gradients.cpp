// Every device's BackwardOps against central finite differences of the reference forward: each
// op's analytic gradient (run on the device's memory, from zeroed gradients) against
// (L(x + h e_i) - L(x - h e_i)) / 2h of L = sum(g * op(x)) for a random g, over every input
// element; attention in every variant of AttentionShape, over a batch of two sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/nn/ops_reference.h"
#include "model/nn/positional.h"
#include "model/train/backward.h"
#include "tests/device_cases.h"

using namespace tscope;
using namespace tscope::testing;

namespace {

// The device's gradients: `op` on device copies of `inputs` and of zeroed outputs of `sizes`.
std::vector<std::vector<float>> gradients(Device& device, const std::vector<std::vector<float>>& inputs, const std::vector<size_t>& sizes,
                                          const BackwardOp& op) {
  std::vector<std::vector<float>> zeros;
  for (size_t n : sizes) zeros.emplace_back(n, 0.0f);
  return runBackward(device, inputs, zeros, op);
}

void rmsNormMatchesFiniteDifferences(Device& device, Device&) {
  const int rows = 4, C = 6;
  auto x = randomVector(rows * C, 21, 2.0), w = randomVector(C, 22), g = randomVector(rows * C, 23);
  auto forward = [&] {
    std::vector<float> out(rows * C);  // (rows, C)
    ref::rmsNorm(out.data(), x.data(), w.data(), rows, C, 1e-5f);
    return out;
  };
  const auto d = gradients(device, {g, x, w}, {rows * C, C}, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
    ops.rmsNorm(out[0], out[1], in[0], in[1], in[2], rows, C, 1e-5f);
  });
  expectGradientMatches("rmsNorm d/dx", x, g, forward, d[0]);
  expectGradientMatches("rmsNorm d/dweight", w, g, forward, d[1]);
}

void activationsMatchFiniteDifferences(Device& device, Device&) {
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
    const auto d = gradients(device, {g, x}, {x.size()}, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
      ops.activation(out[0], in[0], in[1], x.size(), kind);
    });
    expectGradientMatches(what + " d/dx", x, g, forward, d[0], 1e-3);
  }
  // ReLU's derivative is 0 at exactly 0 (and below).
  const auto d = gradients(device, {{1.0f, 1.0f}, {0.0f, -1.0f}}, {2}, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
    ops.activation(out[0], in[0], in[1], 2, Activation::Relu);
  });
  EXPECT_EQ(d[0][0], 0.0f) << "relu'(0)";
  EXPECT_EQ(d[0][1], 0.0f) << "relu'(-1)";
  EXPECT_THROW(
      gradients(device, {{1.0f}, {1.0f}}, {1},
                [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.activation(out[0], in[0], in[1], 1, Activation::SwiGlu); }),
      Error);
}

void swigluMatchesFiniteDifferences(Device& device, Device&) {
  const size_t n = 30;
  auto gate = randomVector(n, 26, 4.0), value = randomVector(n, 27, 2.0), g = randomVector(n, 28);
  auto forward = [&] {
    auto out = value;  // (n) = silu(gate) * value
    ref::swiglu(out.data(), gate.data(), n);
    return out;
  };
  const auto d = gradients(device, {g, gate, value}, {n, n},
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.swiglu(out[0], out[1], in[0], in[1], in[2], n); });
  expectGradientMatches("swiglu d/dgate", gate, g, forward, d[0], 1e-3);
  expectGradientMatches("swiglu d/dvalue", value, g, forward, d[1], 1e-3);
}

void matmulSkipsTheGradientsNotWanted(Device& device, Device&) {
  const int rows = 3, K = 4, N = 5;
  auto x = randomVector(rows * K, 29), w = randomVector(K * N, 30), g = randomVector(rows * N, 31);
  auto forward = [&] {
    std::vector<float> out(rows * N);  // (rows, N)
    ref::matmul(out.data(), x.data(), w.data(), nullptr, rows, K, N);
    return out;
  };
  const auto d = gradients(device, {g, x, w}, {K * N}, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
    ops.matmul(nullptr, out[0], nullptr, in[0], in[1], in[2], rows, K, N);
  });
  expectGradientMatches("matmul (no din, no dbias) d/dweight", w, g, forward, d[0]);
}

void embeddingOfABatchWrapsPositionsPerSequence(Device& device, Device&) {
  const int T = 3, rows = 2 * T, C = 2, V = 5;
  const int tokens[rows] = {4, 1, 4, 0, 1, 2};
  auto wte = randomVector(V * C, 32), wpe = randomVector(T * C, 33), g = randomVector(rows * C, 34);
  auto forward = [&] {
    std::vector<float> out(rows * C);  // (rows, C): each sequence starts at position 0
    for (int b = 0; b < rows / T; ++b) ref::embed(out.data() + b * T * C, tokens + b * T, wte.data(), wpe.data(), T, C, 0);
    return out;
  };
  const auto d = gradients(device, {g}, {V * C, T * C},
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.embed(out[0], out[1], in[0], tokens, rows, T, C); });
  expectGradientMatches("embed d/dwte", wte, g, forward, d[0]);
  expectGradientMatches("embed d/dpositions", wpe, g, forward, d[1]);
  const auto only = gradients(device, {g}, {V * C}, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
    ops.embed(out[0], nullptr, in[0], tokens, rows, T, C);  // sinusoidal/no positions: not trained
  });
  EXPECT_EQ(only[0], d[0]) << "dwte must not depend on whether positions are trained";
}

// The sum of -log softmax over rows r of logits (V per row), by hand in double.
double lossByHand(const std::vector<float>& logits, const int* targets, std::initializer_list<int> rowsScored, int V) {
  double sum = 0;
  for (int r : rowsScored) {
    double z = 0;
    for (int v = 0; v < V; ++v) z += std::exp((double)logits[r * V + v]);
    sum += std::log(z) - logits[r * V + targets[r]];
  }
  return sum;
}

void crossEntropyReturnsTheSumAndHonoursScaleMaskAndAliasing(Device& device, Device& reference) {
  const int rows = 4, V = 5;
  const float scale = 0.25f;
  auto logits = randomVector(rows * V, 35, 3.0);
  const int targets[rows] = {2, 0, 4, 1};
  const uint8_t scored[rows] = {1, 0, 1, 1};
  Backend& memory = device.forward();
  BackwardOps& ops = device.backward();
  const bool isReference = device.name() == reference.name();
  // The loss and the gradient on the device; the gradient buffer starts at 7s (= not +=: they must go).
  auto run = [&](const std::vector<float>& at, const uint8_t* mask, float s, std::vector<float>* dlogits) {
    Buffer in = toDevice(memory, at), out = toDevice(memory, std::vector<float>(at.size(), 7.0f));
    const double sum = ops.crossEntropy(out.data(), in.data(), targets, mask, rows, V, s);
    if (dlogits) *dlogits = toHost(memory, out);
    return sum;
  };
  std::vector<float> dlogits;
  const double sum = run(logits, scored, scale, &dlogits);
  const double expected = lossByHand(logits, targets, {0, 2, 3}, V);
  // The reference's double sum within 1e-9 per row; another device's float sum within its loss tolerance.
  const double sumTolerance = isReference ? 1e-9 * rows + 1e-6 : std::max(1e-9 * rows + 1e-6, toleranceOf(device).loss * expected);
  EXPECT_NEAR(sum, expected, sumTolerance) << "returned sum of -log p over scored rows";
  for (int v = 0; v < V; ++v) EXPECT_EQ(dlogits[1 * V + v], 0.0f) << "unscored row has no gradient (column " << v << ")";
  // dlogits is the gradient of scale * sum.
  std::vector<float> one = {1.0f};
  auto scaledLoss = [&] { return std::vector<float>{static_cast<float>(scale * run(logits, scored, scale, nullptr))}; };
  expectGradientMatches("crossEntropy d(scale * sum)/dlogits", logits, one, scaledLoss, dlogits, 1e-3);
  // In place (dlogits == logits) gives the same sum and the same gradient (bit for bit on the
  // reference, within the device's tolerance elsewhere).
  Buffer inPlace = toDevice(memory, logits);
  const double sumInPlace = ops.crossEntropy(inPlace.data(), inPlace.data(), targets, scored, rows, V, scale);
  EXPECT_EQ(sumInPlace, sum) << "in-place sum";
  if (isReference) {
    EXPECT_EQ(toHost(memory, inPlace), dlogits) << "in-place gradient";
  } else {
    const auto difference = compare(toHost(memory, inPlace), dlogits);
    EXPECT_LT(difference.relative(), toleranceOf(device).outputs) << "in-place gradient: " << difference.describe();
  }
  // No mask: every row counts.
  const double sumAll = run(logits, nullptr, 1.0f, nullptr);
  EXPECT_NEAR(sumAll, expected + lossByHand(logits, targets, {1}, V), isReference ? 1e-6 : std::max(1e-6, toleranceOf(device).loss * sumAll))
      << "unmasked sum";
}

// out (batch*T, H*D): the reference backend's forward over `batch` sequences of shape.T tokens,
// each with its own scratch cache of T rows. qkv (batch*T, qkvDim) is left as the forward leaves
// it (with RoPE: Q and K rotated in place).
std::vector<float> attentionForward(Backend& backend, std::vector<float>& qkv, const AttentionShape& shape, int batch) {
  const int T = shape.T, C = shape.nHead * shape.headDim, width = shape.qkvDim();
  std::vector<float> out((size_t)batch * T * C), kCache((size_t)T * shape.kvDim()), vCache((size_t)T * shape.kvDim());
  for (int b = 0; b < batch; ++b)
    backend.attention(out.data() + (size_t)b * T * C, nullptr, nullptr, qkv.data() + (size_t)b * T * width, kCache.data(), vCache.data(), shape);
  return out;
}

// The device's backward of `shape` with batch 2 against finite differences of the reference
// forward, with respect to Q | K | V as they were before any rotation.
void expectAttentionGradientMatches(Device& device, Device& reference, const char* what, AttentionShape shape, uint64_t seed) {
  const int batch = 2;
  shape.pos0 = 0;
  shape.cacheRows = shape.T;
  const int rows = batch * shape.T, C = shape.nHead * shape.headDim;
  auto qkv = randomVector((size_t)rows * shape.qkvDim(), seed, 1.5), g = randomVector((size_t)rows * C, seed + 1);
  auto forward = [&] {
    auto copy = qkv;  // the forward rotates in place
    return attentionForward(reference.forward(), copy, shape, batch);
  };
  auto left = qkv;
  attentionForward(reference.forward(), left, shape, batch);
  const auto d = gradients(device, {g, left}, {qkv.size()},
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.attention(out[0], in[0], in[1], shape, batch); });
  expectGradientMatches(what, qkv, g, forward, d[0]);
}

void attentionCausal(Device& device, Device& reference) {
  expectAttentionGradientMatches(device, reference, "causal attention d/dqkv", attentionShape(5, 2, 4), 40);
}

void attentionBidirectional(Device& device, Device& reference) {
  auto shape = attentionShape(5, 2, 4);
  shape.causal = false;
  expectAttentionGradientMatches(device, reference, "bidirectional attention d/dqkv", shape, 42);
}

void attentionSlidingWindow(Device& device, Device& reference) {
  auto shape = attentionShape(6, 2, 4);
  shape.window = 2;
  expectAttentionGradientMatches(device, reference, "causal window-2 attention d/dqkv", shape, 44);
  shape.causal = false;
  shape.window = 3;
  expectAttentionGradientMatches(device, reference, "bidirectional window-3 attention d/dqkv", shape, 46);
}

void attentionGroupedQuery(Device& device, Device& reference) {
  auto shape = attentionShape(5, 4, 4);
  shape.nKvHead = 2;
  expectAttentionGradientMatches(device, reference, "GQA (H=4, Hkv=2) attention d/dqkv", shape, 48);
}

void attentionMultiQuery(Device& device, Device& reference) {
  auto shape = attentionShape(5, 4, 4);
  shape.nKvHead = 1;
  expectAttentionGradientMatches(device, reference, "MQA (H=4, Hkv=1) attention d/dqkv", shape, 50);
}

void attentionRope(Device& device, Device& reference) {
  auto shape = attentionShape(5, 2, 4);
  shape.ropeBase = 10000;
  expectAttentionGradientMatches(device, reference, "RoPE (base 10000) attention d/dqkv", shape, 52);
  shape.ropeBase = 3;  // every pair turns by a large angle
  expectAttentionGradientMatches(device, reference, "RoPE (base 3) attention d/dqkv", shape, 54);
  // Llama 3 scaling, D 4, base 3: wavelengths 6.3 and 10.9 with original context 16 and frequency
  // factors 1 and 2 put pair 0 in the kept band (< 8) and pair 1 in the blended one.
  const std::vector<double> scaled = ropeInverseFrequencies(4, 3.0, RopeScaling{8.0, 1.0, 2.0, 16.0});
  ASSERT_EQ(scaled[0], 1.0);
  ASSERT_LT(scaled[1], std::pow(3.0, -0.5) * 0.9);
  shape.ropeFrequencies = scaled.data();
  expectAttentionGradientMatches(device, reference, "RoPE (base 3, Llama 3 scaled) attention d/dqkv", shape, 55);
}

void attentionAlibi(Device& device, Device& reference) {
  auto shape = attentionShape(5, 4, 4);
  const auto slopes = alibiSlopes(4);
  shape.alibiSlopes = slopes.data();
  expectAttentionGradientMatches(device, reference, "ALiBi causal attention d/dqkv", shape, 56);
  shape.causal = false;
  expectAttentionGradientMatches(device, reference, "ALiBi bidirectional attention d/dqkv", shape, 58);
}

void attentionRopeWithGroupedQueryAndWindow(Device& device, Device& reference) {
  auto shape = attentionShape(6, 4, 4);
  shape.nKvHead = 2;
  shape.window = 3;
  shape.ropeBase = 10;
  expectAttentionGradientMatches(device, reference, "RoPE + GQA + window attention d/dqkv", shape, 60);
  // Everything at once, bidirectional, with one kv head.
  const auto slopes = alibiSlopes(4);
  shape.nKvHead = 1;
  shape.causal = false;
  shape.alibiSlopes = slopes.data();
  expectAttentionGradientMatches(device, reference, "RoPE + MQA + window + ALiBi bidirectional attention d/dqkv", shape, 62);
}

void attentionNeedsNoCache(Device& device, Device&) {
  auto shape = attentionShape(2, 1, 2);
  shape.pos0 = 1;
  EXPECT_THROW(gradients(device, {std::vector<float>(2 * 2), std::vector<float>(2 * shape.qkvDim())}, {size_t(2 * shape.qkvDim())},
                         [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.attention(out[0], in[0], in[1], shape, 1); }),
               Error);
}

}  // namespace

std::vector<DeviceCase> tscope::testing::gradientCases() {
  return {
      {"GradientRmsNormMatchesFiniteDifferences", rmsNormMatchesFiniteDifferences},
      {"GradientActivationsMatchFiniteDifferences", activationsMatchFiniteDifferences},
      {"GradientSwigluMatchesFiniteDifferences", swigluMatchesFiniteDifferences},
      {"GradientMatmulSkipsTheGradientsNotWanted", matmulSkipsTheGradientsNotWanted},
      {"GradientEmbeddingOfABatchWrapsPositionsPerSequence", embeddingOfABatchWrapsPositionsPerSequence},
      {"GradientCrossEntropyReturnsTheSumAndHonoursScaleMaskAndAliasing", crossEntropyReturnsTheSumAndHonoursScaleMaskAndAliasing},
      {"GradientAttentionCausalMatchesFiniteDifferences", attentionCausal},
      {"GradientAttentionBidirectionalMatchesFiniteDifferences", attentionBidirectional},
      {"GradientAttentionSlidingWindowMatchesFiniteDifferences", attentionSlidingWindow},
      {"GradientAttentionGroupedQueryMatchesFiniteDifferences", attentionGroupedQuery},
      {"GradientAttentionMultiQueryMatchesFiniteDifferences", attentionMultiQuery},
      {"GradientAttentionRopeMatchesFiniteDifferences", attentionRope},
      {"GradientAttentionAlibiMatchesFiniteDifferences", attentionAlibi},
      {"GradientAttentionRopeWithGroupedQueryAndWindowMatchesFiniteDifferences", attentionRopeWithGroupedQueryAndWindow},
      {"GradientAttentionNeedsNoCache", attentionNeedsNoCache},
  };
}

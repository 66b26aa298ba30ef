// The Eigen BackwardOps (backward_cpu.cpp) against the plain-loop reference (backward_reference.cpp):
// every op on random inputs, every attention variant, with gradients pre-filled with noise so the
// += contract is checked too; then bitwise repeatability for a fixed thread count, and 1 vs 2
// threads. Errors are max |fast - reference| / max |reference| over each output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "model/train/backward.h"
#include "model/core/error.h"
#include "model/nn/positional.h"
#include "tests/test_backward_helpers.h"
#include "test_helpers.h"

using namespace tscope;
using tscope::testing::attentionCases;
using tscope::testing::compare;
using tscope::testing::forwardQkv;
using tscope::testing::randomVector;

namespace {

constexpr double kTolerance = 1e-5;  // normalised max error of every output

// Runs `op` on the reference and on the fast ops, each on its own copy of the (pre-filled)
// outputs, and expects every output to agree within tolerance.
void expectSameOutputs(const std::string& what, const std::vector<std::vector<float>>& initialOutputs,
                       const std::function<void(BackwardOps&, std::vector<std::vector<float>>&)>& op, int threads = 2,
                       double tolerance = kTolerance) {
  auto reference = makeReferenceBackwardOps();
  auto fast = makeCpuBackwardOps(threads);
  std::vector<std::vector<float>> expected = initialOutputs, actual = initialOutputs;
  op(*reference, expected);
  op(*fast, actual);
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto difference = compare(actual[i], expected[i]);
    EXPECT_LT(difference.relative(), tolerance) << what << ", output " << i << ": " << difference.describe() << " ("
                                                << std::scientific << difference.relative() << ")";
  }
}

}  // namespace

TEST(BackwardCpu, EmbedMatchesReference) {
  const int B = 2, T = 37, C = 70, V = 11, rows = B * T;
  std::vector<int> tokens(rows);
  Rng rng(1);
  for (auto& t : tokens) t = static_cast<int>(rng.uniform() * V);  // V << rows: tokens repeat
  const auto dout = randomVector(static_cast<size_t>(rows) * C, 2);
  for (bool positions : {true, false}) {
    expectSameOutputs(positions ? "embed with positions" : "embed without positions",
                      {randomVector(static_cast<size_t>(V) * C, 3, 0.1), randomVector(static_cast<size_t>(T + 5) * C, 4, 0.1)},
                      [&](BackwardOps& ops, auto& out) {
                        ops.embed(out[0].data(), positions ? out[1].data() : nullptr, dout.data(), tokens.data(), rows, T, C);
                      });
  }
}

TEST(BackwardCpu, NormsMatchReference) {
  const int rows = 150, C = 96;
  const auto in = randomVector(static_cast<size_t>(rows) * C, 5, 2.0), dout = randomVector(static_cast<size_t>(rows) * C, 6);
  auto weight = randomVector(C, 7);
  for (auto& w : weight) w += 1.0f;
  const std::vector<std::vector<float>> outputs = {randomVector(static_cast<size_t>(rows) * C, 8, 0.1), randomVector(C, 9, 0.1),
                                                   randomVector(C, 10, 0.1)};
  expectSameOutputs("layerNorm", outputs, [&](BackwardOps& ops, auto& out) {
    ops.layerNorm(out[0].data(), out[1].data(), out[2].data(), dout.data(), in.data(), weight.data(), rows, C, 1e-5f);
  });
  expectSameOutputs("layerNorm without bias", outputs, [&](BackwardOps& ops, auto& out) {
    ops.layerNorm(out[0].data(), out[1].data(), nullptr, dout.data(), in.data(), weight.data(), rows, C, 1e-5f);
  });
  expectSameOutputs("rmsNorm", outputs, [&](BackwardOps& ops, auto& out) {
    ops.rmsNorm(out[0].data(), out[1].data(), dout.data(), in.data(), weight.data(), rows, C, 1e-6f);
  });
}

TEST(BackwardCpu, MatmulsMatchReference) {
  const int rows = 150, K = 70, N = 90;  // large enough to be split across threads
  const auto in = randomVector(static_cast<size_t>(rows) * K, 11), dout = randomVector(static_cast<size_t>(rows) * N, 12);
  const auto weight = randomVector(static_cast<size_t>(K) * N, 13);
  const std::vector<std::vector<float>> outputs = {randomVector(static_cast<size_t>(rows) * K, 14, 0.1),
                                                   randomVector(static_cast<size_t>(K) * N, 15, 0.1), randomVector(N, 16, 0.1)};
  expectSameOutputs("matmul", outputs, [&](BackwardOps& ops, auto& out) {
    ops.matmul(out[0].data(), out[1].data(), out[2].data(), dout.data(), in.data(), weight.data(), rows, K, N);
  });
  expectSameOutputs("matmul without din and dbias", outputs, [&](BackwardOps& ops, auto& out) {
    ops.matmul(nullptr, out[1].data(), nullptr, dout.data(), in.data(), weight.data(), rows, K, N);
  });
  expectSameOutputs("matmul, 3 rows (one thread)", outputs, [&](BackwardOps& ops, auto& out) {
    ops.matmul(out[0].data(), out[1].data(), out[2].data(), dout.data(), in.data(), weight.data(), 3, K, N);
  });
  expectSameOutputs("matmulTransposed", outputs, [&](BackwardOps& ops, auto& out) {
    ops.matmulTransposed(out[0].data(), out[1].data(), dout.data(), in.data(), weight.data(), rows, K, N);  // weight read as (N, K)
  });
}

TEST(BackwardCpu, ActivationsAndSwigluMatchReference) {
  const size_t n = 20000;  // several chunks, split across threads, and a ragged last chunk
  const auto in = randomVector(n, 17, 4.0), dout = randomVector(n, 18), value = randomVector(n, 19, 2.0);
  for (Activation activation : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu}) {
    expectSameOutputs(std::string("activation ") + toString(activation), {randomVector(n, 20, 0.1)}, [&](BackwardOps& ops, auto& out) {
      ops.activation(out[0].data(), dout.data(), in.data(), n, activation);
    });
  }
  expectSameOutputs("swiglu", {randomVector(n, 21, 0.1), randomVector(n, 22, 0.1)}, [&](BackwardOps& ops, auto& out) {
    ops.swiglu(out[0].data(), out[1].data(), dout.data(), in.data(), value.data(), n);
  });
  std::vector<float> din(n);
  EXPECT_THROW(makeCpuBackwardOps(2)->activation(din.data(), dout.data(), in.data(), n, Activation::SwiGlu), Error);
}

TEST(BackwardCpu, AttentionMatchesReferenceInEveryVariant) {
  // T = 45 and 70 are not multiples of the 32-row query tile; windows cross tile edges.
  const int batch = 2;
  for (const auto& c : attentionCases()) {
    const auto slopes = alibiSlopes(c.H);
    const AttentionShape shape = c.shape(slopes);
    const size_t qkvSize = static_cast<size_t>(batch) * c.T * shape.qkvDim();
    const auto qkv = forwardQkv(shape, batch, 23);
    const auto dout = randomVector(static_cast<size_t>(batch) * c.T * c.H * c.D, 24);
    expectSameOutputs(std::string("attention ") + c.name, {randomVector(qkvSize, 25, 0.01)},
                      [&](BackwardOps& ops, auto& out) { ops.attention(out[0].data(), dout.data(), qkv.data(), shape, batch); });
  }
}

TEST(BackwardCpu, CrossEntropyMatchesReference) {
  const int rows = 40, V = 300;
  const auto logits = randomVector(static_cast<size_t>(rows) * V, 26, 5.0);
  std::vector<int> targets(rows);
  std::vector<uint8_t> scored(rows);
  Rng rng(27);
  for (int r = 0; r < rows; ++r) {
    targets[r] = static_cast<int>(rng.uniform() * V);
    scored[r] = r % 3 != 1;
  }
  auto reference = makeReferenceBackwardOps();
  auto fast = makeCpuBackwardOps(2);
  for (const uint8_t* mask : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(scored.data())}) {
    std::vector<float> expected(logits.size(), 7.0f), actual(logits.size(), 7.0f), inPlace = logits;
    const double expectedLoss = reference->crossEntropy(expected.data(), logits.data(), targets.data(), mask, rows, V, 0.05f);
    const double loss = fast->crossEntropy(actual.data(), logits.data(), targets.data(), mask, rows, V, 0.05f);
    const double inPlaceLoss = fast->crossEntropy(inPlace.data(), inPlace.data(), targets.data(), mask, rows, V, 0.05f);
    const char* what = mask ? "with a mask" : "every row scored";
    EXPECT_NEAR(loss, expectedLoss, 1e-6 * expectedLoss) << what;
    EXPECT_EQ(inPlaceLoss, loss) << what << ": in place";
    const auto difference = compare(actual, expected), inPlaceDifference = compare(inPlace, expected);
    EXPECT_LT(difference.relative(), kTolerance) << what << ": " << difference.describe();
    EXPECT_LT(inPlaceDifference.relative(), kTolerance) << what << ", in place: " << inPlaceDifference.describe();
  }
  std::vector<float> d(logits.size());
  targets[0] = V;
  EXPECT_THROW(fast->crossEntropy(d.data(), logits.data(), targets.data(), nullptr, rows, V, 1.0f), Error);
}

namespace {

// Arrays that start `shift` floats into their storage, so a run can place every input and output
// at a different alignment and show the results do not depend on it.
struct ShiftedArrays {
  int shift = 0;
  std::vector<std::vector<float>> storage;
  float* add(const std::vector<float>& values) {
    auto& array = storage.emplace_back(values.size() + shift, 0.0f);
    std::copy(values.begin(), values.end(), array.begin() + shift);
    return array.data() + shift;
  }
  float* zeros(size_t n) { return add(std::vector<float>(n, 0.0f)); }
};

// One pass of every op on inputs big enough that each one splits across threads; returns every
// output (the loss as the last one-element vector).
std::vector<std::vector<float>> runEveryOp(BackwardOps& ops, int shift) {
  const int B = 3, T = 64, C = 96, F = 256, V = 500, rows = B * T;
  ShiftedArrays in{shift, {}}, out{shift, {}};
  const float* x = in.add(randomVector(static_cast<size_t>(rows) * F, 30, 2.0));
  const float* g = in.add(randomVector(static_cast<size_t>(rows) * V, 31));  // F < V
  const float* w = in.add(randomVector(static_cast<size_t>(F) * V, 32));
  const size_t n = static_cast<size_t>(rows) * F;
  std::vector<int> tokens(rows);
  for (int r = 0; r < rows; ++r) tokens[r] = (r * 7) % 13;
  ops.embed(out.zeros(13 * C), out.zeros(static_cast<size_t>(T) * C), g, tokens.data(), rows, T, C);
  ops.layerNorm(out.zeros(static_cast<size_t>(rows) * C), out.zeros(C), out.zeros(C), g, x, w, rows, C, 1e-5f);
  ops.rmsNorm(out.zeros(static_cast<size_t>(rows) * C), out.zeros(C), g, x, w, rows, C, 1e-5f);
  ops.matmul(out.zeros(static_cast<size_t>(rows) * C), out.zeros(static_cast<size_t>(C) * F), out.zeros(F), g, x, w, rows, C, F);
  ops.matmulTransposed(out.zeros(static_cast<size_t>(rows) * C), out.zeros(static_cast<size_t>(V) * C), g, x, w, rows, C, V);
  ops.activation(out.zeros(n), g, x, n, Activation::GeluTanh);
  ops.activation(out.zeros(n), g, x, n, Activation::GeluErf);
  ops.swiglu(out.zeros(n), out.zeros(n), g, x, w, n);
  AttentionShape shape;
  shape.T = T;
  shape.nHead = 4;
  shape.nKvHead = 2;
  shape.headDim = 16;
  shape.cacheRows = T;
  shape.ropeBase = 10000;
  const auto qkvValues = forwardQkv(shape, B, 33);
  const float* qkv = in.add(qkvValues);
  ops.attention(out.zeros(qkvValues.size()), g, qkv, shape, B);
  std::vector<int> targets(rows);
  for (int r = 0; r < rows; ++r) targets[r] = (r * 31) % V;
  const float* logits = in.add(randomVector(static_cast<size_t>(rows) * V, 34, 3.0));
  const double loss = ops.crossEntropy(out.zeros(static_cast<size_t>(rows) * V), logits, targets.data(), nullptr, rows, V, 1.0f / rows);
  std::vector<std::vector<float>> results;
  for (const auto& array : out.storage) results.emplace_back(array.begin() + shift, array.end());
  results.push_back({static_cast<float>(loss)});
  return results;
}

}  // namespace

TEST(BackwardCpu, RepeatedRunsAreBitwiseIdentical) {
  // Same thread count, so the same bits, also when every array lies at another alignment.
  auto ops = makeCpuBackwardOps(2);
  const auto first = runEveryOp(*ops, 0);
  for (int shift : {0, 1, 3}) {
    const auto again = runEveryOp(*ops, shift);
    ASSERT_EQ(first.size(), again.size());
    for (size_t i = 0; i < first.size(); ++i) {
      ASSERT_EQ(first[i].size(), again[i].size());
      const auto difference = compare(again[i], first[i]);
      EXPECT_EQ(std::memcmp(first[i].data(), again[i].data(), first[i].size() * sizeof(float)), 0)
          << "output " << i << " differs between two runs with 2 threads (arrays shifted by " << shift << " floats): "
          << difference.describe();
    }
  }
}

TEST(BackwardCpu, OneAndTwoThreadsAgree) {
  auto one = makeCpuBackwardOps(1);
  auto two = makeCpuBackwardOps(2);
  EXPECT_EQ(one->threadCount(), 1);
  EXPECT_EQ(two->threadCount(), 2);
  const auto a = runEveryOp(*one, 0), b = runEveryOp(*two, 0);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto difference = compare(b[i], a[i]);
    EXPECT_LT(difference.relative(), kTolerance) << "output " << i << ", 2 threads against 1: " << difference.describe();
  }
}

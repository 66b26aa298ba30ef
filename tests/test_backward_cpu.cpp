// What only the Eigen BackwardOps (backward_cpu.cpp) has, its threads: bitwise repeatability for a
// fixed thread count (at any alignment), and 1 vs 2 threads. Errors are max |a - b| / max |b| over
// each output. Every op against the plain-loop reference, on every device, is
// tests/test_device_backward.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "model/train/backward.h"
#include "model/nn/positional.h"
#include "tests/test_backward_helpers.h"
#include "test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::forwardQkv;
using tscope::testing::randomVector;

namespace {

constexpr double kTolerance = 1e-5;  // normalised max error of every output

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
          << "output " << i << " differs between two runs with 2 threads (arrays shifted by " << shift << " floats): " << difference.describe();
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

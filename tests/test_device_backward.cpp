// The backward ops of every device (backward_cpu.cpp's Eigen ops, kernels/cuda_backward.h's CUDA
// ops) against the plain-loop reference (backward_reference.cpp): every op on random inputs, every
// attention variant, cross-entropy also in place, with the gradients pre-filled with noise so the
// += contract is checked too. Each case runs the shapes of the old per-backend copies (the CPU's,
// and CUDA's wider ones: more than one 256-column tile, ragged chunks) on every device, within that
// device's tolerance (toleranceOf). Errors are max |device - reference| / max |reference|.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/nn/positional.h"
#include "model/train/backward.h"
#include "tests/device_cases.h"

using namespace tscope;
using namespace tscope::testing;

namespace {

void embedMatchesReferenceAndRepeatsBitwise(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  // C = 70 (the CPU's shape) and 300 (two column tiles); V << rows: tokens repeat.
  for (const std::pair<int, int>& shape : {std::pair{2, 70}, std::pair{3, 300}}) {
    const int B = shape.first, C = shape.second;  // not a structured binding: the lambda below captures C (clang 14)
    const int T = 37, V = 11, rows = B * T;
    std::vector<int> tokens(rows);
    Rng rng(1);
    for (auto& t : tokens) t = static_cast<int>(rng.uniform() * V);
    const std::vector<std::vector<float>> inputs = {randomVector(static_cast<size_t>(rows) * C, 2)};
    const std::vector<std::vector<float>> outputs = {randomVector(static_cast<size_t>(V) * C, 3, 0.1),
                                                     randomVector(static_cast<size_t>(T + 5) * C, 4, 0.1)};
    for (bool positions : {true, false}) {
      const std::string what = std::string(positions ? "embed with positions" : "embed without positions") + ", C " + std::to_string(C);
      const BackwardOp op = [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
        ops.embed(out[0], positions ? out[1] : nullptr, in[0], tokens.data(), rows, T, C);
      };
      const auto first = expectMatchesReference(device, reference, what, inputs, outputs, op);
      const auto again = expectMatchesReference(device, reference, what + ", again", inputs, outputs, op);
      for (size_t i = 0; i < first.size(); ++i)
        EXPECT_EQ(std::memcmp(first[i].data(), again[i].data(), first[i].size() * sizeof(float)), 0) << what << ": output " << i << " not repeatable";
      if (!positions) {
        EXPECT_EQ(first[1], outputs[1]) << what << ": null dpositions: the positions' gradient must stay untouched";
      }
    }
  }
}

void normsMatchReference(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  for (const int C : {96, 300}) {  // 300: rows in three column chunks of 64, the last ragged
    const int rows = 150;
    auto weight = randomVector(C, 7);
    for (auto& w : weight) w += 1.0f;
    const std::vector<std::vector<float>> inputs = {randomVector(static_cast<size_t>(rows) * C, 5, 2.0),
                                                    randomVector(static_cast<size_t>(rows) * C, 6), weight};
    const std::vector<std::vector<float>> outputs = {randomVector(static_cast<size_t>(rows) * C, 8, 0.1), randomVector(C, 9, 0.1),
                                                     randomVector(C, 10, 0.1)};
    const std::string at = ", C " + std::to_string(C);
    expectMatchesReference(device, reference, "layerNorm" + at, inputs, outputs, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
      ops.layerNorm(out[0], out[1], out[2], in[1], in[0], in[2], rows, C, 1e-5f);
    });
    const auto noBias = expectMatchesReference(device, reference, "layerNorm without bias" + at, inputs, outputs,
                                               [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
                                                 ops.layerNorm(out[0], out[1], nullptr, in[1], in[0], in[2], rows, C, 1e-5f);
                                               });
    EXPECT_EQ(noBias[2], outputs[2]) << "null dbias: untouched" << at;
    expectMatchesReference(device, reference, "rmsNorm" + at, inputs, outputs, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
      ops.rmsNorm(out[0], out[1], in[1], in[0], in[2], rows, C, 1e-6f);
    });
  }
}

void matmulsMatchReference(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  for (const int N : {90, 190}) {  // rows large enough to be split across threads
    const int rows = 150, K = 70;
    const std::vector<std::vector<float>> inputs = {randomVector(static_cast<size_t>(rows) * K, 11), randomVector(static_cast<size_t>(rows) * N, 12),
                                                    randomVector(static_cast<size_t>(K) * N, 13)};
    const std::vector<std::vector<float>> outputs = {randomVector(static_cast<size_t>(rows) * K, 14, 0.1),
                                                     randomVector(static_cast<size_t>(K) * N, 15, 0.1), randomVector(N, 16, 0.1)};
    const std::string at = ", N " + std::to_string(N);
    expectMatchesReference(device, reference, "matmul" + at, inputs, outputs, [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
      ops.matmul(out[0], out[1], out[2], in[1], in[0], in[2], rows, K, N);
    });
    const auto partial = expectMatchesReference(
        device, reference, "matmul without din and dbias" + at, inputs, outputs,
        [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.matmul(nullptr, out[1], nullptr, in[1], in[0], in[2], rows, K, N); });
    EXPECT_EQ(partial[0], outputs[0]) << "null din: untouched" << at;
    EXPECT_EQ(partial[2], outputs[2]) << "null dbias: untouched" << at;
    expectMatchesReference(
        device, reference, "matmul, 3 rows (one thread)" + at, inputs, outputs,
        [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.matmul(out[0], out[1], out[2], in[1], in[0], in[2], 3, K, N); });
    expectMatchesReference(device, reference, "matmulTransposed" + at, inputs, outputs,
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) {
                             ops.matmulTransposed(out[0], out[1], in[1], in[0], in[2], rows, K, N);  // weight read as (N, K)
                           });
  }
}

void activationsAndSwigluMatchReference(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  for (const size_t n : {size_t{20000}, size_t{20011}}) {  // several chunks split across threads, a ragged last one
    const std::vector<std::vector<float>> inputs = {randomVector(n, 17, 4.0), randomVector(n, 18), randomVector(n, 19, 2.0)};
    const std::string at = ", n " + std::to_string(n);
    for (Activation activation : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu})
      expectMatchesReference(device, reference, std::string("activation ") + toString(activation) + at, inputs, {randomVector(n, 20, 0.1)},
                             [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.activation(out[0], in[1], in[0], n, activation); });
    expectMatchesReference(device, reference, "swiglu" + at, inputs, {randomVector(n, 21, 0.1), randomVector(n, 22, 0.1)},
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.swiglu(out[0], out[1], in[1], in[0], in[2], n); });
    EXPECT_THROW(
        runBackward(device, inputs, {std::vector<float>(n)},
                    [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.activation(out[0], in[1], in[0], n, Activation::SwiGlu); }),
        Error)
        << "SwiGLU as a plain activation" << at;
  }
}

void attentionMatchesReferenceInEveryVariant(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  // T = 45, 70, 200: not multiples of the CPU's 32-row query tile or CUDA's 128-thread block;
  // windows cross tile edges; D = 6 and 80: fewer and more than a warp.
  auto cases = attentionCases();
  cases.push_back({"long rows, wide heads, RoPE", 200, 2, 2, 80, true, 0, 10000, false});
  const int batch = 2;
  for (const auto& c : cases) {
    const auto slopes = alibiSlopes(c.H);
    const AttentionShape shape = c.shape(slopes);
    const size_t qkvSize = static_cast<size_t>(batch) * c.T * shape.qkvDim();
    const std::vector<std::vector<float>> inputs = {forwardQkv(shape, batch, 23), randomVector(static_cast<size_t>(batch) * c.T * c.H * c.D, 24)};
    expectMatchesReference(device, reference, std::string("attention ") + c.name, inputs, {randomVector(qkvSize, 25, 0.01)},
                           [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.attention(out[0], in[1], in[0], shape, batch); });
  }
}

void crossEntropyMatchesReferenceAlsoInPlace(Device& device, Device& reference) {
  SKIP_ON_THE_REFERENCE(device);
  Backend& memory = device.forward();
  BackwardOps& ops = device.backward();
  const double tolerance = toleranceOf(device).outputs, lossTolerance = toleranceOf(device).loss;
  for (const int V : {300, 3001}) {
    const int rows = 40;
    const auto logits = randomVector(static_cast<size_t>(rows) * V, 26, 5.0);
    std::vector<int> targets(rows);
    std::vector<uint8_t> scored(rows);
    Rng rng(27);
    for (int r = 0; r < rows; ++r) {
      targets[r] = static_cast<int>(rng.uniform() * V);
      scored[r] = r % 3 != 1;
    }
    for (const uint8_t* mask : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(scored.data())}) {
      const std::string what = std::string(mask ? "with a mask" : "every row scored") + ", V " + std::to_string(V);
      std::vector<float> expected(logits.size(), 7.0f);  // = not +=: the 7s must go
      const double expectedLoss = reference.backward().crossEntropy(expected.data(), logits.data(), targets.data(), mask, rows, V, 0.05f);
      Buffer in = toDevice(memory, logits), out = toDevice(memory, std::vector<float>(logits.size(), 7.0f));
      const double loss = ops.crossEntropy(out.data(), in.data(), targets.data(), mask, rows, V, 0.05f);
      const double inPlaceLoss = ops.crossEntropy(in.data(), in.data(), targets.data(), mask, rows, V, 0.05f);
      EXPECT_NEAR(loss, expectedLoss, lossTolerance * expectedLoss) << what;
      EXPECT_EQ(inPlaceLoss, loss) << what << ": in place";
      const auto difference = compare(toHost(memory, out), expected), inPlaceDifference = compare(toHost(memory, in), expected);
      EXPECT_LT(difference.relative(), tolerance) << what << ": " << difference.describe();
      EXPECT_LT(inPlaceDifference.relative(), tolerance) << what << ", in place: " << inPlaceDifference.describe();
    }
    Buffer out = memory.allocate(logits.size()), in = toDevice(memory, logits);
    targets[0] = V;
    EXPECT_THROW(ops.crossEntropy(out.data(), in.data(), targets.data(), nullptr, rows, V, 1.0f), Error) << "target V, V " << V;
  }
}

}  // namespace

std::vector<DeviceCase> tscope::testing::backwardCases() {
  return {
      {"BackwardEmbedMatchesReferenceAndRepeatsBitwise", embedMatchesReferenceAndRepeatsBitwise},
      {"BackwardNormsMatchReference", normsMatchReference},
      {"BackwardMatmulsMatchReference", matmulsMatchReference},
      {"BackwardActivationsAndSwigluMatchReference", activationsAndSwigluMatchReference},
      {"BackwardAttentionMatchesReferenceInEveryVariant", attentionMatchesReferenceInEveryVariant},
      {"BackwardCrossEntropyMatchesReferenceAlsoInPlace", crossEntropyMatchesReferenceAlsoInPlace},
  };
}

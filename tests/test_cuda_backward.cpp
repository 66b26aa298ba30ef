// What only the CUDA Device (kernels/cuda_backward.h, reached through the plain-C++ chooser
// makeDevice in model/select/backend_select.h) is checked for, beyond the cases every device runs
// (tests/test_device_backward.cpp: every op against the plain-loop reference): the attention
// backward over a thousand tokens, the cross-entropy at a Qwen-sized vocabulary, AdamW + clipping
// over several steps against the CPU AdamW, and training (TrainModel, the Trainer) against the CPU.
// Errors are max |device - reference| / max |reference| per output.
// CudaBackward* tests SKIP (with the reason) without a CUDA build or device; the
// DeviceChoice* tests check the chooser on the CPU and run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/select/backend_select.h"
#include "model/core/error.h"
#include "model/train/optimizer.h"
#include "model/nn/positional.h"
#include "model/train/train_model.h"
#include "model/train/trainer.h"
#include "tests/device_cases.h"
#include "tests/test_backward_helpers.h"
#include "test_helpers.h"
#include "tests/test_cuda_helpers.h"

using namespace tscope;
using tscope::testing::BackwardOp;
using tscope::testing::compare;
using tscope::testing::expectMatchesReference;
using tscope::testing::forwardQkv;
using tscope::testing::Pointers;
using tscope::testing::randomVector;
using tscope::testing::randomWeights;
using tscope::testing::toDevice;
using tscope::testing::toHost;

namespace {

// Device float accumulation against the reference's double: a few float roundings of the largest
// term, well under this; a wrong index or a missing += gives errors of order 1.
constexpr double kTolerance = 2e-5;

}  // namespace

// What the first GPU lease must answer: the attention backward over long rows (T = 1024, GPT-2's
// context; causal with RoPE and GQA, and bidirectional), where the kernels loop over many key tiles.
TEST(CudaBackward, AttentionBackwardAtAThousandTokens) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  const auto reference = makeReferenceDevice();
  const std::vector<tscope::testing::AttentionCase> cases = {{"T 1024, causal, RoPE, GQA", 1024, 4, 2, 64, true, 0, 10000, false},
                                                             {"T 1024, bidirectional", 1024, 2, 2, 64, false, 0, 0, false}};
  for (const auto& c : cases) {
    const auto slopes = alibiSlopes(c.H);
    const AttentionShape shape = c.shape(slopes);
    const size_t qkvSize = static_cast<size_t>(c.T) * shape.qkvDim();
    const std::vector<std::vector<float>> inputs = {forwardQkv(shape, 1, 41), randomVector(static_cast<size_t>(c.T) * c.H * c.D, 42)};
    expectMatchesReference(
        *cudaDevice, *reference, std::string("attention ") + c.name, inputs, {randomVector(qkvSize, 43, 0.01)},
        [&](BackwardOps& ops, const Pointers& in, const Pointers& out) { ops.attention(out[0], in[1], in[0], shape, 1); }, kTolerance);
  }
}

// The cross-entropy (loss and its gradient) at a Qwen-sized vocabulary: 151,936 logits per row.
TEST(CudaBackward, CrossEntropyAtAQwenSizedVocabulary) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  const int rows = 6, V = 151936;
  const auto logits = randomVector(static_cast<size_t>(rows) * V, 44, 8.0);
  std::vector<int> targets = {0, V - 1, 77777, 12, 151000, 5};
  auto reference = makeReferenceBackwardOps();
  std::vector<float> expected(logits.size());
  const double expectedLoss = reference->crossEntropy(expected.data(), logits.data(), targets.data(), nullptr, rows, V, 1.0f / rows);
  Buffer in = toDevice(cuda, logits), out = cuda.allocate(logits.size());
  const double loss = cudaDevice->backward().crossEntropy(out.data(), in.data(), targets.data(), nullptr, rows, V, 1.0f / rows);
  EXPECT_NEAR(loss, expectedLoss, 1e-5 * expectedLoss);
  const auto difference = compare(toHost(cuda, out), expected);
  EXPECT_LT(difference.relative(), kTolerance) << difference.describe();
}

TEST(CudaBackward, AdamWWithClippingMatchesCpuOverSeveralSteps) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  const size_t n = 300007;  // more than the norm's 1024 x 256 threads: grid-stride loops run twice
  AdamWConfig config;
  config.lr = 1e-2f;
  config.weightDecay = 0.1f;
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = i % 5 != 0;
  auto params = randomVector(n, 40);
  AdamW cpu(n, config);
  auto device = cudaDevice->makeAdamW(n, config);
  device->setDecayMask(mask.data());
  Buffer dParams = toDevice(cuda, params);
  for (int step = 0; step < 5; ++step) {
    auto grads = randomVector(n, 41 + step, step == 2 ? 10.0 : 0.001);  // norms ~3000 (step 2, clipped) and ~0.3 (not clipped)
    Buffer dGrads = toDevice(cuda, grads);
    const float norm = clipGradNorm(grads.data(), grads.size(), 1.0f);
    const float deviceNorm = device->clipGradNorm(dGrads.data(), n, 1.0f);
    EXPECT_NEAR(deviceNorm, norm, 1e-6 * norm) << "step " << step;
    const auto clipped = compare(toHost(cuda, dGrads), grads);
    EXPECT_LT(clipped.relative(), 1e-6) << "clipped gradients, step " << step << ": " << clipped.describe();
    const float lr = 1e-2f / (step + 1);
    cpu.step(params.data(), grads.data(), mask.data(), lr);
    device->step(dParams.data(), dGrads.data(), lr);
    const auto difference = compare(toHost(cuda, dParams), params);
    // The same float operations per element; the host compiler may contract into FMA
    // (-march=native), the device never does: allow a few ulps.
    EXPECT_LT(difference.relative(), 1e-6) << "params after step " << step << ": " << difference.describe();
  }
  EXPECT_EQ(device->stepCount(), cpu.stepCount());
  const AdamWState deviceState = device->saveState(), cpuState = cpu.saveState();
  EXPECT_EQ(deviceState.step, cpuState.step);
  EXPECT_LT(compare(deviceState.m, cpuState.m).relative(), 1e-6) << compare(deviceState.m, cpuState.m).describe();
  EXPECT_LT(compare(deviceState.v, cpuState.v).relative(), 1e-6) << compare(deviceState.v, cpuState.v).describe();
  // Loading the CPU state and stepping on both again agrees too.
  device->loadState(cpuState);
  cuda.upload(dParams.data(), params.data(), n);
  const auto grads = randomVector(n, 60, 0.01);
  Buffer dGrads = toDevice(cuda, grads);
  cpu.step(params.data(), grads.data(), mask.data(), 1e-3f);
  device->step(dParams.data(), dGrads.data(), 1e-3f);
  EXPECT_LT(compare(toHost(cuda, dParams), params).relative(), 1e-6);
}

TEST(CudaBackward, TrainModelMatchesCpuInEveryVariant) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  auto cpu = makeCpuDevice(2);
  const int B = 3, T = 20;
  for (const auto& variant : tscope::testing::architectureVariants()) {
    const ModelConfig config = tscope::testing::variantConfig(variant);
    const Weights weights = randomWeights(config, 80);
    std::vector<int> inputs(B * T), targets(B * T);
    std::vector<uint8_t> scored(B * T);
    Rng rng(81);
    for (int i = 0; i < B * T; ++i) {
      inputs[i] = static_cast<int>(rng.uniform() * config.vocab_size);
      targets[i] = static_cast<int>(rng.uniform() * config.vocab_size);
      scored[i] = i % 7 != 3;
    }
    const BatchView batch{B, T, inputs.data(), targets.data(), scored.data()};
    TrainModel onCpu(config, *cpu), onDevice(config, *cudaDevice);
    Weights expected(config), actual(config);
    const LossReport a = onCpu.lossAndGradients(weights, expected, batch);
    const LossReport b = onDevice.lossAndGradients(weights, actual, batch);  // uploads weights, downloads grads
    EXPECT_NEAR(b.loss, a.loss, 1e-5 * std::fabs(a.loss)) << variant.name;
    EXPECT_NEAR(b.auxLoss, a.auxLoss, 1e-5) << variant.name;
    EXPECT_EQ(b.expertLoad, a.expertLoad) << variant.name;
    for (const auto& spec : weights.layout()) {
      const auto d = compare(actual.param(spec.name), expected.param(spec.name), spec.numel());
      EXPECT_LT(d.maxAbs, 1e-4 * std::max(1.0, d.maxRef)) << variant.name << ": " << spec.name << " " << d.describe();
    }
    // The ParamView form on device memory gives the same gradient as the Weights form.
    Buffer deviceWeights = cuda.allocate(weights.totalFloats()), deviceGrads = cuda.allocate(weights.totalFloats());
    cuda.upload(deviceWeights.data(), weights.arena(), weights.totalFloats());
    const LossReport c = onDevice.lossAndGradients(ParamView::at(weights, deviceWeights.data()), ParamView::at(weights, deviceGrads.data()), batch);
    EXPECT_EQ(c.loss, b.loss) << variant.name;
    std::vector<float> viewGrads(weights.totalFloats());
    cuda.download(viewGrads.data(), deviceGrads.data(), viewGrads.size());
    EXPECT_EQ(std::memcmp(viewGrads.data(), actual.arena(), viewGrads.size() * sizeof(float)), 0) << variant.name << ": not repeatable";
  }
}

TEST(CudaBackward, AdamWStepsOnTheDeviceLowerTheLossAsOnTheCpu) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  // 30 steps of clip + AdamW on one batch, all in device memory, beside the same loop on the CPU.
  const ModelConfig config = tscope::testing::smallConfig(2, 4, 32, 41, 24);
  const Weights initial = randomWeights(config, 90);
  const int B = 2, T = 16;
  std::vector<int> inputs(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) {
    inputs[i] = (i * 5) % config.vocab_size;
    targets[i] = (i * 5 + 3) % config.vocab_size;
  }
  const BatchView batch{B, T, inputs.data(), targets.data(), nullptr};
  AdamWConfig adam;
  adam.lr = 1e-2f;
  const auto mask = weightDecayMask(initial.layout(), initial.totalFloats());
  auto run = [&](Device& device) {
    Backend& backend = device.forward();
    TrainModel model(config, device);
    const size_t n = initial.totalFloats();
    Buffer params = backend.allocate(n), grads = backend.allocate(n);
    backend.upload(params.data(), initial.arena(), n);
    const ParamView p = ParamView::at(initial, params.data()), g = ParamView::at(initial, grads.data());
    auto adamw = device.makeAdamW(n, adam);
    adamw->setDecayMask(mask.data());
    std::vector<double> losses;
    for (int step = 0; step < 30; ++step) {
      losses.push_back(model.lossAndGradients(p, g, batch).loss);
      adamw->clipGradNorm(grads.data(), n, 1.0f);
      adamw->step(params.data(), grads.data(), 1e-2f);
    }
    losses.push_back(model.loss(p, batch).loss);
    return losses;
  };
  auto cpu = makeCpuDevice(2);
  const auto onCpu = run(*cpu), onDevice = run(*cudaDevice);
  EXPECT_NEAR(onDevice.front(), onCpu.front(), 1e-5 * onCpu.front());
  EXPECT_LT(onDevice.back(), 0.5 * onDevice.front()) << "loss " << onDevice.front() << " -> " << onDevice.back();
  // Float differences grow through 30 Adam steps, but the runs must stay close.
  EXPECT_NEAR(onDevice.back(), onCpu.back(), 0.02 * onCpu.back()) << "device " << onDevice.back() << ", cpu " << onCpu.back();
}

TEST(CudaBackward, TrainerRunsOnTheDeviceAndResumesOnTheCpu) {
  REQUIRE_CUDA_DEVICE(cudaDevice, cuda);
  cudaDevice.reset();  // the Trainer makes its own
  TrainConfig config;
  config.model = tscope::testing::smallConfig(2, 4, 32, 41, 24);
  config.batch = 4;
  config.gradAccumulation = 2;  // the device's accumulate-and-average path
  config.maxSteps = 8;
  config.warmupSteps = 2;
  config.evalEvery = 4;
  config.evalBatches = 2;
  config.threads = 2;
  const DataSpec data = parseDataSpec("induction:vocab=20,length=8");
  Trainer onCpu(config, data);
  Trainer onDevice(config, data, makeDevice("cuda"));
  EXPECT_EQ(onDevice.backendName(), "cuda");
  for (int i = 0; i < 4; ++i) {
    const StepReport a = onCpu.step(), b = onDevice.step();
    if (i == 0) {
      EXPECT_NEAR(b.loss, a.loss, 1e-5 * a.loss) << "the first step starts from the same weights";
      EXPECT_NEAR(b.gradNorm, a.gradNorm, 1e-3 * a.gradNorm);
    }
  }
  const auto difference = compare(onDevice.weights().arena(), onCpu.weights().arena(), onCpu.weights().totalFloats());
  EXPECT_LT(difference.maxAbs, 1e-2) << "weights after 4 steps (the host copy of the device's): " << difference.describe();
  const double cpuEval = onCpu.evaluate().loss, deviceEval = onDevice.evaluate().loss;
  EXPECT_NEAR(deviceEval, cpuEval, 0.02 * cpuEval);
  // A device checkpoint resumes on the CPU (not bit for bit: the device summed in other orders).
  const auto dir =
      std::filesystem::temp_directory_path() / ("tscope_cuda_trainer_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  onDevice.saveCheckpoint(dir.string());
  auto resumed = Trainer::resume(dir.string());
  EXPECT_EQ(resumed->stepsDone(), 4);
  EXPECT_EQ(std::memcmp(resumed->weights().arena(), onDevice.weights().arena(), onCpu.weights().totalFloats() * sizeof(float)), 0);
  while (!resumed->done()) resumed->step();
  EXPECT_TRUE(std::isfinite(resumed->history().steps.back().loss));
  std::filesystem::remove_all(dir);
}

TEST(DeviceChoice, HostDevicesHoldTheirOwnOpsAndOptimizerAdamW) {
  auto cpu = makeDevice("cpu", 2);
  auto reference = makeDevice("reference");
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(cpu->backward().name(), "cpu");
  EXPECT_EQ(reference->name(), "reference");
  EXPECT_EQ(reference->backward().name(), "reference");
  EXPECT_THROW(makeDevice("gpu"), Error);
  std::string note;
  EXPECT_FALSE(makeDevice("auto", 2, &note)->name().empty());
  if (!buildHasCuda()) {
    EXPECT_EQ(note, "CPU (no CUDA in this build)");
  }
  // On the host the device's AdamW is optimizer.h's AdamW and clipGradNorm, bit for bit.
  const size_t n = 1000;
  AdamWConfig config;
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = i % 3 != 0;
  auto params = randomVector(n, 70), same = params;
  AdamW direct(n, config);
  auto chosen = cpu->makeAdamW(n, config);
  chosen->setDecayMask(mask.data());
  for (int step = 0; step < 3; ++step) {
    auto grads = randomVector(n, 71 + step, 5.0), grads2 = grads;
    EXPECT_EQ(chosen->clipGradNorm(grads2.data(), n, 1.0f), clipGradNorm(grads.data(), n, 1.0f));
    direct.step(params.data(), grads.data(), mask.data(), 1e-3f);
    chosen->step(same.data(), grads2.data(), 1e-3f);
  }
  EXPECT_EQ(std::memcmp(params.data(), same.data(), n * sizeof(float)), 0);
  EXPECT_EQ(chosen->stepCount(), 3);
  // maxNorm <= 0 measures only (the double norm, grads untouched); divide divides.
  auto grads = randomVector(n, 80, 5.0), untouched = grads;
  double sumSquares = 0;
  for (float g : grads) sumSquares += (double)g * g;
  EXPECT_EQ(chosen->clipGradNorm(grads.data(), n, 0.0f), std::sqrt(sumSquares));
  EXPECT_EQ(grads, untouched);
  chosen->divide(grads.data(), n, 3.0f);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(grads[i], untouched[i] / 3.0f) << i;
}

// The Trainer's one step loop (model/train/trainer.cpp, written against a Device) on the host,
// against the same loop written out with optimizer.h's pieces (GradientAccumulator, clipGradNorm,
// AdamW) and TrainModel's Weights form on the same batches: losses, norms and weights bit for bit,
// with and without gradient accumulation and clipping.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "model/train/optimizer.h"
#include "model/train/train_model.h"
#include "model/train/trainer.h"
#include "test_helpers.h"

using namespace tscope;

namespace {

struct Case {
  int microBatches;
  float gradClip;
};

}  // namespace

TEST(TrainerStep, HostLoopIsTheOptimizerArithmeticBitForBit) {
  for (const Case& c : {Case{1, 1.0f}, Case{3, 0.05f}, Case{2, 0.0f}}) {
    SCOPED_TRACE("gradAccumulation " + std::to_string(c.microBatches) + ", gradClip " + std::to_string(c.gradClip));
    TrainConfig config;
    config.model = tscope::testing::smallConfig(2, 4, 32, 41, 24);
    config.batch = 3;
    config.gradAccumulation = c.microBatches;
    config.gradClip = c.gradClip;
    config.maxSteps = 4;
    config.warmupSteps = 1;
    config.maxLr = 1e-2f;
    config.threads = 2;
    const DataSpec data = parseDataSpec("induction:vocab=20,length=8");
    Trainer trainer(config, data);
    const TrainConfig& run = trainer.config();

    // The loop by hand, on its own data source, model and optimizer.
    auto source = makeDataSource(data, run.seqLen, run.seed);
    auto device = makeCpuDevice(run.threads);
    TrainModel model(run.model, *device);
    Weights weights(run.model), grads(run.model);
    weights.initRandom(run.seed, run.initStd);
    const size_t n = weights.totalFloats();
    AdamWConfig adamConfig = run.adam;
    adamConfig.lr = run.maxLr;
    AdamW adam(n, adamConfig);
    const auto mask = weightDecayMask(weights.layout(), n);
    const LrSchedule schedule{run.maxLr, run.minLr, run.warmupSteps, run.maxSteps};
    const int B = run.batch, T = run.seqLen;
    std::vector<int> inputs(B * T), targets(B * T);
    std::vector<uint8_t> scored(B * T);
    for (int s = 0; s < run.maxSteps; ++s) {
      GradientAccumulator accumulator(n, c.microBatches);
      double loss = 0;
      for (int m = 0; m < c.microBatches; ++m) {
        Rng rng(trainBatchSeed(run.seed, s, m));
        source->trainBatch(B, rng, inputs.data(), targets.data(), scored.data());
        loss += model.lossAndGradients(weights, grads, {B, T, inputs.data(), targets.data(), scored.data()}).loss / c.microBatches;
        accumulator.add(grads.arena());
      }
      std::vector<float> mean = accumulator.mean();
      double norm = 0;
      if (c.gradClip > 0) {
        norm = clipGradNorm(mean.data(), n, c.gradClip);
      } else {
        for (float g : mean) norm += (double)g * g;
        norm = std::sqrt(norm);
      }
      adam.step(weights.arena(), mean.data(), mask.data(), schedule.at(s));

      const StepReport report = trainer.step();
      EXPECT_EQ(report.loss, loss) << "step " << s;
      EXPECT_EQ(report.gradNorm, norm) << "step " << s;
      EXPECT_EQ(report.lr, schedule.at(s)) << "step " << s;
    }
    EXPECT_EQ(std::memcmp(trainer.weights().arena(), weights.arena(), n * sizeof(float)), 0) << "weights after " << run.maxSteps << " steps";
    EXPECT_EQ(trainer.history().steps.size(), static_cast<size_t>(run.maxSteps));
  }
}

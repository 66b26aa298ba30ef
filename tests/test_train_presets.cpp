// The training presets: every one validates, its resolved model config is the one the Trainer
// builds, one step trains to a finite loss (Brown presets only where the corpus is installed), and
// each stays small enough to train in a couple of minutes on a laptop. Also the checks the
// Training panel runs on every edit name the field that is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model/theory/cost.h"
#include "model/train/train_presets.h"

using namespace tscope;

namespace {

TrainConfig oneThread(TrainConfig c) {
  c.threads = 1;
  return c;
}

}  // namespace

TEST(TrainPresets, EveryPresetValidatesAndHasUniqueNames) {
  std::set<std::string> keys, names;
  ASSERT_GE(trainPresets().size(), 7u);
  for (const TrainPreset& p : trainPresets()) {
    SCOPED_TRACE(p.key);
    EXPECT_TRUE(keys.insert(p.key).second) << "duplicate key";
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate name";
    EXPECT_FALSE(p.description.empty());
    EXPECT_EQ(validateTrainSetup(p.config, p.data), "");
    EXPECT_NO_THROW(validate(p.config));
    EXPECT_EQ(validateConfig(resolvedModelConfig(p.config, p.data)), "");
    EXPECT_EQ(findTrainPreset(p.key), &p);
    EXPECT_EQ(findTrainPreset(p.name), &p);
  }
  EXPECT_EQ(findTrainPreset("no-such-preset"), nullptr);
  for (const char* key : {"induction", "copy", "reverse", "sort", "modadd", "brown", "brown-moe"}) EXPECT_NE(findTrainPreset(key), nullptr) << key;
  EXPECT_TRUE(findTrainPreset("induction")->config.model.attention_only);
  EXPECT_EQ(findTrainPreset("modadd")->data.task.modulus, 23);
  const ModelConfig moe = findTrainPreset("brown-moe")->config.model;
  EXPECT_EQ(moe.n_experts, 8);
  EXPECT_EQ(moe.moe_top_k, 2);
}

// Training compute 6 N D (plus attention) of the whole run, against a budget of 4e12 FLOP: under two
// minutes at the ~40 GFLOP/s one laptop core reached on these small matrices (the induction preset,
// 1.2e12 FLOP, took 29 s on one core of the 2-core build machine).
TEST(TrainPresets, EveryPresetIsSmallEnoughToWatch) {
  for (const TrainPreset& p : trainPresets()) {
    const ModelConfig m = resolvedModelConfig(p.config, p.data);
    const double tokens = static_cast<double>(p.config.maxSteps) * p.config.batch * p.config.gradAccumulation * m.n_positions;
    const double flops = flopsPerToken(m, m.n_positions).training * tokens;
    EXPECT_LT(flops, 4e12) << p.key << ": " << flops << " FLOP over " << tokens << " tokens";
    EXPECT_LT(countParameters(m).total, 2'000'000) << p.key;
  }
}

TEST(TrainPresets, TaskPresetsTrainOneStepToAFiniteLoss) {
  for (const TrainPreset& p : trainPresets()) {
    if (p.data.brown) continue;
    SCOPED_TRACE(p.key);
    Trainer trainer(oneThread(p.config), p.data);
    // The config the panel shows before the run is the one the Trainer built.
    const ModelConfig expected = resolvedModelConfig(p.config, p.data);
    EXPECT_EQ(trainer.config().model.vocab_size, expected.vocab_size);
    EXPECT_EQ(trainer.config().model.n_positions, expected.n_positions);
    EXPECT_EQ(trainer.config().model.tokenizer, expected.tokenizer);
    const StepReport step = trainer.step();
    EXPECT_TRUE(std::isfinite(step.loss)) << step.loss;
    // An untrained model is close to a uniform guess over the vocabulary.
    EXPECT_NEAR(step.loss, std::log(expected.vocab_size), 1.0);
    EXPECT_FALSE(trainer.data().probeSequence().empty());
    EXPECT_LE(static_cast<int>(trainer.data().probeSequence().size()), expected.n_positions);
  }
}

TEST(TrainPresets, BrownPresetsTrainOneStepToAFiniteLoss) {
  if (defaultBrownCorpusDir().empty()) GTEST_SKIP() << "the Brown corpus is not installed (scripts/setup.sh)";
  for (const TrainPreset& p : trainPresets()) {
    if (!p.data.brown) continue;
    SCOPED_TRACE(p.key);
    Trainer trainer(oneThread(p.config), p.data);
    const ModelConfig expected = resolvedModelConfig(p.config, p.data);
    EXPECT_EQ(trainer.config().model.vocab_size, expected.vocab_size);
    EXPECT_EQ(trainer.config().model.n_positions, expected.n_positions);
    const StepReport step = trainer.step();
    EXPECT_TRUE(std::isfinite(step.loss)) << step.loss;
    EXPECT_NEAR(step.loss, std::log(expected.vocab_size), 1.5);
  }
}

TEST(TrainPresets, ValidationNamesTheFieldThatIsWrong) {
  const TrainPreset& p = *findTrainPreset("induction");
  auto problem = [&](auto edit) {
    TrainConfig c = p.config;
    DataSpec d = p.data;
    edit(c, d);
    return validateTrainSetup(c, d);
  };
  const std::string heads = problem([](TrainConfig& c, DataSpec&) { c.model.n_head = 3; });  // 3 does not divide 128
  EXPECT_NE(heads.find("n_head"), std::string::npos) << heads;
  const std::string lr = problem([](TrainConfig& c, DataSpec&) { c.maxLr = -1; });
  EXPECT_NE(lr.find("lr"), std::string::npos) << lr;
  const std::string steps = problem([](TrainConfig& c, DataSpec&) { c.maxSteps = 0; });
  EXPECT_NE(steps.find("steps"), std::string::npos) << steps;
  const std::string data = problem([](TrainConfig&, DataSpec& d) { d.task.vocab = 4; });  // induction needs vocab >= length
  EXPECT_EQ(data.rfind("data:", 0), 0u) << data;
  const std::string bpe = problem([](TrainConfig&, DataSpec& d) {
    d.brown = true;
    d.bpeVocab = 100;
  });
  EXPECT_NE(bpe.find("BPE"), std::string::npos) << bpe;
}

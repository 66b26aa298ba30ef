// The shipped training comparisons (assets/comparisons/*.json): each is what its presets train
// (their configs, resolved on Brown), and the README's reading of each holds:
//   efficient-attention  on Brown at context 64 the sliding window loses nothing against exact
//                        attention, Linformer loses a little and linear attention clearly more;
//   trainability         at one learning rate, the 8-layer pre-norm model trains; without norms it
//                        trains worse; post-norm and no residual stay near the unigram plateau;
//   switch-experts       at the same compute per token, 2, 4 and 8 experts each beat the dense model.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/core/rng.h"
#include "model/train/comparison.h"
#include "model/train/train_presets.h"

using namespace tscope;

namespace {

// Loads the shipped comparison `stem`, checks every run against its preset and the labels, and
// returns the runs by label.
std::map<std::string, const ComparedRun*> presetRuns(const TrainingComparison& c, const std::vector<std::string>& labels) {
  std::map<std::string, const ComparedRun*> byLabel;
  EXPECT_EQ(c.runs.size(), labels.size());
  for (const ComparedRun& run : c.runs) {
    byLabel[run.label] = &run;
    const TrainPreset* preset = findTrainPreset(run.label);
    if (!preset) {
      ADD_FAILURE() << "no preset " << run.label;
      continue;
    }
    // The run's model is the preset's, with the data's vocabulary and context.
    const ModelConfig want = resolvedModelConfig(preset->config, preset->data);
    EXPECT_EQ(configToJson(run.config.model), configToJson(want)) << run.label;
    EXPECT_EQ(run.config.maxSteps, preset->config.maxSteps) << run.label;
    EXPECT_EQ(run.trainLoss.size(), static_cast<size_t>(preset->config.maxSteps)) << run.label;
    EXPECT_FALSE(run.valLoss.empty()) << run.label;
    if (!run.valLoss.empty()) {
      EXPECT_EQ(run.evalSteps.back(), preset->config.maxSteps) << run.label;
    }
  }
  for (const std::string& label : labels) EXPECT_TRUE(byLabel.count(label)) << label;
  return byLabel;
}

TrainingComparison shipped(const std::string& stem) {
  return loadComparison(std::string(TSCOPE_SOURCE_DIR) + "/assets/comparisons/" + stem + ".json");
}

double finalVal(const std::map<std::string, const ComparedRun*>& runs, const std::string& label) {
  const auto it = runs.find(label);
  return it == runs.end() || it->second->valLoss.empty() ? NAN : it->second->valLoss.back();
}

// The validation loss of a model that ignores its context: the run's validation targets scored by
// the training tokens' frequencies (add-one smoothed, counted over as many training sequences as
// the run drew), on the validation batches the run was scored on.
double contextFreeValidationLoss(const ComparedRun& run) {
  const TrainConfig& c = run.config;
  auto source = makeDataSource(parseDataSpec(run.data), c.seqLen, c.seed);
  const int V = source->vocabSize(), T = source->sequenceLength(), B = c.batch;
  std::vector<int> inputs((size_t)B * T), targets((size_t)B * T);
  std::vector<uint8_t> scored((size_t)B * T);
  std::vector<double> counts(V, 1.0);
  double total = V;
  Rng rng(c.seed);
  for (int step = 0; step < c.maxSteps; ++step) {
    source->trainBatch(B, rng, inputs.data(), targets.data(), scored.data());
    for (size_t i = 0; i < targets.size(); ++i)
      if (scored[i]) counts[targets[i]] += 1, total += 1;
  }
  double loss = 0, n = 0;
  for (int index = 0; index < c.evalBatches; ++index) {
    source->validationBatch(B, index, inputs.data(), targets.data(), scored.data());
    for (size_t i = 0; i < targets.size(); ++i)
      if (scored[i]) loss -= std::log(counts[targets[i]] / total), n += 1;
  }
  return loss / n;
}

}  // namespace

TEST(ShippedComparison, EfficientAttentionIsWhatThePresetsTrain) {
  const TrainingComparison c = shipped("efficient-attention");
  std::map<std::string, const ComparedRun*> byLabel = presetRuns(c, {"brown", "brown-linformer", "brown-linear", "brown-window"});
  ASSERT_EQ(byLabel.size(), 4u);
  EXPECT_EQ(byLabel["brown"]->config.model.attention_variant.variant, AttentionVariant::Exact);
  EXPECT_EQ(byLabel["brown-linformer"]->config.model.attention_variant.variant, AttentionVariant::Linformer);
  EXPECT_EQ(byLabel["brown-linear"]->config.model.attention_variant.variant, AttentionVariant::Linear);
  EXPECT_EQ(byLabel["brown-window"]->config.model.attention_variant.variant, AttentionVariant::Window);

  const double exact = byLabel["brown"]->valLoss.back(), window = byLabel["brown-window"]->valLoss.back(),
               linformer = byLabel["brown-linformer"]->valLoss.back(), linear = byLabel["brown-linear"]->valLoss.back();
  EXPECT_LT(std::abs(window - exact), 0.02) << "window " << window << " exact " << exact;
  EXPECT_GT(linformer, std::min(exact, window)) << linformer;
  EXPECT_GT(linear, linformer + 0.03) << "linear " << linear << " linformer " << linformer;
  EXPECT_GT(linear, exact + 0.05) << "linear " << linear << " exact " << exact;
}

// The lecture's "residual connections and normalisation dramatically improve trainability": at the
// learning rate the pre-norm model trains with, the model without norms trains, less well; post-norm
// and no residual end where a model that ignores its context ends (the token frequencies' loss).
TEST(ShippedComparison, TrainabilityIsWhatThePresetsTrainAndTheREADMEsReadingHolds) {
  const TrainingComparison c = shipped("trainability");
  const std::vector<std::string> labels = {"brown-deep", "brown-deep-postnorm", "brown-deep-nonorm", "brown-deep-noresidual"};
  const auto runs = presetRuns(c, labels);
  for (const std::string& label : labels) ASSERT_TRUE(runs.count(label)) << label;
  const double pre = finalVal(runs, "brown-deep"), post = finalVal(runs, "brown-deep-postnorm"), none = finalVal(runs, "brown-deep-nonorm"),
               noResidual = finalVal(runs, "brown-deep-noresidual");
  EXPECT_GT(none, pre + 0.1) << "no norm " << none << " pre-norm " << pre;
  EXPECT_LT(none, post - 1.0) << "no norm " << none << " post-norm " << post;
  const double contextFree = contextFreeValidationLoss(*runs.at("brown-deep"));
  std::printf("context-free validation loss %.4f; pre-norm %.4f, no norm %.4f, post-norm %.4f, no residual %.4f\n", contextFree, pre, none, post,
              noResidual);
  EXPECT_NEAR(post, contextFree, 0.05);
  EXPECT_NEAR(noResidual, contextFree, 0.05);
  EXPECT_LT(pre, contextFree - 1.5);
}

// Switch Transformer's "more experts at the same compute", at this scale: 2 experts beat the dense
// model, 4 about match it, 8 lose (each of 8 experts sees an eighth of 1.5M tokens); every run stays
// within 0.1 nats of the dense one. The per-token compute is the dense model's in every run.
TEST(ShippedComparison, SwitchExpertsIsWhatThePresetsTrainAndTheREADMEsReadingHolds) {
  const TrainingComparison c = shipped("switch-experts");
  const std::vector<std::string> labels = {"brown", "brown-switch2", "brown-switch4", "brown-switch8"};
  const auto runs = presetRuns(c, labels);
  for (const std::string& label : labels) ASSERT_TRUE(runs.count(label)) << label;
  const double dense = finalVal(runs, "brown"), two = finalVal(runs, "brown-switch2"), four = finalVal(runs, "brown-switch4"),
               eight = finalVal(runs, "brown-switch8");
  EXPECT_LT(two, dense - 0.02) << "2 experts " << two << " dense " << dense;
  EXPECT_LT(std::abs(four - dense), 0.02) << "4 experts " << four << " dense " << dense;
  EXPECT_GT(eight, dense + 0.01) << "8 experts " << eight << " dense " << dense;
  for (const double loss : {two, four, eight}) EXPECT_LT(std::abs(loss - dense), 0.1) << loss;
  for (const std::string& label : labels) EXPECT_EQ(runs.at(label)->trainLoss.size(), runs.at("brown")->trainLoss.size()) << label;
}

// The shipped training comparison (assets/comparisons/efficient-attention.json): it is what the
// four attention presets train (their configs, resolved on Brown), and the README's reading of it
// holds: on Brown at context 64 the sliding window loses nothing against exact attention, Linformer
// loses a little and linear attention clearly more.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/train/comparison.h"
#include "model/train/train_presets.h"

using namespace tscope;

TEST(ShippedComparison, EfficientAttentionIsWhatThePresetsTrain) {
  const TrainingComparison c = loadComparison(std::string(TSCOPE_SOURCE_DIR) + "/assets/comparisons/efficient-attention.json");
  ASSERT_EQ(c.runs.size(), 4u);
  std::map<std::string, const ComparedRun*> byLabel;
  for (const ComparedRun& run : c.runs) {
    byLabel[run.label] = &run;
    const TrainPreset* preset = findTrainPreset(run.label);
    ASSERT_NE(preset, nullptr) << run.label;
    // The run's model is the preset's, attention included, with the data's vocabulary and context.
    const ModelConfig want = resolvedModelConfig(preset->config, preset->data);
    EXPECT_EQ(configToJson(run.config.model), configToJson(want)) << run.label;
    EXPECT_EQ(run.config.maxSteps, preset->config.maxSteps) << run.label;
    EXPECT_EQ(run.trainLoss.size(), static_cast<size_t>(preset->config.maxSteps)) << run.label;
    ASSERT_FALSE(run.valLoss.empty()) << run.label;
    EXPECT_EQ(run.evalSteps.back(), preset->config.maxSteps) << run.label;
  }
  for (const char* label : {"brown", "brown-linformer", "brown-linear", "brown-window"}) ASSERT_TRUE(byLabel.count(label)) << label;
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

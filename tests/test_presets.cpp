// The GPT-3 presets (Brown et al. 2020, Table 2.1): every built shape is valid, its parameter
// count from countParameters is within 2.5% of the published size, and the two rows that
// cannot be built as printed are refused by validateConfig exactly as their notes say.
#include <gtest/gtest.h>

#include <cmath>

#include "model/theory/cost.h"
#include "model/theory/presets.h"

using namespace tscope;

TEST(Presets, Gpt3ParameterCountsMatchThePaper) {
  const auto& presets = gpt3Presets();
  ASSERT_EQ(presets.size(), 8u);
  double largestRelative = 0;
  std::string largestName;
  for (const ModelPreset& p : presets) {
    const ModelConfig c = presetConfig(p);
    ASSERT_EQ(validateConfig(c), "") << p.name;
    EXPECT_EQ(c.headDim(), p.d_head) << p.name << ": built head size differs from the printed d_head";
    const double counted = static_cast<double>(countParameters(c).total);
    const double relative = std::abs(counted - p.publishedParameters) / p.publishedParameters;
    EXPECT_LT(relative, 0.025) << p.name << ": counted " << counted << " vs published " << p.publishedParameters;
    if (relative > largestRelative) {
      largestRelative = relative;
      largestName = p.name;
    }
  }
  std::printf("largest relative difference: %.4f (%s)\n", largestRelative, largestName.c_str());
}

TEST(Presets, Gpt3SmallAnd175BExactCounts) {
  // 12 L C^2 + 13 L C + 2 C + (V + n_ctx) C with V = 50257, n_ctx = 2048 (tied unembedding).
  for (const ModelPreset& p : gpt3Presets()) {
    if (p.name != "GPT-3 Small" && p.name != "GPT-3 175B") continue;
    const int64_t L = p.n_layer, C = p.d_model;
    const int64_t closedForm = 12 * L * C * C + 13 * L * C + 2 * C + (50257 + 2048) * C;
    EXPECT_EQ(countParameters(presetConfig(p)).total, closedForm) << p.name;
  }
}

TEST(Presets, RowsThatCannotBeBuiltAsPrintedSaySo) {
  int changed = 0;
  for (const ModelPreset& p : gpt3Presets()) {
    const std::string printedProblem = validateConfig(printedConfig(p));
    if (p.note.empty()) {
      EXPECT_EQ(printedProblem, "") << p.name;
      EXPECT_EQ(p.usedDModel, p.d_model);
      EXPECT_EQ(p.usedHeads, p.n_head);
    } else {
      ++changed;
      EXPECT_NE(printedProblem.find("must divide n_embd"), std::string::npos) << p.name << ": " << printedProblem;
    }
  }
  EXPECT_EQ(changed, 2);  // XL (24 heads, d 2048) and 13B (40 heads, d 5140)
}

// The sweeps shipped in assets/sweeps/ (made by `tscope-cli sweep --preset brown|addition`): each
// holds every run of its preset's grid, the Brown one spans at least 30x in non-embedding
// parameters and its losses fall on the power laws the lab fits, and the addition one shows the
// emergence the panel draws: exact match jumps while the loss per answer token falls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "model/theory/scaling_fit.h"
#include "model/train/sweep.h"

namespace tscope {
namespace {

SweepResults shipped(const std::string& name) {
  for (const auto& [key, path] : shippedSweeps())
    if (key == name) return loadSweep(path);
  ADD_FAILURE() << "assets/sweeps/" << name << "/sweep.json is not shipped";
  return {};
}

TEST(ShippedSweeps, EachIsItsPresetsWholeGrid) {
  for (const char* name : {"brown", "addition"}) {
    const SweepResults sweep = shipped(name);
    const SweepPreset* preset = findSweepPreset(name);
    ASSERT_NE(preset, nullptr);
    EXPECT_EQ(sweepSpecToJson(sweep.spec), sweepSpecToJson(preset->spec)) << name << ": the preset changed after the sweep was made";
    EXPECT_EQ(sweep.runs.size(), planSweep(sweep.spec).size()) << name;
    EXPECT_FALSE(sweep.machine.empty());
    EXPECT_FALSE(sweep.date.empty());
  }
}

TEST(ShippedSweeps, BrownLossesFallOnPowerLaws) {
  const SweepResults sweep = shipped("brown");
  const std::vector<ScalingPoint> points = sweepPoints(sweep);
  double nLo = 1e300, nHi = 0;
  for (const ScalingPoint& p : points) nLo = std::min(nLo, p.params), nHi = std::max(nHi, p.params);
  EXPECT_GE(nHi / nLo, 30.0);
  // At every size, more data gives a lower loss.
  std::map<double, std::vector<std::pair<double, double>>> bySize;  // N -> (D, L)
  for (const ScalingPoint& p : points) bySize[p.params].push_back({p.tokens, p.loss});
  for (auto& [n, runs] : bySize) {
    std::sort(runs.begin(), runs.end());
    for (size_t i = 1; i < runs.size(); ++i) EXPECT_LT(runs[i].second, runs[i - 1].second) << "N " << n << " at D " << runs[i].first;
  }
  const SweepFits fits = fitSweep(points, 50);
  ASSERT_TRUE(fits.hasKaplanParams && fits.hasKaplanTokens && fits.hasChinchilla) << ::testing::PrintToString(fits.notes);
  EXPECT_GT(fits.kaplanParams.alpha, 0.02);
  EXPECT_LT(fits.kaplanParams.alpha, 1.0);
  EXPECT_GT(fits.kaplanTokens.alpha, 0.02);
  EXPECT_LT(fits.kaplanTokens.alpha, 1.0);
  EXPECT_LT(fits.chinchilla.rmsLogResidual, 0.03);  // within 3% of every measured loss
  const double ratio = fits.optimumAtSweep.tokensPerParam;
  EXPECT_TRUE(std::isfinite(ratio) && ratio > 0);
}

TEST(ShippedSweeps, AdditionExactMatchJumpsWhileTheTokenLossFalls) {
  const SweepResults sweep = shipped("addition");
  std::vector<const SweepRunResult*> runs;
  for (const SweepRunResult& run : sweep.runs) runs.push_back(&run);
  ASSERT_GE(runs.size(), 5u);
  std::sort(runs.begin(), runs.end(), [](auto* a, auto* b) { return a->paramsNonEmbedding < b->paramsNonEmbedding; });
  for (const SweepRunResult* run : runs) ASSERT_TRUE(run->task.has_value()) << run->name;
  EXPECT_LT(runs.front()->task->exactMatch, 0.1);
  EXPECT_GT(runs.back()->task->exactMatch, 0.95);
  EXPECT_LT(runs.back()->task->answerTokenLoss, runs.front()->task->answerTokenLoss / 10);
  // The largest rise of exact match between neighbouring sizes is most of its whole range: a jump.
  double jump = 0;
  for (size_t i = 1; i < runs.size(); ++i) jump = std::max(jump, runs[i]->task->exactMatch - runs[i - 1]->task->exactMatch);
  EXPECT_GT(jump, 0.5);
  // Below the jump token accuracy has already risen: the largest model still under 0.3 exact match
  // gets clearly more answer digits right than the smallest (the smooth metric under the sharp one).
  const SweepRunResult* below = nullptr;
  for (const SweepRunResult* run : runs)
    if (run->task->exactMatch < 0.3) below = run;
  ASSERT_NE(below, nullptr);
  EXPECT_GT(below->task->answerTokenAccuracy, runs.front()->task->answerTokenAccuracy + 0.2) << below->name;
}

}  // namespace
}  // namespace tscope

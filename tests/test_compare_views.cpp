// The numbers the Compare panel and tscope-cli compare-forward put side by side, against hand
// computations: KL divergence, a head's entropy and distances to the previous- and first-token
// patterns, and a map seen through another tokenization of the same text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/core/error.h"
#include "model/nn/compare_views.h"
#include "model/theory/architecture_rows.h"

namespace tscope {
namespace {

TEST(CompareViews, KlDivergenceIsTheHandComputedSum) {
  const std::vector<float> p = {std::log(0.5f), std::log(0.25f), std::log(0.25f)}, q = {std::log(0.25f), std::log(0.25f), std::log(0.5f)};
  const double want = 0.5 * std::log(0.5 / 0.25) + 0.25 * std::log(1.0) + 0.25 * std::log(0.25 / 0.5);
  EXPECT_NEAR(klDivergence(p, q), want, 1e-7);
  EXPECT_NEAR(klDivergence(p, p), 0.0, 1e-12);
  const std::vector<float> shifted = {p[0] + 3, p[1] + 3, p[2] + 3};  // logits, not probabilities: a shift is the same distribution
  EXPECT_NEAR(klDivergence(p, shifted), 0.0, 1e-7);
  const std::vector<float> withZero = {0.0f, -INFINITY, 0.0f};
  EXPECT_NEAR(klDivergence(withZero, q), 0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.5), 1e-7);
  EXPECT_THROW(klDivergence(p, std::vector<float>{0, 0}), Error);
}

TEST(CompareViews, HeadPatternsOfThePreviousTokenTheFirstTokenAndUniformHeads) {
  const int T = 4;
  std::vector<float> previous(T * T, 0.0f), first(T * T, 0.0f), uniform(T * T, 0.0f);
  for (int t = 0; t < T; ++t) {
    previous[t * T + std::max(t - 1, 0)] = 1;
    first[t * T] = 1;
    for (int j = 0; j <= t; ++j) uniform[t * T + j] = 1.0f / (t + 1);
  }
  const HeadPattern p = headPattern(previous.data(), T), f = headPattern(first.data(), T), u = headPattern(uniform.data(), T);
  EXPECT_NEAR(p.entropy, 0, 1e-12);
  EXPECT_NEAR(p.previousToken, 0, 1e-12);
  EXPECT_NEAR(p.firstToken, 2.0 / 4, 1e-12);  // rows 2 and 3 have none of their mass on key 0
  EXPECT_NEAR(f.firstToken, 0, 1e-12);
  EXPECT_NEAR(f.previousToken, 2.0 / 4, 1e-12);
  EXPECT_NEAR(u.entropy, (std::log(1.0) + std::log(2.0) + std::log(3.0) + std::log(4.0)) / 4, 1e-6);
  // Row t of the uniform head: 1 - 1/(t+1) of its mass is off the first key.
  EXPECT_NEAR(u.firstToken, (0 + 0.5 + 2.0 / 3 + 0.75) / 4, 1e-6);
}

TEST(CompareViews, AMapSeenThroughAnotherTokenizationOfTheSameText) {
  // The text "abcd": left tokens "ab" "cd", right tokens "a" "bcd".
  const auto left = spansOf({"ab", "cd"}), right = spansOf({"a", "bcd"});
  EXPECT_EQ(left[1], (TokenSpan{2, 4}));
  const std::vector<float> rightMap = {1, 0, 0.3f, 0.7f};
  // Left "ab" ends in byte 1, held by right "bcd" (row 1); left "cd" ends in byte 3, also row 1.
  // Right key "a" starts at byte 0 (left "ab"); right key "bcd" starts at byte 1 (left "ab" too).
  const std::vector<float> seen = alignedMap(rightMap.data(), right, left);
  EXPECT_EQ(seen, (std::vector<float>{1.0f, 0.0f, 1.0f, 0.0f}));
  EXPECT_THROW(alignedMap(rightMap.data(), spansOf({"a", "bc"}), left), Error);  // not the same text
  const std::vector<float> leftMap = {1, 0, 0.5f, 0.5f};
  const MapDifference d =
      mapDifference(leftMap, 2, std::vector<float>{1, 0, 0.25f, 0.25f, 0.5f, 0, 0, 0, 1}, 3, false, spansOf({"ab", "cd"}), spansOf({"a", "b", "cd"}));
  EXPECT_TRUE(d.aligned);
  ASSERT_EQ(d.difference.size(), 4u);
  // Left row 1 ("cd") <- right row 2 ("cd"): keys "a","b" -> "ab" (0), "cd" -> "cd" (1): (0, 1) - (0.5, 0.5).
  EXPECT_FLOAT_EQ(d.difference[2], -0.5f);
  EXPECT_FLOAT_EQ(d.difference[3], 0.5f);
  EXPECT_EQ(d.right, (std::vector<float>{0.75f, 0.0f, 0.0f, 1.0f}));  // as subtracted: row "ab" <- right "b" (keys "a" "b" -> "ab"), "cd" <- "cd"
  EXPECT_NE(d.note.find("character spans"), std::string::npos);
  const MapDifference none = mapDifference(leftMap, 2, std::vector<float>(9, 0.0f), 3, false);
  EXPECT_TRUE(none.difference.empty());
  EXPECT_NE(none.note.find("no difference map"), std::string::npos);
  const MapDifference same = mapDifference(leftMap, 2, std::vector<float>{1, 0, 0.25f, 0.75f}, 2, true);
  EXPECT_NEAR(same.maxAbs, 0.25, 1e-7);
}

TEST(ArchitectureRows, TheChoicesAndCostsOfTwoModelsWithTheDifferencesMarked) {
  ModelConfig gpt;  // the defaults: a small GPT-2
  ModelConfig qwen = gpt;
  qwen.norm = NormKind::RmsNorm;
  qwen.position_encoding = PositionEncoding::Rope;
  qwen.n_kv_head = 2;
  qwen.activation = Activation::SwiGlu;
  qwen.n_head = 4;
  gpt.n_head = 4;
  const auto rows = architectureRows(gpt, qwen, 10, 10);
  auto row = [&](const std::string& name) {
    return *std::find_if(rows.begin(), rows.end(), [&](const ArchitectureRow& r) { return r.name == name; });
  };
  EXPECT_EQ(row("norm").left, "pre-layernorm");
  EXPECT_EQ(row("norm").right, "pre-rmsnorm");
  EXPECT_TRUE(row("norm").differs);
  EXPECT_EQ(row("positions").right, "rope");
  EXPECT_EQ(row("attention").left.substr(0, 3), "MHA");
  EXPECT_EQ(row("attention").right.substr(0, 3), "GQA");
  EXPECT_NE(row("feed-forward").right.find("swiglu"), std::string::npos);
  EXPECT_FALSE(row("family").differs);
  EXPECT_FALSE(row("layers x width").differs);
  EXPECT_TRUE(row("KV cache at the prompt's length").differs);  // 2 KV heads of 4: half the cache
  const auto same = architectureRows(gpt, gpt, 10, 10);
  EXPECT_TRUE(std::none_of(same.begin(), same.end(), [](const ArchitectureRow& r) { return r.differs; }));
}

}  // namespace
}  // namespace tscope

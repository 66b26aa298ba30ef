// The Efficient-attention panel's numbers (model/nn/variant_views.h) against values written out
// here: KL(exact || variant) of small distributions by hand, the top tokens before and after, the
// sliding window's receptive field, and a head's q, k, v found at the right offsets of a trace.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/core/error.h"
#include "model/nn/variant_views.h"

using namespace tscope;

TEST(VariantViews, KlOfTheSameLogitsIsZeroAndTopTokensAgree) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.0f};
  const DistributionShift shift = distributionShift(logits, logits, 2);
  EXPECT_NEAR(shift.kl, 0.0, 1e-12);
  ASSERT_EQ(shift.before.size(), 2u);
  ASSERT_EQ(shift.after.size(), 2u);
  EXPECT_EQ(shift.before[0].id, 1);
  EXPECT_EQ(shift.before[1].id, 3);
  EXPECT_EQ(shift.after[0].id, shift.before[0].id);
}

TEST(VariantViews, KlMatchesTheSumWrittenOut) {
  // p = softmax(0, log 3) = (1/4, 3/4); q = softmax(0, 0) = (1/2, 1/2).
  const std::vector<float> exact = {0.0f, std::log(3.0f)}, variant = {0.0f, 0.0f};
  const double want = 0.25 * std::log(0.25 / 0.5) + 0.75 * std::log(0.75 / 0.5);
  const DistributionShift shift = distributionShift(exact, variant, 5);
  EXPECT_NEAR(shift.kl, want, 1e-7) << "KL(p || q) of (1/4, 3/4) against (1/2, 1/2)";
  // Not symmetric: KL(q || p) is another number.
  const double reverse = 0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.75);
  EXPECT_NEAR(distributionShift(variant, exact, 5).kl, reverse, 1e-7);
  EXPECT_GT(std::abs(want - reverse), 1e-3);
  ASSERT_EQ(shift.before.size(), 2u);  // fewer tokens than asked: all of them
  EXPECT_EQ(shift.before[0].id, 1);
  EXPECT_NEAR(shift.before[0].probability, 0.75, 1e-6);
  EXPECT_NEAR(shift.after[0].probability, 0.5, 1e-6);
}

TEST(VariantViews, KlRefusesLogitsOfDifferentSizes) {
  const std::vector<float> a = {1, 2, 3}, b = {1, 2};
  EXPECT_THROW(distributionShift(a, b, 5), Error);
  EXPECT_THROW(distributionShift({}, {}, 5), Error);
}

TEST(VariantViews, WindowReceptiveFieldGrowsByWMinusOnePerLayer) {
  EXPECT_EQ(windowReceptiveField(4, 4, 100), (std::vector<int>{4, 7, 10, 13}));
  // Capped by the tokens there are before the query (position 8: 9 tokens).
  EXPECT_EQ(windowReceptiveField(4, 4, 8), (std::vector<int>{4, 7, 9, 9}));
  // A window of 1 sees only the query itself in every layer.
  EXPECT_EQ(windowReceptiveField(1, 3, 50), (std::vector<int>{1, 1, 1}));
}

TEST(VariantViews, TraceHeadQkvPointsAtTheHeadsRows) {
  // Two captured layers, H = 4 heads over Hkv = 2 kv heads, T = Tk = 3, D = 2; every value encodes its index.
  Trace trace;
  trace.T = trace.Tk = 3;
  trace.rowPositions = {0, 1, 2};
  trace.H = 4;
  trace.Hkv = 2;
  trace.D = 2;
  trace.internalLayers = {1, 3};
  const size_t qSize = 2 * 4 * 3 * 2, kvSize = 2 * 2 * 3 * 2;
  for (size_t i = 0; i < qSize; ++i) trace.q.push_back((float)i);
  for (size_t i = 0; i < kvSize; ++i) trace.k.push_back((float)i), trace.v.push_back(1000.0f + (float)i);
  ModelConfig config;
  config.causal = false;
  const HeadQkv qkv = traceHeadQkv(trace, config, 3, 3);  // layer index 1, head 3 -> kv head 1
  EXPECT_EQ(qkv.n, 3);
  EXPECT_EQ(qkv.d, 2);
  EXPECT_FALSE(qkv.causal);
  EXPECT_EQ(qkv.q[0], (float)((1 * 4 + 3) * 3 * 2));
  EXPECT_EQ(qkv.k[0], (float)((1 * 2 + 1) * 3 * 2));
  EXPECT_EQ(qkv.v[5], 1000.0f + (float)((1 * 2 + 1) * 3 * 2 + 5));
  EXPECT_THROW(traceHeadQkv(trace, config, 2, 0), Error);  // layer 2 not captured
  EXPECT_THROW(traceHeadQkv(trace, config, 1, 4), Error);  // no head 4
  trace.rowPositions = {2};                                // the Inside panel's one query row
  EXPECT_THROW(traceHeadQkv(trace, config, 1, 0), Error);
  trace.rowPositions = {1, 2, 3};  // three rows, not from position 0
  EXPECT_THROW(traceHeadQkv(trace, config, 1, 0), Error);
}

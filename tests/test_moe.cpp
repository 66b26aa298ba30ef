// MoE routing against hand-worked cases: the top-2 lecture example (Shazeer et al. 2017), expert
// capacity and drops, the Switch load-balancing loss (Fedus et al. 2021) under uniform and
// collapsed routing, and expert choice (Zhou et al. 2022). Expected values are computed by hand here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/nn/moe.h"

using namespace tscope;

namespace {

MoeRoutingParams tokenChoice(int experts, int topK, double capacityFactor, double alpha = 0.01) {
  MoeRoutingParams p;
  p.experts = experts;
  p.topK = topK;
  p.capacityFactor = capacityFactor;
  p.auxLossAlpha = alpha;
  return p;
}

MoeRoutingParams expertChoice(int experts, int topK, double capacityFactor, double alpha = 0.01) {
  MoeRoutingParams p = tokenChoice(experts, topK, capacityFactor, alpha);
  p.expertChoice = true;
  return p;
}

// Token t's logits are `row` rotated right by t, so token t's favourite is expert (argmax + t) % E.
std::vector<float> cyclicLogits(const std::vector<float>& row, int tokens) {
  const int E = static_cast<int>(row.size());
  std::vector<float> logits(static_cast<size_t>(tokens) * E);
  for (int t = 0; t < tokens; ++t)
    for (int e = 0; e < E; ++e) logits[static_cast<size_t>(t) * E + e] = row[((e - t) % E + E) % E];
  return logits;
}

std::vector<float> repeatRow(const std::vector<float>& row, int tokens) {
  std::vector<float> logits;
  for (int t = 0; t < tokens; ++t) logits.insert(logits.end(), row.begin(), row.end());
  return logits;
}

double softmaxEntry(const std::vector<float>& row, int index) {
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v));
  return std::exp(static_cast<double>(row[index])) / sum;
}

std::string errorMessage(const std::vector<float>& logits, int tokens, const MoeRoutingParams& params) {
  try {
    routeTokens(logits, tokens, params);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<int> keptExperts(const MoeRouting& r, int token) {
  std::vector<int> experts;
  for (const auto& a : r.assignments)
    if (a.token == token && !a.dropped) experts.push_back(a.expert);
  return experts;
}

}  // namespace

// The lecture example: top-2 of eight experts picks expert 5 (logit 3.2) then expert 1 (2.1),
// counting from 1; the gates are softmax([3.2, 2.1]) = [sigmoid(1.1), 1 - sigmoid(1.1)].
TEST(Moe, LectureExampleTopTwoOfEight) {
  const std::vector<float> logits = {2.1f, 0.3f, 1.8f, 0.1f, 3.2f, 0.5f, 1.1f, 0.8f};
  const MoeRouting r = routeTokens(logits, 1, tokenChoice(8, 2, 1.25));
  ASSERT_EQ(r.assignments.size(), 2u);
  EXPECT_EQ(r.assignments[0].expert, 4);
  EXPECT_EQ(r.assignments[1].expert, 0);
  EXPECT_EQ(r.assignments[0].rank, 0);
  EXPECT_EQ(r.assignments[1].rank, 1);
  EXPECT_NEAR(r.assignments[0].gate, 0.75, 0.005);
  EXPECT_NEAR(r.assignments[1].gate, 0.25, 0.005);
  const double sigmoid = 1.0 / (1.0 + std::exp(-(3.2 - 2.1)));  // 0.750260...
  EXPECT_NEAR(r.assignments[0].gate, sigmoid, 1e-6);
  EXPECT_NEAR(r.assignments[1].gate, 1.0 - sigmoid, 1e-6);
  EXPECT_FALSE(r.assignments[0].dropped || r.assignments[1].dropped);
  EXPECT_TRUE(r.droppedTokens.empty());
  // Router probabilities are the softmax over all eight experts.
  ASSERT_EQ(r.routerProbs.size(), 8u);
  double largest = 0;
  for (int e = 0; e < 8; ++e) largest = std::max(largest, std::abs(r.routerProbs[e] - softmaxEntry(logits, e)));
  EXPECT_LT(largest, 1e-7) << "largest |routerProbs - softmax| = " << largest;
  EXPECT_EQ(r.load, (std::vector<int>{1, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(r.routerLogits, logits);
}

// Qwen1.5-MoE's norm_topk_prob false: the same two experts, their gates the softmax over all
// eight logits (not renormalised over the two), so they sum to less than 1.
TEST(Moe, UnnormalizedTopKGatesAreTheFullSoftmaxProbabilities) {
  const std::vector<float> logits = {2.1f, 0.3f, 1.8f, 0.1f, 3.2f, 0.5f, 1.1f, 0.8f};
  MoeRoutingParams params = tokenChoice(8, 2, 0);
  params.normalizeTopK = false;
  const MoeRouting r = routeTokens(logits, 1, params);
  ASSERT_EQ(r.assignments.size(), 2u);
  EXPECT_EQ(r.assignments[0].expert, 4);
  EXPECT_EQ(r.assignments[1].expert, 0);
  EXPECT_NEAR(r.assignments[0].gate, softmaxEntry(logits, 4), 1e-7);
  EXPECT_NEAR(r.assignments[1].gate, softmaxEntry(logits, 0), 1e-7);
  const double sum = r.assignments[0].gate + r.assignments[1].gate;
  EXPECT_LT(sum, 0.9) << "unrenormalised gates sum to " << sum;
  // Renormalised, they are the normalised routing's gates.
  const MoeRouting normalised = routeTokens(logits, 1, tokenChoice(8, 2, 0));
  EXPECT_NEAR(r.assignments[0].gate / sum, normalised.assignments[0].gate, 1e-6);
  EXPECT_NEAR(r.assignments[1].gate / sum, normalised.assignments[1].gate, 1e-6);
}

TEST(Moe, CapacityFollowsTheFactor) {
  EXPECT_EQ(expertCapacity(16, tokenChoice(8, 2, 1.25)), 3);  // ceil(2.5)
  EXPECT_EQ(expertCapacity(8, tokenChoice(8, 2, 1.25)), 2);   // ceil(1.25)
  EXPECT_EQ(expertCapacity(16, tokenChoice(8, 2, 1.0)), 2);   // exactly 2, no rounding up
  EXPECT_EQ(expertCapacity(25, tokenChoice(11, 2, 2.2)), 5);  // 25 / 11 * 2.2 = 5 + 1e-15 in doubles
  EXPECT_EQ(expertCapacity(0, tokenChoice(8, 2, 1.25)), 0);
  EXPECT_EQ(expertCapacity(16, tokenChoice(8, 2, 0.0)), -1);  // no limit
  EXPECT_EQ(expertCapacity(16, tokenChoice(8, 2, -1.0)), -1);
  // Expert choice: ceil(T k / E * factor), at most T; no factor lets every expert take every token.
  EXPECT_EQ(expertCapacity(16, expertChoice(8, 2, 1.25)), 5);  // ceil(5.0)
  EXPECT_EQ(expertCapacity(16, expertChoice(8, 2, 1.0)), 4);
  EXPECT_EQ(expertCapacity(4, expertChoice(8, 8, 2.0)), 4);  // 8 capped at T = 4
  EXPECT_EQ(expertCapacity(16, expertChoice(8, 2, 0.0)), 16);
}

TEST(Moe, ExpertsFillInTokenOrderAndLaterAssignmentsDrop) {
  // Six tokens all preferring expert 2, top-1, capacity ceil(6 / 4 * 1.0) = 2.
  const MoeRouting r = routeTokens(repeatRow({0.f, 1.f, 5.f, -1.f}, 6), 6, tokenChoice(4, 1, 1.0));
  EXPECT_EQ(r.capacity, 2);
  ASSERT_EQ(r.assignments.size(), 6u);
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(r.assignments[t].token, t);
    EXPECT_EQ(r.assignments[t].expert, 2);
    EXPECT_EQ(r.assignments[t].dropped, t >= 2) << "token " << t;
    EXPECT_FLOAT_EQ(r.assignments[t].gate, 1.0f) << "a dropped assignment keeps its gate for display";
  }
  EXPECT_EQ(r.load, (std::vector<int>{0, 0, 2, 0}));
  EXPECT_EQ(r.droppedTokens, (std::vector<int>{2, 3, 4, 5}));
  // f counts assignments before drops: expert 2 received all of them.
  EXPECT_EQ(r.fraction, (std::vector<float>{0, 0, 1, 0}));
}

TEST(Moe, TokenOrderComesBeforeRankOrder) {
  // Capacity ceil(4 / 4 * 1.0) = 1. Processing in (token, rank) order:
  //   token 0: expert 0 kept, expert 1 kept
  //   token 1: expert 1 full (token 0's second choice got there first), expert 2 kept
  //   token 2: expert 0 full, expert 2 full -> the token is dropped
  //   token 3: expert 3 kept, expert 2 full
  // Rank-major order (all first choices, then all second) would give expert 1 to token 1 instead.
  const std::vector<float> logits = {
      9,  5, 0, -9,  // token 0
      0,  9, 5, -9,  // token 1
      9,  0, 5, -9,  // token 2
      -9, 0, 5, 9,   // token 3
  };
  const MoeRouting r = routeTokens(logits, 4, tokenChoice(4, 2, 1.0));
  EXPECT_EQ(r.capacity, 1);
  ASSERT_EQ(r.assignments.size(), 8u);
  EXPECT_EQ(keptExperts(r, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(keptExperts(r, 1), (std::vector<int>{2}));
  EXPECT_EQ(keptExperts(r, 2), (std::vector<int>{}));
  EXPECT_EQ(keptExperts(r, 3), (std::vector<int>{3}));
  EXPECT_EQ(r.droppedTokens, (std::vector<int>{2}));
  EXPECT_EQ(r.load, (std::vector<int>{1, 1, 1, 1}));
  // Assignments are listed in (token, rank) order, drops included.
  for (size_t i = 0; i < r.assignments.size(); ++i) {
    EXPECT_EQ(r.assignments[i].token, static_cast<int>(i / 2));
    EXPECT_EQ(r.assignments[i].rank, static_cast<int>(i % 2));
  }
  // f before drops: experts 0 and 1 got 2 of 8 assignments each, expert 2 three, expert 3 one.
  EXPECT_EQ(r.fraction, (std::vector<float>{0.25f, 0.25f, 0.375f, 0.125f}));
}

TEST(Moe, UnlimitedCapacityDropsNothing) {
  const MoeRouting r = routeTokens(repeatRow({0.f, 1.f, 5.f, -1.f}, 6), 6, tokenChoice(4, 2, 0.0));
  EXPECT_EQ(r.capacity, -1);
  for (const auto& a : r.assignments) EXPECT_FALSE(a.dropped);
  EXPECT_EQ(r.load, (std::vector<int>{0, 6, 6, 0}));
  EXPECT_TRUE(r.droppedTokens.empty());
}

// Switch loss: alpha * E * sum f_i P_i is alpha when both f and P are uniform (1/E each).
TEST(Moe, AuxLossIsAlphaUnderUniformRouting) {
  const std::vector<float> row = {3.0f, 1.0f, 0.5f, -1.0f, 0.25f};  // E = 5
  const int E = 5;
  for (int k : {1, 2, 3}) {
    // Token t's logits are the row rotated by t: each expert is some token's rank-r choice
    // exactly once for every r, and the mean of the rotated softmaxes is exactly uniform.
    const MoeRouting r = routeTokens(cyclicLogits(row, E), E, tokenChoice(E, k, 0.0, 0.01));
    for (int e = 0; e < E; ++e) {
      EXPECT_FLOAT_EQ(r.fraction[e], 0.2f) << "k=" << k << " expert " << e;
      EXPECT_NEAR(r.meanProb[e], 0.2, 1e-7) << "k=" << k << " expert " << e;
      EXPECT_EQ(r.load[e], k);
    }
    EXPECT_NEAR(r.auxLoss, 0.01, 1e-8) << "k=" << k;
    // With k = 1 token t's choice is expert t, the argmax of its rotated row.
    if (k == 1) {
      for (int t = 0; t < E; ++t) EXPECT_EQ(r.assignments[t].expert, t);
    }
  }
}

TEST(Moe, AuxLossGrowsWhenRoutingCollapses) {
  const std::vector<float> row = {3.0f, 1.0f, 0.5f, -1.0f, 0.25f};
  const int E = 5;
  const double alpha = 0.01;
  // Every token identical: all go to expert 0, f = (1, 0, 0, 0, 0), P = softmax(row).
  const MoeRouting collapsed = routeTokens(repeatRow(row, E), E, tokenChoice(E, 1, 0.0, alpha));
  EXPECT_EQ(collapsed.fraction, (std::vector<float>{1, 0, 0, 0, 0}));
  const double expected = alpha * E * 1.0 * softmaxEntry(row, 0);  // 0.01 * 5 * 0.7722... = 0.0386
  EXPECT_NEAR(collapsed.auxLoss, expected, 1e-7);
  const MoeRouting uniform = routeTokens(cyclicLogits(row, E), E, tokenChoice(E, 1, 0.0, alpha));
  EXPECT_GT(collapsed.auxLoss, 3 * uniform.auxLoss) << "collapsed " << collapsed.auxLoss << " vs uniform " << uniform.auxLoss;
}

// Switch Transformer: k = 1, one expert per token; the gate is softmax over the single kept
// logit, i.e. 1 (as documented in moe.h: G = softmax(KeepTopK(h, k))).
TEST(Moe, SwitchTopOneTakesTheArgmax) {
  const std::vector<float> logits = {0.1f, 0.9f, 0.3f,   // argmax 1
                                     2.0f, -1.f, 2.0f,   // tie between 0 and 2 -> 0
                                     -3.f, -2.f, -1.f};  // argmax 2
  const MoeRouting r = routeTokens(logits, 3, tokenChoice(3, 1, 0.0));
  ASSERT_EQ(r.assignments.size(), 3u);
  const int expectedExpert[] = {1, 0, 2};
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(r.assignments[t].token, t);
    EXPECT_EQ(r.assignments[t].expert, expectedExpert[t]);
    EXPECT_EQ(r.assignments[t].rank, 0);
    EXPECT_FLOAT_EQ(r.assignments[t].gate, 1.0f);
  }
}

TEST(Moe, EqualLogitsGoToTheLowerExpertIds) {
  const MoeRouting r = routeTokens(std::vector<float>(6, 0.7f), 1, tokenChoice(6, 3, 0.0));
  ASSERT_EQ(r.assignments.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.assignments[i].expert, i);
    EXPECT_FLOAT_EQ(r.assignments[i].gate, 1.0f / 3);
  }
}

TEST(Moe, HugeLogitsStayFinite) {
  const std::vector<float> logits = {1000.f, 999.f, -1000.f, 998.f};
  const MoeRouting r = routeTokens(logits, 1, tokenChoice(4, 2, 0.0));
  EXPECT_EQ(r.assignments[0].expert, 0);
  EXPECT_EQ(r.assignments[1].expert, 1);
  EXPECT_NEAR(r.assignments[0].gate, 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  for (float p : r.routerProbs) EXPECT_TRUE(std::isfinite(p));
  EXPECT_EQ(r.routerProbs[2], 0.0f);
  EXPECT_TRUE(std::isfinite(r.auxLoss));
}

// Invariants on a pseudo-random batch: the top-k are the k largest logits in order, gates sum
// to 1, loads respect capacity and sum to the kept assignments, f and P are distributions.
TEST(Moe, LoadsAndDistributionsAddUp) {
  const int T = 40, E = 8, k = 2;
  std::vector<float> logits(T * E);
  uint32_t state = 12345;
  for (float& v : logits) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 6.0f - 3.0f;
  }
  // Skew towards expert 3 so that some assignments drop.
  for (int t = 0; t < T; ++t) logits[t * E + 3] += 2.0f;
  const MoeRouting r = routeTokens(logits, T, tokenChoice(E, k, 1.25));
  EXPECT_EQ(r.capacity, 7);  // ceil(40 / 8 * 1.25) = ceil(6.25)
  ASSERT_EQ(r.assignments.size(), static_cast<size_t>(T * k));
  int kept = 0;
  for (int t = 0; t < T; ++t) {
    const MoeAssignment& first = r.assignments[t * k];
    const MoeAssignment& second = r.assignments[t * k + 1];
    EXPECT_NEAR(first.gate + second.gate, 1.0, 1e-6);
    EXPECT_GE(first.gate, second.gate);
    // The rank-r expert has exactly r experts with a larger logit (logits are distinct here).
    for (const MoeAssignment* a : {&first, &second}) {
      const float chosen = logits[t * E + a->expert];
      const int larger = static_cast<int>(std::count_if(logits.begin() + t * E, logits.begin() + (t + 1) * E, [&](float v) { return v > chosen; }));
      EXPECT_EQ(larger, a->rank) << "token " << t;
    }
    const bool tokenDropped = first.dropped && second.dropped;
    EXPECT_EQ(tokenDropped, std::count(r.droppedTokens.begin(), r.droppedTokens.end(), t) == 1) << "token " << t;
    kept += !first.dropped + !second.dropped;
  }
  EXPECT_LT(kept, T * k) << "the skew should make expert 3 overflow";
  EXPECT_EQ(std::accumulate(r.load.begin(), r.load.end(), 0), kept);
  for (int e = 0; e < E; ++e) EXPECT_LE(r.load[e], r.capacity);
  EXPECT_EQ(r.load[3], r.capacity);
  EXPECT_NEAR(std::accumulate(r.fraction.begin(), r.fraction.end(), 0.0), 1.0, 1e-6);
  EXPECT_NEAR(std::accumulate(r.meanProb.begin(), r.meanProb.end(), 0.0), 1.0, 1e-6);
  double sumFP = 0;
  for (int e = 0; e < E; ++e) sumFP += static_cast<double>(r.fraction[e]) * r.meanProb[e];
  EXPECT_NEAR(r.auxLoss, 0.01 * E * sumFP, 1e-7);
  EXPECT_GT(r.auxLoss, 0.01) << "skewed routing costs more than uniform";
}

TEST(Moe, ExpertChoicePicksEachExpertsTopTokens) {
  // E = 3, T = 5, k = 1, factor 1: capacity ceil(5 / 3) = 2.
  const std::vector<float> logits = {
      3,    3,    -3,    // token 0: experts 0 and 1 (S ~ 0.499 each)
      0,    0,    0,     // token 1: S = 1/3 everywhere
      -3,   -3,   3,     // token 2: expert 2 (S ~ 0.995)
      1,    0,    2,     // token 3: S = (0.245, 0.090, 0.665)
      0.2f, 0.2f, 0.2f,  // token 4: S = 1/3 everywhere, ties with token 1 and loses (higher id)
  };
  const MoeRouting r = routeTokens(logits, 5, expertChoice(3, 1, 1.0));
  EXPECT_EQ(r.capacity, 2);
  struct Pick {
    int expert, token, rank;
  };
  const std::vector<Pick> expected = {{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {1, 1, 1}, {2, 2, 0}, {2, 3, 1}};
  ASSERT_EQ(r.assignments.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const MoeAssignment& a = r.assignments[i];
    EXPECT_EQ(a.expert, expected[i].expert) << "assignment " << i;
    EXPECT_EQ(a.token, expected[i].token) << "assignment " << i;
    EXPECT_EQ(a.rank, expected[i].rank) << "assignment " << i;
    EXPECT_FALSE(a.dropped);
    EXPECT_FLOAT_EQ(a.gate, r.routerProbs[a.token * 3 + a.expert]);
  }
  EXPECT_NEAR(r.assignments[4].gate, 1.0 / (1.0 + 2.0 * std::exp(-6.0)), 1e-6);
  EXPECT_EQ(r.droppedTokens, (std::vector<int>{4}));
  EXPECT_EQ(r.load, (std::vector<int>{2, 2, 2}));
  // Every expert makes the same number of picks, so f is uniform and the loss is alpha * sum P = alpha.
  for (float f : r.fraction) EXPECT_FLOAT_EQ(f, 1.0f / 3);
  EXPECT_NEAR(r.auxLoss, 0.01, 1e-8);
}

TEST(Moe, ExpertChoiceWithoutFactorTakesEveryToken) {
  const MoeRouting r = routeTokens({1, 2, 3, 4, 5, 6}, 3, expertChoice(2, 1, 0.0));
  EXPECT_EQ(r.capacity, 3);
  EXPECT_EQ(r.assignments.size(), 6u);
  EXPECT_EQ(r.load, (std::vector<int>{3, 3}));
  EXPECT_TRUE(r.droppedTokens.empty());
}

TEST(Moe, NoTokensGiveAnEmptyRouting) {
  for (const MoeRoutingParams& params : {tokenChoice(8, 2, 1.25), expertChoice(8, 2, 1.25)}) {
    const MoeRouting r = routeTokens({}, 0, params);
    EXPECT_EQ(r.tokens, 0);
    EXPECT_EQ(r.experts, 8);
    EXPECT_TRUE(r.assignments.empty());
    EXPECT_TRUE(r.droppedTokens.empty());
    EXPECT_TRUE(r.routerProbs.empty());
    EXPECT_EQ(r.load, std::vector<int>(8, 0));
    EXPECT_EQ(r.auxLoss, 0.0f);
  }
}

TEST(Moe, BadInputIsRejectedWithOneLineNamingTheRule) {
  const std::vector<float> eight(8, 0.0f);
  EXPECT_EQ(errorMessage(eight, 1, tokenChoice(8, 9, 1.25)), "moe_top_k (9) must be at most n_experts (8)");
  EXPECT_EQ(errorMessage(eight, 1, tokenChoice(8, 0, 1.25)), "moe_top_k (0) must be at least 1");
  EXPECT_EQ(errorMessage({}, 0, tokenChoice(0, 1, 1.25)), "n_experts (0) must be at least 1");
  EXPECT_EQ(errorMessage(eight, 2, tokenChoice(8, 2, 1.25)), "router logits size (8) must be tokens * n_experts (2 * 8 = 16)");
  EXPECT_EQ(errorMessage(eight, -1, tokenChoice(8, 2, 1.25)), "tokens (-1) must not be negative");
  std::vector<float> withNan = eight;
  withNan[5] = std::nanf("");
  EXPECT_EQ(errorMessage(withNan, 2, tokenChoice(4, 2, 1.25)), "router logit of token 1, expert 1 must be finite (got nan)");
  std::vector<float> withInf = eight;
  withInf[0] = -INFINITY;
  EXPECT_EQ(errorMessage(withInf, 1, expertChoice(8, 2, 1.25)), "router logit of token 0, expert 0 must be finite (got -inf)");
  EXPECT_THROW(expertCapacity(4, tokenChoice(2, 3, 1.0)), Error);
  EXPECT_NO_THROW(routeTokens(eight, 1, tokenChoice(8, 8, 1.25)));  // k = E is allowed
}

// The lecture's alternative load-balancing loss, alpha CV(f)^2 (appendix A7), by hand: equal
// values 0; one expert with everything E - 1; {0.5, 0.5, 0, 0}: mean 1/4, variance 1/16, so 1.
TEST(Moe, CvSquaredOfTheFractionsByHand) {
  EXPECT_EQ(tscope::cvSquared({0.25f, 0.25f, 0.25f, 0.25f}), 0.0);
  EXPECT_NEAR(tscope::cvSquared({1.0f, 0.0f, 0.0f, 0.0f}), 3.0, 1e-12);
  EXPECT_NEAR(tscope::cvSquared({0.5f, 0.5f, 0.0f, 0.0f}), 1.0, 1e-12);
  EXPECT_NEAR(tscope::cvSquared({0.1f, 0.2f, 0.3f, 0.4f}), 0.0125 / 0.0625, 1e-6);  // variance 0.0125, mean 0.25
  EXPECT_EQ(tscope::cvSquared({}), 0.0);
  EXPECT_EQ(tscope::cvSquared({0.0f, 0.0f}), 0.0);
}

// The lecture's worked example typed in (Advanced Transformers, the MoE router slide): logits
// [2.1, 0.3, 1.8, 0.1, 3.2, 0.5, 1.1, 0.8], top-2: experts 5 and 1 (indices 4 and 0), gates
// exp(3.2) / (exp(3.2) + exp(2.1)) = 0.750 and 0.250, through the same routing the model runs.
TEST(Moe, TypedRouterLogitsGiveTheSlidesGates) {
  const tscope::TypedRouterLogits typed = tscope::parseRouterLogits("2.1, 0.3, 1.8, 0.1, 3.2, 0.5, 1.1, 0.8\n");
  ASSERT_EQ(typed.tokens, 1);
  ASSERT_EQ(typed.experts, 8);
  tscope::MoeRoutingParams params;
  params.experts = 8;
  params.topK = 2;
  params.capacityFactor = 0;
  const tscope::MoeRouting r = tscope::routeTokens(typed.logits, typed.tokens, params);
  ASSERT_EQ(r.assignments.size(), 2u);
  EXPECT_EQ(r.assignments[0].expert, 4);
  EXPECT_EQ(r.assignments[1].expert, 0);
  const double g = std::exp(3.2) / (std::exp(3.2) + std::exp(2.1));
  EXPECT_NEAR(r.assignments[0].gate, g, 1e-6);
  EXPECT_NEAR(r.assignments[1].gate, 1 - g, 1e-6);
  EXPECT_NEAR(g, 0.750, 5e-4);
  // Several tokens, blanks as separators, blank lines skipped.
  const tscope::TypedRouterLogits two = tscope::parseRouterLogits("1 2 3\n\n 3,2 , 1 \n");
  EXPECT_EQ(two.tokens, 2);
  EXPECT_EQ(two.logits, (std::vector<float>{1, 2, 3, 3, 2, 1}));
}

TEST(Moe, TypedRouterLogitsRefuseBadLinesInOneLine) {
  auto message = [](const std::string& text) {
    try {
      tscope::parseRouterLogits(text);
    } catch (const tscope::Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("").find("no logits"), std::string::npos);
  EXPECT_NE(message("1, x, 3").find("line 1, item 2: 'x' is not a number"), std::string::npos);
  EXPECT_NE(message("1, 2, 3\n1, 2").find("line 2: 2 logits, but the first token has 3"), std::string::npos);
  EXPECT_NE(message("5").find("2 to 64 experts"), std::string::npos);
  EXPECT_NE(message("1, inf").find("not a finite logit"), std::string::npos);
  EXPECT_NE(message("1, nan").find("not a finite logit"), std::string::npos);
  EXPECT_NE(message("1, 1e9").find("not a finite logit"), std::string::npos);
  std::string many;
  for (int t = 0; t < 65; ++t) many += "1, 2\n";
  EXPECT_NE(message(many).find("more than 64 tokens"), std::string::npos);
  EXPECT_NE(message("1, 2\xff").find("not a number"), std::string::npos);
  for (const std::string& line : {std::string("1, 2, 3"), std::string("1e-3 -4 2.5e2")}) EXPECT_EQ(message(line), "(accepted)") << line;
}

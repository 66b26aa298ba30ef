// Tests for model/generate/sampling.h: the PRNG, every stage of the logit pipeline, the statistics of seeded
// draws (chi-squared fit, plus a check that the same test rejects a slightly wrong sampler).
// Beam search is tested in test_beam_search.cpp.
#include "model/generate/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model/core/error.h"

namespace tscope {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> randomLogits(Rng& rng, int vocab, double scale = 4.0) {
  std::vector<float> logits(vocab);
  for (float& logit : logits) logit = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return logits;
}

double total(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += v;
  return sum;
}

std::vector<float> logsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// Pearson's statistic sum (observed - expected)^2 / expected over categories with expected > 0.
double chiSquared(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
  double statistic = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) continue;
    const double expected = probs[i] * draws;
    statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return statistic;
}

// --- Rng ---------------------------------------------------------------------------------------

TEST(SamplingRng, SameSeedRepeatsDifferentSeedsDiffer) {
  Rng a(7), b(7), c(8);
  int sameAsOtherSeed = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t drawA = a.next(), drawB = b.next(), drawC = c.next();
    ASSERT_EQ(drawA, drawB) << "seed 7 twice diverged at draw " << i;
    sameAsOtherSeed += drawA == drawC;
  }
  EXPECT_EQ(sameAsOtherSeed, 0) << "seeds 7 and 8 gave equal 64-bit draws";
}

TEST(SamplingRng, MatchesReferenceStream) {
  // First outputs for seeds 0 and 42, from a separate Python transcription of splitmix64 (whose
  // seed-0 outputs e220a8397b1dcdaf, 6e789e6aa1b965f4, ... are the published ones) feeding
  // xoshiro256**. Pins the stream so the same seed gives the same text everywhere.
  Rng zero(0), fortyTwo(42);
  EXPECT_EQ(zero.next(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(zero.next(), 0xbf6e1f784956452aull);
  EXPECT_EQ(zero.next(), 0x1a5f849d4933e6e0ull);
  EXPECT_EQ(fortyTwo.next(), 0x15780b2e0c2ec716ull);
  Rng forUniform(9), shadow(9);  // uniform() is the top 53 bits of next() scaled by 2^-53
  for (int i = 0; i < 64; ++i) ASSERT_EQ(forUniform.uniform(), static_cast<double>(shadow.next() >> 11) * 0x1.0p-53);
}

TEST(SamplingRng, UniformStaysInUnitIntervalAndCoversIt) {
  Rng rng(123);
  double lowest = 1, highest = 0, sum = 0;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lowest = std::min(lowest, u);
    highest = std::max(highest, u);
    sum += u;
  }
  EXPECT_LT(lowest, 1e-4);
  EXPECT_GT(highest, 1 - 1e-4);
  EXPECT_NEAR(sum / draws, 0.5, 0.005) << "mean of " << draws << " uniforms";  // std error 0.00065
}

// --- Validation and the pipeline ---------------------------------------------------------------

TEST(SamplingValidate, AcceptsDefaultsAndNamesTheBrokenField) {
  EXPECT_STREQ(validateSamplingParams(SamplingParams{}), "");
  auto messageFor = [](auto change) {
    SamplingParams params;
    change(params);
    return std::string(validateSamplingParams(params));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -1.0f, nan, inf})
    EXPECT_NE(messageFor([bad](SamplingParams& p) { p.temperature = bad; }).find("temperature"), std::string::npos) << "temperature " << bad;
  EXPECT_NE(messageFor([](SamplingParams& p) { p.topK = -1; }).find("top_k"), std::string::npos);
  for (float bad : {0.0f, -0.5f, 1.5f, nan})
    EXPECT_NE(messageFor([bad](SamplingParams& p) { p.topP = bad; }).find("top_p"), std::string::npos) << "top_p " << bad;
  EXPECT_EQ(messageFor([](SamplingParams& p) {
              p.topP = 1.0f;
              p.topK = 100000;
              p.temperature = 1e-6f;
            }),
            "");
  SamplingParams invalid;
  invalid.topP = 0;
  EXPECT_THROW(processLogits(std::vector<float>{1, 2}, invalid), Error);
}

TEST(ProcessLogits, EveryStageSumsToOneAndFilteredTokensAreExactlyZero) {
  Rng rng(1);
  double worstSumError = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int vocab = 2 + static_cast<int>(rng.uniform() * 60);
    const std::vector<float> logits = randomLogits(rng, vocab);
    SamplingParams params;
    params.temperature = static_cast<float>(0.2 + 2 * rng.uniform());
    params.topK = static_cast<int>(rng.uniform() * (vocab + 3));
    params.topP = static_cast<float>(0.05 + 0.95 * rng.uniform());
    const LogitStages stages = processLogits(logits, params);
    for (const auto* stage : {&stages.raw, &stages.afterTemperature, &stages.afterTopK, &stages.afterTopP}) {
      ASSERT_EQ(static_cast<int>(stage->size()), vocab);
      worstSumError = std::max(worstSumError, std::abs(total(*stage) - 1));
    }
    // A token filtered at one stage is exactly 0 in every later one; with no ties, top-k leaves k.
    int nonzeroTopK = 0;
    for (int i = 0; i < vocab; ++i) {
      nonzeroTopK += stages.afterTopK[i] > 0;
      if (stages.afterTopK[i] == 0) {
        EXPECT_EQ(stages.afterTopP[i], 0.0f);
      }
    }
    const bool topKFilters = params.topK > 0 && params.topK < vocab;
    EXPECT_EQ(nonzeroTopK, topKFilters ? params.topK : vocab) << "trial " << trial;
    // The nucleus reaches p, and dropping its least likely member would fall short of p.
    double nucleusMass = 0, leastKept = 1;
    for (int i = 0; i < vocab; ++i) {
      if (stages.afterTopP[i] == 0) continue;
      nucleusMass += stages.afterTopK[i];
      leastKept = std::min<double>(leastKept, stages.afterTopK[i]);
    }
    EXPECT_GE(nucleusMass, params.topP - 1e-5) << "trial " << trial;
    EXPECT_LT(nucleusMass - leastKept, params.topP + 1e-5) << "trial " << trial;
  }
  EXPECT_LT(worstSumError, 1e-5) << "largest |sum - 1| over all stages";
}

TEST(ProcessLogits, HandlesNegativeInfinityAndRejectsImpossibleInput) {
  const LogitStages stages = processLogits(std::vector<float>{kNegInf, 0, kNegInf, 0}, SamplingParams{});
  EXPECT_EQ(stages.raw, (std::vector<float>{0, 0.5f, 0, 0.5f}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(processLogits(std::vector<float>{kNegInf, kNegInf}, SamplingParams{}), Error);
  EXPECT_THROW(processLogits(std::vector<float>{0, nan}, SamplingParams{}), Error);
  EXPECT_THROW(processLogits(std::vector<float>{0, -kNegInf}, SamplingParams{}), Error);
  EXPECT_THROW(processLogits(std::vector<float>{}, SamplingParams{}), Error);
}

TEST(ProcessLogits, TopKKeepsExactlyKBreakingTiesByLowerId) {
  SamplingParams params;
  params.topK = 2;
  const LogitStages stages = processLogits(std::vector<float>{1, 2, 2, 2, 0}, params);
  EXPECT_EQ(stages.afterTopK, (std::vector<float>{0, 0.5f, 0.5f, 0, 0})) << "three tie at the boundary";
  params.topK = 6;  // larger than V: no filtering
  const std::vector<float> logits{0.3f, -1, 2, 0.5f, 1};
  const LogitStages unfiltered = processLogits(logits, params);
  EXPECT_EQ(unfiltered.afterTopK, unfiltered.afterTemperature);
  EXPECT_EQ(unfiltered.afterTopP, unfiltered.afterTemperature);
}

TEST(ProcessLogits, TopPKeepsTheSmallestNucleus) {
  // Probabilities 0.2, 0.4, 0.1, 0.3 by id; sorted 0.4 (id 1), 0.3 (id 3), 0.2 (id 0), 0.1 (id 2).
  const std::vector<float> logits = logsOf({0.2, 0.4, 0.1, 0.3});
  auto nucleus = [&logits](float topP) {
    SamplingParams params;
    params.topP = topP;
    return processLogits(logits, params).afterTopP;
  };
  auto expectNear = [](const std::vector<float>& got, const std::vector<float>& want, float topP) {
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == 0) {
        EXPECT_EQ(got[i], 0.0f) << "top_p " << topP << " id " << i;
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-6) << "top_p " << topP << " id " << i;
      }
    }
  };
  expectNear(nucleus(0.01f), {0, 1, 0, 0}, 0.01f);              // always at least one token
  expectNear(nucleus(0.4f), {0, 1, 0, 0}, 0.4f);                // 0.4 reaches 0.4 exactly
  expectNear(nucleus(0.65f), {0, 4 / 7.f, 0, 3 / 7.f}, 0.65f);  // 0.4 + 0.3 = 0.7 >= 0.65
  expectNear(nucleus(0.75f), {2 / 9.f, 4 / 9.f, 0, 3 / 9.f}, 0.75f);
  expectNear(nucleus(1.0f), {0.2f, 0.4f, 0.1f, 0.3f}, 1.0f);
  // Top-p acts on the top-k distribution: k = 2 leaves 4/7, 3/7, so p = 0.5 keeps id 1 alone.
  SamplingParams both;
  both.topK = 2;
  both.topP = 0.5f;
  expectNear(processLogits(logits, both).afterTopP, {0, 1, 0, 0}, 0.5f);
}

TEST(ProcessLogits, TemperatureLimits) {
  const std::vector<float> logits{1.0f, 1.5f, 0.2f, -3.0f, 1.49f, 0.0f, 2.0f, -1.0f, 0.7f, 1.9f};
  SamplingParams cold;
  cold.temperature = 0.005f;
  const std::vector<float> coldProbs = processLogits(logits, cold).afterTemperature;
  EXPECT_GT(coldProbs[6], 1 - 1e-6) << "T = 0.005 puts the mass on the argmax (id 6)";
  cold.temperature = 1e-30f;  // (logit - max) / T is huge but must not overflow into NaN
  EXPECT_EQ(processLogits(logits, cold).afterTemperature[6], 1.0f);
  SamplingParams hot;
  hot.temperature = 1000.0f;
  const std::vector<float> hotProbs = processLogits(logits, hot).afterTemperature;
  double worst = 0;
  for (float p : hotProbs) worst = std::max(worst, std::abs(p - 0.1));
  EXPECT_LT(worst, 1e-3) << "T = 1000 is nearly uniform; largest |p - 1/V|";
}

TEST(ProcessLogits, KeptSetsMatchAFullSortOnALargeVocab) {
  // Large V exercises the chunked partial sorts; the reference sorts every id.
  Rng rng(17);
  const int vocab = 20000;
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<float> logits = randomLogits(rng, vocab, 6.0);
    for (int i = 0; i < vocab; i += 7) logits[i] = std::round(logits[i]);  // plenty of ties
    SamplingParams params;
    params.topK = trial % 3 == 0 ? 0 : static_cast<int>(rng.uniform() * vocab);
    params.topP = trial % 3 == 1 ? 1.0f : static_cast<float>(0.3 + 0.69 * rng.uniform());
    const LogitStages stages = processLogits(logits, params);
    std::vector<int> ranked(vocab);
    for (int i = 0; i < vocab; ++i) ranked[i] = i;
    std::stable_sort(ranked.begin(), ranked.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    const int keptByK = params.topK > 0 ? params.topK : vocab;
    int keptByP = 0;
    for (double mass = 0; keptByP < keptByK && mass < params.topP - 1e-6;) mass += stages.afterTopK[ranked[keptByP++]];
    if (params.topP == 1.0f) keptByP = keptByK;
    for (int rank = 0; rank < vocab; ++rank) {
      ASSERT_EQ(stages.afterTopK[ranked[rank]] > 0, rank < keptByK) << "trial " << trial << " rank " << rank;
      ASSERT_EQ(stages.afterTopP[ranked[rank]] > 0, rank < keptByP) << "trial " << trial << " rank " << rank;
    }
  }
}

TEST(ProcessLogits, AKnobDragOnTheSameLogitsGivesTheStagesOfAFreshRunBitForBit) {
  // A knob drag reruns the pipeline on the same logits with the scratch of the last call: the
  // stages the knob does not reach and the sorted ids are kept. Every stage must be what a fresh
  // run gives, through a walk over every knob (and back), with top-p alone needing ever more of the
  // order sorted, and after new logits (which must not reuse anything).
  Rng rng(29);
  const int vocab = 30000;
  std::vector<float> logits = randomLogits(rng, vocab, 8.0);
  for (int i = 0; i < vocab; i += 5) logits[i] = std::round(logits[i]);  // ties
  const SamplingParams walk[] = {
      {.temperature = 1.0f},
      {.temperature = 0.7f},
      {.temperature = 0.7f, .topK = 50},
      {.temperature = 0.7f, .topK = 50, .topP = 0.9f},
      {.temperature = 0.7f, .topK = 5000, .topP = 0.9f},
      {.temperature = 0.7f, .topK = 0, .topP = 0.5f},
      {.temperature = 0.7f, .topK = 0, .topP = 0.999f},  // sorts further than before
      {.temperature = 1.6f, .topK = 0, .topP = 0.999f},
      {.temperature = 1.6f, .topK = 12, .topP = 1.0f},
      {.temperature = 1.0f, .topK = 12, .topP = 1.0f},
      {.temperature = 1.0f},
  };
  SamplingScratch scratch;
  bool same = false;
  for (int pass = 0; pass < 2; ++pass) {
    for (const SamplingParams& params : walk) {
      processLogits(logits, params, scratch, same);
      same = true;
      const LogitStages fresh = processLogits(logits, params);
      SCOPED_TRACE("pass " + std::to_string(pass) + " T " + std::to_string(params.temperature) + " k " + std::to_string(params.topK) + " p " +
                   std::to_string(params.topP));
      ASSERT_EQ(scratch.stages.raw, fresh.raw);
      ASSERT_EQ(scratch.stages.afterTemperature, fresh.afterTemperature);
      ASSERT_EQ(scratch.stages.afterTopK, fresh.afterTopK);
      ASSERT_EQ(scratch.stages.afterTopP, fresh.afterTopP);
    }
    logits = randomLogits(rng, vocab, 3.0);  // other logits: the caller says so, nothing is reused
    same = false;
  }
}

// --- Drawing -----------------------------------------------------------------------------------

TEST(Sampling, TopKDrawsNeverLeaveTheTopK) {
  Rng logitRng(5), drawRng(6);
  SamplingParams params;
  params.topK = 3;
  params.temperature = 3.0f;  // flatten so tokens outside the top 3 would be drawn if not filtered
  SamplingScratch scratch;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::vector<float> logits = randomLogits(logitRng, 20);
    const int drawn = sampleNext(logits, params, drawRng, scratch);
    int higher = 0;
    for (float logit : logits) higher += logit > logits[drawn];
    ASSERT_LT(higher, 3) << "trial " << trial << " drew a token ranked " << higher;
  }
}

TEST(Sampling, ChiSquaredFitsTheDistributionAndRejectsAWrongOne) {
  const std::vector<double> probs{0.25, 0.02, 0.15, 0.05, 0.10, 0.08, 0.12, 0.03, 0.13, 0.07};
  std::vector<double> wrong = probs;
  std::swap(wrong[4], wrong[6]);  // 0.10 <-> 0.12: a slightly wrong sampler
  const std::vector<float> rightF(probs.begin(), probs.end()), wrongF(wrong.begin(), wrong.end());
  const double critical9Dof = 27.877;  // chi-squared 0.999 quantile, 9 degrees of freedom (p = 0.001)
  const int draws = 10000;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::vector<int> rightCounts(10, 0), wrongCounts(10, 0);
    Rng rightRng(seed), wrongRng(seed);
    for (int i = 0; i < draws; ++i) {
      ++rightCounts[sampleFromProbs(rightF, rightRng)];
      ++wrongCounts[sampleFromProbs(wrongF, wrongRng)];
    }
    EXPECT_LT(chiSquared(rightCounts, probs, draws), critical9Dof) << "seed " << seed;
    // Power: the same test must notice a 0.02 swap (non-centrality ~73, so it fails ~99.9%).
    EXPECT_GT(chiSquared(wrongCounts, probs, draws), critical9Dof) << "seed " << seed << ": test has no power";
  }
}

TEST(Sampling, WholePipelineDrawsMatchTheHandComputedDistribution) {
  // sampleNext with T = 0.5 and top-k 5 over log(probs): expected p_i ~ probs_i^2 on the top 5.
  const std::vector<double> probs{0.25, 0.02, 0.15, 0.05, 0.10, 0.08, 0.12, 0.03, 0.13, 0.07};
  std::vector<double> expected(10, 0);
  double norm = 0;
  for (int id : {0, 2, 4, 6, 8}) norm += probs[id] * probs[id];
  for (int id : {0, 2, 4, 6, 8}) expected[id] = probs[id] * probs[id] / norm;
  SamplingParams params;
  params.temperature = 0.5f;
  params.topK = 5;
  Rng rng(99);
  std::vector<int> counts(10, 0);
  const int draws = 10000;
  const std::vector<float> logits = logsOf(probs);
  for (int i = 0; i < draws; ++i) ++counts[sampleNext(logits, params, rng)];
  for (int id : {1, 3, 5, 7, 9}) EXPECT_EQ(counts[id], 0) << "filtered id " << id << " was drawn";
  EXPECT_LT(chiSquared(counts, expected, draws), 18.467);  // 0.999 quantile, 4 degrees of freedom
}

TEST(Sampling, OneUniformDrawThroughTheInverseCdf) {
  const std::vector<float> probs{0.1f, 0, 0.25f, 0.4f, 0.25f};
  Rng rng(21), shadow(21);  // shadow replays the same uniforms
  for (int i = 0; i < 5000; ++i) {
    const double u = shadow.uniform();
    int expected = 0;  // first id whose cumulative mass exceeds u (the sum is 1 here)
    for (double cumulative = probs[0]; expected < 4 && !(u < cumulative); cumulative += probs[++expected]) {
    }
    ASSERT_EQ(sampleFromProbs(probs, rng), expected) << "draw " << i << ", u = " << u;
  }
}

TEST(Sampling, NeverDrawsZeroProbabilityTokensEvenWhenMassIsShort) {
  const std::vector<float> probs{0, 0.3f, 0, 0.3f, 0.3f, 0, 0};  // sums to 0.9, zeros at both ends
  Rng rng(11);
  std::vector<int> counts(probs.size(), 0);
  for (int i = 0; i < 30000; ++i) ++counts[sampleFromProbs(probs, rng)];
  for (int id : {0, 2, 5, 6}) EXPECT_EQ(counts[id], 0) << "zero-probability id " << id;
  for (int id : {1, 3, 4}) EXPECT_NEAR(counts[id] / 30000.0, 1 / 3.0, 0.015) << "id " << id;
  EXPECT_THROW(sampleFromProbs(std::vector<float>{0, 0}, rng), Error);
  EXPECT_THROW(sampleFromProbs(std::vector<float>{0.5f, -0.1f}, rng), Error);
}

TEST(Sampling, GreedyPicksArgmaxAndDrawsNothing) {
  Rng logitRng(3), drawRng(4), untouched(4);
  SamplingParams params;
  params.greedy = true;
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<float> logits = randomLogits(logitRng, 30);
    const int best = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ASSERT_EQ(sampleNext(logits, params, drawRng), best) << "trial " << trial;
  }
  EXPECT_EQ(drawRng.next(), untouched.next()) << "greedy consumed random draws";
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, kNegInf}), 1) << "ties go to the lower id";
}

}  // namespace
}  // namespace tscope

// Tests for model/sampling.h: the PRNG, every stage of the logit pipeline, the statistics of seeded
// draws (chi-squared fit, plus a check that the same test rejects a slightly wrong sampler), and
// beam search against brute-force enumeration on a fake model that keeps real per-slot state.
#include "model/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model/error.h"

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
    EXPECT_NE(messageFor([bad](SamplingParams& p) { p.temperature = bad; }).find("temperature"), std::string::npos)
        << "temperature " << bad;
  EXPECT_NE(messageFor([](SamplingParams& p) { p.topK = -1; }).find("top_k"), std::string::npos);
  for (float bad : {0.0f, -0.5f, 1.5f, nan})
    EXPECT_NE(messageFor([bad](SamplingParams& p) { p.topP = bad; }).find("top_p"), std::string::npos) << "top_p " << bad;
  EXPECT_EQ(messageFor([](SamplingParams& p) { p.topP = 1.0f; p.topK = 100000; p.temperature = 1e-6f; }), "");
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
  expectNear(nucleus(0.01f), {0, 1, 0, 0}, 0.01f);               // always at least one token
  expectNear(nucleus(0.4f), {0, 1, 0, 0}, 0.4f);                 // 0.4 reaches 0.4 exactly
  expectNear(nucleus(0.65f), {0, 4 / 7.f, 0, 3 / 7.f}, 0.65f);   // 0.4 + 0.3 = 0.7 >= 0.65
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
    for (double cumulative = probs[0]; expected < 4 && !(u < cumulative); cumulative += probs[++expected]) {}
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

// --- Beam search -------------------------------------------------------------------------------

// A "random tree" language model: the logits after a sequence are a pseudo-random function of the
// whole sequence (prompt included), plus an optional bonus on EOS; rounded to integers when asked,
// to force ties. Slots keep the sequence so far, so a wrong or missing copy changes later logits.
std::vector<float> logitsAfter(const std::vector<int>& sequence, int vocab, int eos, float eosBonus,
                               bool integerLogits = false) {
  uint64_t hash = 1469598103934665603ull;
  for (int token : sequence) hash = (hash ^ static_cast<uint64_t>(token + 1)) * 1099511628211ull;
  Rng rng(hash);
  std::vector<float> logits = randomLogits(rng, vocab, 3.0);
  if (eos >= 0) logits[eos] += eosBonus;
  if (integerLogits)
    for (float& logit : logits) logit = std::round(logit);
  return logits;
}

double logSoftmaxAt(const std::vector<float>& logits, int token) {
  double sum = 0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit));
  return logits[token] - std::log(sum);
}

struct SequenceModel : BeamModel {
  int vocab, eos;
  float eosBonus;
  bool brokenCopy = false;  // ignore copySlot, to show the tests would notice
  bool integerLogits = false;
  std::vector<std::vector<int>> slots;
  std::vector<int> feedLengths;  // length of every feed call, in order

  SequenceModel(int vocabSize, int slotCount, int eosId = -1, float bonus = 0)
      : vocab(vocabSize), eos(eosId), eosBonus(bonus), slots(slotCount) {}
  int vocabSize() const override { return vocab; }
  int slotCount() const override { return static_cast<int>(slots.size()); }
  void copySlot(int from, int to) override {
    EXPECT_NE(from, to);
    if (!brokenCopy) slots.at(to) = slots.at(from);
  }
  void feed(int slot, std::span<const int> tokens, std::vector<float>& logits) override {
    slots.at(slot).insert(slots.at(slot).end(), tokens.begin(), tokens.end());
    feedLengths.push_back(static_cast<int>(tokens.size()));
    logits = logitsAfter(slots[slot], vocab, eos, eosBonus, integerLogits);
  }
  // Log-probability of `generated` after `prompt`, recomputed from scratch.
  double logProbOf(const std::vector<int>& prompt, const std::vector<int>& generated) const {
    std::vector<int> sequence = prompt;
    double logProb = 0;
    for (int token : generated) {
      logProb += logSoftmaxAt(logitsAfter(sequence, vocab, eos, eosBonus), token);
      sequence.push_back(token);
    }
    return logProb;
  }
};

const std::vector<int> kPrompt{2, 0, 3};

std::vector<int> promptNumber(int n) { return {n % 5, (n / 5) % 5, 1}; }

std::vector<int> tokensTo(const BeamResult& result, int node) {
  std::vector<int> tokens;
  for (; node > 0; node = result.nodes[node].parent) tokens.insert(tokens.begin(), result.nodes[node].token);
  return tokens;
}

// Best sequence over every continuation of up to `length` tokens that stops early only at EOS.
void bruteForceBest(const SequenceModel& model, const std::vector<int>& prompt, int length,
                    std::vector<int>& bestTokens, double& bestLogProb) {
  bestLogProb = -1e300;
  std::function<void(std::vector<int>&)> visit = [&](std::vector<int>& generated) {
    const bool ended = static_cast<int>(generated.size()) == length || (!generated.empty() && generated.back() == model.eos);
    if (ended) {
      const double logProb = model.logProbOf(prompt, generated);
      if (logProb > bestLogProb) bestLogProb = logProb, bestTokens = generated;
      return;
    }
    for (int token = 0; token < model.vocab; ++token) {
      generated.push_back(token);
      visit(generated);
      generated.pop_back();
    }
  };
  std::vector<int> generated;
  visit(generated);
}

TEST(BeamSearch, WideBeamFindsTheBruteForceOptimum) {
  int narrowMisses = 0;  // how often width 2 misses it: shows the instances are not trivial
  for (int n = 0; n < 20; ++n) {
    for (int eos : {-1, 4}) {  // without EOS: all 125 sequences of length 3; with: also shorter ones
      SequenceModel model(5, 2 * 25, eos, 1.0f);
      const BeamResult result = beamSearch(model, promptNumber(n), 25, 3, eos);  // 25 = V^2 prunes nothing
      std::vector<int> bestTokens;
      double bestLogProb = 0;
      bruteForceBest(model, promptNumber(n), 3, bestTokens, bestLogProb);
      EXPECT_EQ(result.bestTokens, bestTokens) << "prompt " << n << ", eos " << eos;
      EXPECT_NEAR(result.bestLogProb, bestLogProb, 1e-4) << "prompt " << n << ", eos " << eos;
      narrowMisses += beamSearch(model, promptNumber(n), 2, 3, eos).bestTokens != bestTokens;
    }
  }
  EXPECT_GT(narrowMisses, 0);
}

TEST(BeamSearch, WidthOneIsGreedy) {
  SequenceModel model(5, 2);
  const BeamResult result = beamSearch(model, kPrompt, 1, 6);
  std::vector<int> sequence = kPrompt, greedy;
  for (int step = 0; step < 6; ++step) {
    greedy.push_back(argmax(logitsAfter(sequence, 5, -1, 0)));
    sequence.push_back(greedy.back());
  }
  EXPECT_EQ(result.bestTokens, greedy);
  EXPECT_NEAR(result.bestLogProb, model.logProbOf(kPrompt, greedy), 1e-4);
}

TEST(BeamSearch, TreeInvariantsHold) {
  const int width = 3, maxNew = 4, vocab = 12;
  for (int n = 0; n < 10; ++n) {
    SCOPED_TRACE("prompt " + std::to_string(n));
    const std::vector<int> prompt = promptNumber(n);
    SequenceModel model(vocab, 2 * width);
    model.integerLogits = n % 2 == 1;  // ties everywhere: children and survivors go to lower ids
    const BeamResult result = beamSearch(model, prompt, width, maxNew);
    const auto& nodes = result.nodes;
    ASSERT_EQ(nodes[0].parent, -1);
    EXPECT_TRUE(nodes[0].kept && nodes[0].inBest);
    std::vector<int> keptAtDepth(maxNew + 1, 0), nodesAtDepth(maxNew + 1, 0), bestAtDepth(maxNew + 1, 0);
    std::vector<std::vector<int>> children(nodes.size());
    for (size_t i = 1; i < nodes.size(); ++i) {
      const BeamNode& node = nodes[i];
      ASSERT_GE(node.parent, 0);
      ASSERT_LT(node.parent, static_cast<int>(i));
      const BeamNode& parent = nodes[node.parent];
      EXPECT_EQ(parent.depth, node.depth - 1) << "node " << i;
      EXPECT_TRUE(parent.kept) << "node " << i << " grew from a pruned parent";
      EXPECT_FLOAT_EQ(node.logProb, parent.logProb + node.tokenLogProb) << "node " << i;
      children[node.parent].push_back(node.token);
      ++nodesAtDepth[node.depth];
      keptAtDepth[node.depth] += node.kept;
      bestAtDepth[node.depth] += node.inBest;
      if (node.inBest) {
        EXPECT_TRUE(parent.inBest && node.kept) << "inBest chain broken at node " << i;
      }
    }
    // Each expanded node's children are its `width` most likely next tokens, best first.
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].kept || nodes[i].depth == maxNew) continue;
      std::vector<int> sequence = prompt, top(vocab);
      for (int token : tokensTo(result, static_cast<int>(i))) sequence.push_back(token);
      const std::vector<float> logits = logitsAfter(sequence, vocab, -1, 0, model.integerLogits);
      for (int id = 0; id < vocab; ++id) top[id] = id;
      std::stable_sort(top.begin(), top.end(), [&logits](int a, int b) { return logits[a] > logits[b]; });
      top.resize(width);
      EXPECT_EQ(children[i], top) << "children of node " << i;
    }
    for (int depth = 1; depth <= maxNew; ++depth) {
      EXPECT_EQ(keptAtDepth[depth], width) << "depth " << depth;
      EXPECT_EQ(nodesAtDepth[depth], (depth == 1 ? 1 : width) * width) << "depth " << depth;
      EXPECT_EQ(bestAtDepth[depth], 1) << "depth " << depth;
      float worstKept = 1, bestPruned = -1e30f;  // kept nodes are the best `width` at their depth
      for (const BeamNode& node : nodes) {
        if (node.depth != depth) continue;
        if (node.kept) worstKept = std::min(worstKept, node.logProb);
        else bestPruned = std::max(bestPruned, node.logProb);
      }
      EXPECT_GE(worstKept, bestPruned) << "depth " << depth;
      int lastKeptAtCut = -1, firstPrunedAtCut = static_cast<int>(nodes.size());  // ties: earlier node
      for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
        if (nodes[i].depth != depth || nodes[i].logProb != worstKept) continue;
        if (nodes[i].kept) lastKeptAtCut = i;
        else firstPrunedAtCut = std::min(firstPrunedAtCut, i);
      }
      EXPECT_LT(lastKeptAtCut, firstPrunedAtCut) << "depth " << depth;
    }
    int bestLeaf = -1;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].inBest && nodes[i].depth == maxNew) bestLeaf = static_cast<int>(i);
    ASSERT_GE(bestLeaf, 0);
    EXPECT_EQ(tokensTo(result, bestLeaf), result.bestTokens);
    EXPECT_EQ(nodes[bestLeaf].logProb, result.bestLogProb);
    ASSERT_EQ(result.finalBeams.size(), static_cast<size_t>(width));
    EXPECT_EQ(result.finalBeams[0], result.bestTokens);
    EXPECT_TRUE(std::is_sorted(result.finalLogProbs.rbegin(), result.finalLogProbs.rend())) << "best first";
    float bestLeafLogProb = -1e30f;
    for (const BeamNode& node : nodes)
      if (node.depth == maxNew) bestLeafLogProb = std::max(bestLeafLogProb, node.logProb);
    EXPECT_EQ(result.bestLogProb, bestLeafLogProb) << "best is the top candidate of the last step";
  }
}
// Largest |tokenLogProb - value recomputed from the node's full sequence| over the tree. Slots
// carry the sequence, so a missing or wrong copy shows up here.
double worstNodeError(const SequenceModel& model, const BeamResult& result) {
  double worst = 0;
  for (size_t i = 1; i < result.nodes.size(); ++i) {
    std::vector<int> sequence = kPrompt;
    const std::vector<int> parentTokens = tokensTo(result, result.nodes[i].parent);
    sequence.insert(sequence.end(), parentTokens.begin(), parentTokens.end());
    const double expected = logSoftmaxAt(logitsAfter(sequence, model.vocab, model.eos, model.eosBonus), result.nodes[i].token);
    worst = std::max(worst, std::abs(expected - result.nodes[i].tokenLogProb));
  }
  return worst;
}

TEST(BeamSearch, SlotCopiesCarryTheRightStateAndThePromptIsFedOnce) {
  const int width = 3, maxNew = 5;
  SequenceModel model(5, 2 * width);
  const BeamResult result = beamSearch(model, kPrompt, width, maxNew);
  EXPECT_LT(worstNodeError(model, result), 1e-5) << "largest tokenLogProb error against recomputation";
  for (size_t b = 0; b < result.finalBeams.size(); ++b)
    EXPECT_NEAR(result.finalLogProbs[b], model.logProbOf(kPrompt, result.finalBeams[b]), 1e-4) << "beam " << b;
  ASSERT_FALSE(model.feedLengths.empty());
  EXPECT_EQ(model.feedLengths[0], 3) << "the prompt goes in first, whole";
  EXPECT_EQ(std::count(model.feedLengths.begin(), model.feedLengths.end(), 1),
            static_cast<long>(model.feedLengths.size()) - 1) << "every later feed is one token";
  EXPECT_EQ(model.feedLengths.size(), 1u + width * (maxNew - 1)) << "the last step feeds nothing";

  SequenceModel broken(5, 2 * width);
  broken.brokenCopy = true;
  EXPECT_GT(worstNodeError(broken, beamSearch(broken, kPrompt, width, maxNew)), 1e-3)
      << "a model that ignores copySlot must be caught by the same check";
}

TEST(BeamSearch, EosFinishesHypothesesWhichStayInTheBeam) {
  const int eos = 4;
  SequenceModel model(5, 4, eos, 10.0f);  // EOS is nearly certain after any sequence
  const BeamResult result = beamSearch(model, kPrompt, 2, 5, eos);
  for (const BeamNode& node : result.nodes)
    if (node.parent >= 0) {
      EXPECT_NE(result.nodes[node.parent].token, eos) << "a finished hypothesis was expanded";
    }
  // Step 1 keeps {eos} and one other; step 2 expands only the other; then both are finished.
  EXPECT_EQ(result.nodes.size(), 1u + 2 + 2);
  ASSERT_EQ(result.finalBeams.size(), 2u);
  EXPECT_EQ(result.finalBeams[0], (std::vector<int>{eos}));
  EXPECT_EQ(result.finalBeams[1].size(), 2u);
  EXPECT_EQ(result.finalBeams[1].back(), eos);
  EXPECT_EQ(result.bestTokens, (std::vector<int>{eos}));
  EXPECT_NEAR(result.bestLogProb, model.logProbOf(kPrompt, {eos}), 1e-5);

  SequenceModel single(5, 2, eos, 10.0f);
  const BeamResult greedy = beamSearch(single, kPrompt, 1, 5, eos);
  EXPECT_EQ(greedy.nodes.size(), 2u) << "width 1 stops once its only hypothesis ends";
  EXPECT_EQ(single.feedLengths.size(), 1u) << "a finished hypothesis needs no feed";
}

TEST(BeamSearch, RejectsBadArguments) {
  SequenceModel model(5, 3);
  EXPECT_THROW(beamSearch(model, kPrompt, 0, 3), Error);
  EXPECT_THROW(beamSearch(model, kPrompt, 2, 3), Error) << "width 2 needs 4 slots, model has 3";
  EXPECT_THROW(beamSearch(model, std::vector<int>{}, 1, 3), Error);
  EXPECT_THROW(beamSearch(model, kPrompt, 1, -1), Error);
  const BeamResult nothing = beamSearch(model, kPrompt, 1, 0);
  EXPECT_TRUE(nothing.bestTokens.empty());
  EXPECT_EQ(nothing.nodes.size(), 1u);
}

}  // namespace
}  // namespace tscope

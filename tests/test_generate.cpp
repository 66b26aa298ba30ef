// Decoding on a real (random-weight) transformer: seeded sampling is reproducible, a Generation
// continued step by step draws the tokens of one generate() run, greedy follows
// the argmax of full forwards, and beam search through per-slot KV caches agrees with greedy at
// width 1 and with the cached log-probabilities of a full forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/core/context_fit.h"
#include "model/core/error.h"
#include "model/generate/generate.h"
#include "tests/test_helpers.h"

using namespace tscope;

namespace {

ModelConfig config() { return tscope::testing::smallConfig(2, 2, 32, 40, 48); }

double logSoftmaxAt(const float* logits, int V, int id) {
  double maxLogit = logits[0];
  for (int v = 1; v < V; ++v) maxLogit = std::max<double>(maxLogit, logits[v]);
  double sum = 0;
  for (int v = 0; v < V; ++v) sum += std::exp(logits[v] - maxLogit);
  return logits[id] - maxLogit - std::log(sum);
}

}  // namespace

TEST(Generate, SameSeedSameTextOtherSeedOtherText) {
  Weights w = tscope::testing::randomWeights(config(), 21);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  const std::vector<int> prompt = {1, 2, 3};
  SamplingParams params;
  params.temperature = 1.5f;
  params.seed = 99;
  const auto a = generate(model, prompt, 20, params).ids;
  const auto b = generate(model, prompt, 20, params).ids;
  params.seed = 100;
  const auto c = generate(model, prompt, 20, params).ids;
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);  // 20 draws at T=1.5 over 40 tokens: equal by chance with negligible probability
}

TEST(Generate, GreedyFollowsTheArgmaxOfFullForwards) {
  Weights w = tscope::testing::randomWeights(config(), 22);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  std::vector<int> sequence = {5, 6};
  SamplingParams params;
  params.greedy = true;
  const auto generated = generate(model, sequence, 10, params).ids;
  for (int id : generated) {
    const auto logits = model.logitsFor(sequence);
    EXPECT_EQ(id, argmax(std::span(logits).subspan(logits.size() - 40)));
    sequence.push_back(id);
  }
}

TEST(Generate, StopsAtTheContextAndRejectsLongPrompts) {
  Weights w = tscope::testing::randomWeights(config(), 23);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  const std::vector<int> prompt(40, 1), tooLong(49, 1);
  SamplingParams params;
  const GenerationResult result = generate(model, prompt, 100, params);
  EXPECT_EQ(result.ids.size(), 8u);  // 40 + 8 fill the context
  EXPECT_EQ(result.stopped, GenerationStop::ContextFull);
  const std::vector<int> full(48, 1);
  EXPECT_TRUE(generate(model, full, 5, params).ids.empty());  // a prompt that fills the context: nothing to add
  EXPECT_EQ(generate(model, full, 5, params).stopped, GenerationStop::ContextFull);
  EXPECT_EQ(generate(model, prompt, 3, params).stopped, GenerationStop::None);
  EXPECT_THROW(generate(model, tooLong, 1, params), Error);
  params.temperature = 0;
  EXPECT_THROW(generate(model, prompt, 1, params), Error);
}

// The app's Step continues one Generation a token at a time; the CLI runs generate() once. Both
// must draw the same tokens from the same random stream, sampled or greedy.
TEST(Generation, StepByStepDrawsTheTokensOfOneRun) {
  Weights w = tscope::testing::randomWeights(config(), 25);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  const std::vector<int> prompt = {3, 1, 4, 1, 5};
  for (uint64_t seed : {1u, 2u, 77u}) {
    for (bool greedy : {false, true}) {
      SamplingParams params;
      params.temperature = 1.4f;
      params.topK = 20;
      params.topP = 0.95f;
      params.greedy = greedy;
      params.seed = seed;
      const std::vector<int> once = generate(model, prompt, 12, params).ids;
      ASSERT_EQ(once.size(), 12u);
      Generation stepped(model, prompt, params);
      for (int step = 0; step < 12; ++step) EXPECT_EQ(stepped.next(1), 1);
      EXPECT_EQ(stepped.ids(), once) << "seed " << seed << (greedy ? " greedy" : " sampled");
      Generation chunked(model, prompt, params);
      EXPECT_EQ(chunked.next(5), 5);
      EXPECT_EQ(chunked.next(7), 7);
      EXPECT_EQ(chunked.ids(), once) << "seed " << seed;
    }
  }
}

TEST(Generation, ReportsTheProbabilityOfTheTokenItDrew) {
  Weights w = tscope::testing::randomWeights(config(), 26);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  const std::vector<int> prompt = {9, 8, 7};
  SamplingParams params;
  params.temperature = 0.7f;
  params.topK = 10;
  params.seed = 5;
  Generation generation(model, prompt, params);
  double largest = 0;
  for (int step = 0; step < 6; ++step) {
    ASSERT_EQ(generation.next(1), 1);
    // The distribution it was drawn from, recomputed by a full forward of everything before it.
    std::vector<int> before = prompt;
    before.insert(before.end(), generation.ids().begin(), generation.ids().end() - 1);
    const auto logits = model.logitsFor(before);
    const LogitStages stages = processLogits(std::span(logits).subspan(logits.size() - 40), params);
    const double difference = std::abs(stages.afterTopP[generation.ids().back()] - generation.lastProbability());
    largest = std::max(largest, difference);
    EXPECT_GT(generation.lastProbability(), 0.0f);
  }
  EXPECT_LT(largest, 1e-5) << "largest difference " << largest;
}

TEST(Generation, StopsAtTheStopTokenAndAtAFullContext) {
  Weights w = tscope::testing::randomWeights(config(), 27);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  SamplingParams params;
  params.seed = 3;
  const std::vector<int> prompt = {1, 2};
  const std::vector<int> free = generate(model, prompt, 10, params).ids;
  const int stop = free[3];
  const auto firstStop = std::find(free.begin(), free.end(), stop) - free.begin();
  Generation stopping(model, prompt, params, stop);
  EXPECT_EQ(stopping.next(10), firstStop + 1);
  EXPECT_EQ(stopping.stopped(), GenerationStop::EndOfText);
  EXPECT_EQ(stopping.next(10), 0);  // stays stopped
  Generation filling(model, std::vector<int>(45, 2), params);
  EXPECT_EQ(filling.next(2), 2);
  EXPECT_EQ(filling.stopped(), GenerationStop::None);
  EXPECT_EQ(filling.next(10), 1);  // 45 + 3 fill the 48-token context
  EXPECT_EQ(filling.stopped(), GenerationStop::ContextFull);
  EXPECT_THROW(Generation(model, std::vector<int>{}, params), Error);
  EXPECT_THROW(Generation(model, std::vector<int>{40}, params), Error);  // outside the vocabulary
}

TEST(BeamSearch, OnTheTransformerWidthOneIsGreedyAndScoresAreExact) {
  Weights w = tscope::testing::randomWeights(config(), 24);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  const std::vector<int> prompt = {7, 8, 9};
  SamplingParams greedy;
  greedy.greedy = true;
  const auto greedyIds = generate(model, prompt, 6, greedy).ids;
  TransformerBeamModel one(model, 2, 16);
  EXPECT_EQ(beamSearch(one, prompt, 1, 6).bestTokens, greedyIds);

  TransformerBeamModel four(model, 8, 16);
  const BeamResult result = beamSearch(four, prompt, 4, 6);
  ASSERT_EQ(result.bestTokens.size(), 6u);
  // The best hypothesis' score equals its log-probability under a full forward without cache.
  std::vector<int> sequence = prompt;
  sequence.insert(sequence.end(), result.bestTokens.begin(), result.bestTokens.end());
  const auto logits = model.logitsFor(sequence);
  double logProb = 0;
  for (size_t i = prompt.size(); i < sequence.size(); ++i) logProb += logSoftmaxAt(logits.data() + (i - 1) * 40, 40, sequence[i]);
  EXPECT_NEAR(result.bestLogProb, logProb, 1e-3);
  // Beam search at width 4 scores at least as well as greedy.
  std::vector<int> greedySequence = prompt;
  greedySequence.insert(greedySequence.end(), greedyIds.begin(), greedyIds.end());
  const auto greedyLogits = model.logitsFor(greedySequence);
  double greedyLogProb = 0;
  for (size_t i = prompt.size(); i < greedySequence.size(); ++i)
    greedyLogProb += logSoftmaxAt(greedyLogits.data() + (i - 1) * 40, 40, greedySequence[i]);
  EXPECT_GE(result.bestLogProb, greedyLogProb - 1e-4);
}

// The last `context` tokens are kept; pinned ones (an encoder-decoder's start token) stay first
// and the dropped ones are those between.
TEST(Generate, FitToContextKeepsThePinnedTokensFirst) {
  const std::vector<int> ids = {1, 2, 3, 4, 5, 6};
  ContextFit fit = fitToContext(ids, 4);
  EXPECT_EQ(fit.kept, (std::vector<int>{3, 4, 5, 6}));
  EXPECT_EQ(fit.dropped, (std::vector<int>{1, 2}));
  fit = fitToContext(ids, 4, 1);
  EXPECT_EQ(fit.kept, (std::vector<int>{1, 4, 5, 6}));
  EXPECT_EQ(fit.dropped, (std::vector<int>{2, 3}));
  fit = fitToContext(ids, 10, 1);  // fits: nothing dropped
  EXPECT_EQ(fit.kept, ids);
  EXPECT_TRUE(fit.dropped.empty());
  fit = fitToContext(ids, 1, 1);  // only the pinned one fits
  EXPECT_EQ(fit.kept, (std::vector<int>{1}));
  EXPECT_EQ(fit.dropped, (std::vector<int>{2, 3, 4, 5, 6}));
  fit = fitToContext(ids, 2, 3);  // more pinned than room: the first `context`
  EXPECT_EQ(fit.kept, (std::vector<int>{1, 2}));
  EXPECT_EQ(fit.dropped, (std::vector<int>{3, 4, 5, 6}));
  fit = fitToContext({}, 4, 1);
  EXPECT_TRUE(fit.kept.empty() && fit.dropped.empty());
}

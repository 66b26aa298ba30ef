// Decoding on a real (random-weight) transformer: seeded sampling is reproducible, greedy follows
// the argmax of full forwards, and beam search through per-slot KV caches agrees with greedy at
// width 1 and with the cached log-probabilities of a full forward.
#include <gtest/gtest.h>

#include <cmath>

#include "model/error.h"
#include "model/generate.h"
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
  EXPECT_EQ(generate(model, prompt, 100, params).ids.size(), 9u);  // 40 + 8 fill the context, +1 sampled
  EXPECT_THROW(generate(model, tooLong, 1, params), Error);
  params.temperature = 0;
  EXPECT_THROW(generate(model, prompt, 1, params), Error);
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

// The derived numbers the panels draw (model/nn/trace_views.h) against independent computations:
// the mask against the -inf cells of a real forward's scores (causal, windowed, bidirectional),
// the head mean against a sum over the trace's own maps, the active experts against routeTokens,
// the loss smoothing against sums written out here, and the Translation panel's encoder-decoder
// views (cross and encoder maps, each target token's probability) against the trace's own maps
// and a softmax written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/generate/sampling.h"
#include "model/nn/backend.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::randomWeights;
using tscope::testing::smallConfig;

namespace {

// The trace of a forward over T tokens of a small random model with the given masking.
Trace forwardTrace(ModelConfig config, int T) {
  Weights weights = randomWeights(config, 5);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  std::vector<int> ids(T);
  for (int t = 0; t < T; ++t) ids[t] = (t * 7 + 3) % config.vocab_size;
  Trace trace;
  model.logitsFor(ids, &trace, TraceOptions{});
  return trace;
}

ModelConfig withMasking(bool causal, int window) {
  ModelConfig c = smallConfig(2, 3, 24, 29, 16);
  c.causal = causal;
  c.attention_window = window;
  return c;
}

}  // namespace

TEST(TraceViews, MaskIsWhereTheForwardsScoresAreMinusInfinity) {
  const int T = 9;
  for (const auto& [causal, window] : {std::pair{true, 0}, std::pair{true, 3}, std::pair{false, 0}, std::pair{false, 2}}) {
    const ModelConfig c = withMasking(causal, window);
    const Trace trace = forwardTrace(c, T);
    const std::vector<uint8_t> mask = attentionMask(c, T, T);
    int masked = 0;
    for (size_t i = 0; i < mask.size(); ++i) {
      EXPECT_EQ(mask[i] != 0, std::isinf(trace.scoreMap(0, 1)[i])) << "causal " << causal << " window " << window << " cell " << i;
      masked += mask[i];
    }
    // Count check by hand: causal hides T(T-1)/2 cells; a window w hides pairs |i - j| >= w.
    int expected = 0;
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) expected += (causal && j > i) || (window > 0 && std::abs(i - j) >= window);
    EXPECT_EQ(masked, expected);
  }
}

TEST(TraceViews, MaskOfANewRowSeesTheKeysCachedBeforeIt) {
  const ModelConfig c = withMasking(true, 0);
  const std::vector<uint8_t> mask = attentionMask(c, 1, 6, 5);  // one new token at position 5
  EXPECT_EQ(mask, std::vector<uint8_t>(6, 0));
  const std::vector<uint8_t> windowed = attentionMask(withMasking(true, 2), 1, 6, 5);
  EXPECT_EQ(windowed, (std::vector<uint8_t>{1, 1, 1, 1, 0, 0}));
}

// Query head h reads kv head h / (H / Hkv), as AttentionShape says the forward does.
TEST(TraceViews, KvGroupOfIsTheHeadsSharingOneKeyValueHead) {
  ModelConfig c;
  c.n_head = 12;
  c.n_kv_head = 4;  // groups of 3
  const KvGroup g = kvGroupOf(c, 7);
  EXPECT_EQ(g.kvHead, 2);
  EXPECT_EQ(g.firstHead, 6);
  EXPECT_EQ(g.lastHead, 8);
  AttentionShape shape{1, 0, 12, 64, 1};
  shape.nKvHead = 4;
  for (int h = 0; h < 12; ++h) EXPECT_EQ(kvGroupOf(c, h).kvHead, h / (shape.nHead / shape.kvHeads())) << "head " << h;
  c.n_kv_head = 1;  // multi-query: one group of every head
  EXPECT_EQ(kvGroupOf(c, 5).firstHead, 0);
  EXPECT_EQ(kvGroupOf(c, 5).lastHead, 11);
  c.n_kv_head = 0;  // no GQA: each head alone
  EXPECT_EQ(kvGroupOf(c, 5).kvHead, 5);
  EXPECT_EQ(kvGroupOf(c, 5).lastHead, 5);
  EXPECT_THROW(kvGroupOf(c, 12), Error);
}

TEST(TraceViews, MeanOverHeadsMatchesTheTracesOwnMaps) {
  const ModelConfig c = withMasking(true, 0);
  const int T = 7;
  Trace trace = forwardTrace(c, T);
  const Trace copy = trace;  // append() takes the maps out of `trace`
  AttentionRows rows;
  rows.append(trace);
  for (bool scores : {false, true}) {
    const std::vector<float> mean = meanOverHeads(rows, 1, scores);
    double largest = 0;
    for (int i = 0; i < T * T; ++i) {
      double sum = 0;
      for (int h = 0; h < copy.H; ++h) sum += (scores ? copy.scoreMap(1, h) : copy.attnMap(1, h))[i];
      const double expected = sum / copy.H;
      if (std::isinf(expected)) {
        EXPECT_TRUE(std::isinf(mean[i]) && mean[i] < 0) << "cell " << i;
        continue;
      }
      largest = std::max(largest, std::abs(mean[i] - expected));
    }
    EXPECT_LT(largest, 1e-6) << "scores " << scores << ": largest difference " << largest;
  }
  // What the panel shows: the mean of probabilities, each row a distribution, masked cells NaN.
  const std::vector<float> shown = attentionShown(rows, c, 1, 0, true, false);
  for (int t = 0; t < T; ++t) {
    double rowSum = 0;
    for (int j = 0; j < T; ++j) {
      const float v = shown[(size_t)t * T + j];
      EXPECT_EQ(std::isnan(v), j > t) << "row " << t << " key " << j;
      if (!std::isnan(v)) rowSum += v;
    }
    EXPECT_NEAR(rowSum, 1.0, 1e-5) << "row " << t;
  }
  // One head: its own map, masked cells NaN.
  const std::vector<float> head2 = attentionShown(rows, c, 0, 2, false, false);
  const std::vector<float> direct = probabilitiesShown(copy.attnMap(0, 2), T, c);
  for (int i = 0; i < T * T; ++i) {
    EXPECT_EQ(std::isnan(head2[i]), std::isnan(direct[i]));
    if (!std::isnan(direct[i])) {
      EXPECT_EQ(head2[i], direct[i]);
    }
  }
}

TEST(TraceViews, FiniteRangeSkipsInfinitiesAndNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(finiteRange({-inf, 2.5f, nan, -1.0f, 0.5f}), std::make_pair(-1.0f, 2.5f));
  EXPECT_EQ(finiteRange({-inf, nan}), std::make_pair(0.0f, 0.0f));
}

TEST(TraceViews, ActiveExpertsAreTheRoutedGatesAndTheLoadSplitsAtCapacity) {
  // 6 tokens, 3 experts, top-1, capacity ceil(6 / 3 x 0.5) = 1: every token wants expert 0 except
  // token 4 (expert 2), so expert 0 keeps token 0 and drops tokens 1, 2, 3, 5.
  const int T = 6, E = 3;
  std::vector<float> logits(T * E, 0.0f);
  for (int t = 0; t < T; ++t) logits[t * E + (t == 4 ? 2 : 0)] = 2.0f;
  MoeRoutingParams p;
  p.experts = E;
  p.topK = 1;
  p.capacityFactor = 0.5;
  const MoeRouting r = routeTokens(logits, T, p);
  const std::vector<float> gates = activeExperts(r);
  ASSERT_EQ(gates.size(), static_cast<size_t>(T * E));
  for (int t = 0; t < T; ++t)
    for (int e = 0; e < E; ++e) {
      const bool chosen = e == (t == 4 ? 2 : 0);
      // Gates are the softmax over the chosen experts' logits: 1 for top-1; 0 at the others.
      EXPECT_NEAR(gates[t * E + e], chosen ? 1.0f : 0.0f, 1e-6) << "token " << t << " expert " << e;
    }
  const ExpertLoadSplit split = expertLoadSplit(r);
  EXPECT_EQ(split.kept, (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(split.dropped, (std::vector<float>{4, 0, 0}));
  EXPECT_EQ(split.droppedAssignments, 4);
  for (int e = 0; e < E; ++e) EXPECT_EQ(split.kept[e], static_cast<float>(r.load[e])) << "expert " << e;  // routeTokens' own count
}

TEST(TraceViews, TokensKeptCountsWhatEachSamplingStageLeaves) {
  // 10 distinct logits; top-k 4 keeps exactly 4; top-p 0.5 keeps at most those 4 and at least 1.
  std::vector<float> logits(10);
  for (int i = 0; i < 10; ++i) logits[i] = 0.3f * i;
  SamplingParams params;
  params.topK = 4;
  params.topP = 0.5f;
  const LogitStages stages = processLogits(logits, params);
  EXPECT_EQ(tokensKept(stages.raw), 10);
  EXPECT_EQ(tokensKept(stages.afterTemperature), 10);
  EXPECT_EQ(tokensKept(stages.afterTopK), 4);
  // The nucleus by hand: the fewest of the top 4 (renormalised) whose mass reaches 0.5.
  std::vector<double> top(stages.afterTopK.rbegin(), stages.afterTopK.rbegin() + 4);  // best first
  int nucleus = 0;
  for (double mass = 0; mass < 0.5; ++nucleus) mass += top[nucleus];
  EXPECT_EQ(tokensKept(stages.afterTopP), nucleus);
  EXPECT_EQ(tokensKept({0.0f, -0.0f, 1e-30f}), 1);
}

TEST(TraceViews, TrailingMeanAndBucketMeansMatchSumsWrittenOut) {
  std::vector<float> loss(23);
  for (size_t i = 0; i < loss.size(); ++i) loss[i] = static_cast<float>(5.0 / (1 + i) + 0.1 * (i % 3));
  const std::vector<double> smooth = trailingMean(loss, 4);
  double largest = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    const size_t first = i >= 3 ? i - 3 : 0;
    double sum = 0;
    for (size_t j = first; j <= i; ++j) sum += loss[j];
    largest = std::max(largest, std::abs(smooth[i] - sum / static_cast<double>(i - first + 1)));
  }
  EXPECT_LT(largest, 1e-12) << "largest difference " << largest;
  // 23 values into at most 5 points: buckets of ceil(23 / 5) = 5 steps, the last one of 3.
  const std::vector<double> values(loss.begin(), loss.end());
  std::vector<double> steps, means;
  bucketMeans(values, 5, steps, means);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_DOUBLE_EQ(steps[0], 3.0);   // steps 1..5
  EXPECT_DOUBLE_EQ(steps[4], 22.0);  // steps 21..23
  EXPECT_NEAR(means[4], (values[20] + values[21] + values[22]) / 3, 1e-12);
  std::vector<double> fewSteps, fewMeans;
  bucketMeans({1.0, 4.0}, 800, fewSteps, fewMeans);  // fewer values than points: each its own
  EXPECT_EQ(fewSteps, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(fewMeans, (std::vector<double>{1.0, 4.0}));
}

TEST(TraceViews, TopTokenIdsAreTheLargestWithTiesToTheLowerId) {
  const std::vector<float> probs = {0.1f, 0.3f, 0.05f, 0.3f, 0.25f};
  EXPECT_EQ(topTokenIds(probs, 3), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(topTokenIds(probs, 9), (std::vector<int>{1, 3, 4, 0, 2}));  // more than V: all of them
  EXPECT_TRUE(topTokenIds(probs, 0).empty());
}

namespace {

// A small random encoder-decoder, its source encoded and a target run with a trace.
struct EncoderDecoderRun {
  Trace trace;
  EncoderTrace encoder;
  std::vector<float> logits;  // (T, V)
  std::vector<int> target;
};

EncoderDecoderRun encoderDecoderRun(int S, int T) {
  ModelConfig c = smallConfig(2, 3, 24, 29, 16);
  c.n_encoder_layer = 2;
  c.decoder_start_token_id = 1;
  c.eos_token_id = 2;
  const Weights weights = randomWeights(c, 9);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  std::vector<int> source(S);
  for (int s = 0; s < S; ++s) source[s] = (s * 5 + 4) % c.vocab_size;
  EncoderDecoderRun run;
  model.encode(source, &run.encoder);
  run.target = {c.decoder_start_token_id};
  for (int t = 1; t < T; ++t) run.target.push_back((t * 11 + 3) % c.vocab_size);
  run.logits = model.logitsFor(run.target, &run.trace, TraceOptions{});
  return run;
}

}  // namespace

TEST(TraceViews, CrossAndEncoderMapsAreTheTracesHeadsAndTheirMean) {
  const int S = 7, T = 5;
  const EncoderDecoderRun run = encoderDecoderRun(S, T);
  const Trace& trace = run.trace;
  ASSERT_EQ(trace.S, S);
  ASSERT_EQ(trace.layers.size(), 2u);
  double worst = 0;
  for (int li = 0; li < 2; ++li) {
    const std::vector<float> one = crossAttentionShown(trace, li, 1, false), mean = crossAttentionShown(trace, li, 0, true);
    ASSERT_EQ(one.size(), (size_t)T * S);
    ASSERT_EQ(mean.size(), (size_t)T * S);
    for (size_t i = 0; i < one.size(); ++i) {
      worst = std::max(worst, (double)std::abs(one[i] - trace.crossMap(li, 1)[i]));
      double sum = 0;
      for (int h = 0; h < trace.H; ++h) sum += trace.crossMap(li, h)[i];
      worst = std::max(worst, std::abs(mean[i] - sum / trace.H));
    }
    for (int t = 0; t < T; ++t) {  // every row of the mean is still a distribution over the source
      double row = 0;
      for (int j = 0; j < S; ++j) row += mean[(size_t)t * S + j];
      EXPECT_NEAR(row, 1.0, 1e-5) << "layer " << li << " row " << t;
    }
  }
  for (int l = 0; l < 2; ++l) {
    const std::vector<float> one = encoderAttentionShown(run.encoder, l, 2, false), mean = encoderAttentionShown(run.encoder, l, 0, true);
    ASSERT_EQ(one.size(), (size_t)S * S);
    for (size_t i = 0; i < one.size(); ++i) {
      worst = std::max(worst, (double)std::abs(one[i] - run.encoder.attnMap(l, 2)[i]));
      double sum = 0;
      for (int h = 0; h < run.encoder.H; ++h) sum += run.encoder.attnMap(l, h)[i];
      worst = std::max(worst, std::abs(mean[i] - sum / run.encoder.H));
    }
    int positive = 0;  // bidirectional: later source tokens get weight too
    for (int j = 1; j < S; ++j) positive += mean[j] > 0;
    EXPECT_EQ(positive, S - 1) << "encoder layer " << l << ": row 0 should see every source token";
  }
  EXPECT_LT(worst, 1e-6) << "largest difference from the trace's own maps";
  EXPECT_THROW(crossAttentionShown(trace, 2, 0, false), Error);
  EXPECT_THROW(crossAttentionShown(trace, 0, 3, false), Error);
  EXPECT_THROW(encoderAttentionShown(run.encoder, 2, 0, false), Error);
  EXPECT_THROW(crossAttentionShown(forwardTrace(withMasking(true, 0), 4), 0, 0, false), Error);  // decoder-only: no cross maps
}

TEST(TraceViews, SequenceTokenProbabilitiesAreEachNextTokensSoftmax) {
  // Rows of logits log(p) + c: the softmax gives p back whatever the constant.
  const int V = 4;
  const std::vector<float> logits = {std::log(0.1f) + 3,
                                     std::log(0.2f) + 3,
                                     std::log(0.3f) + 3,
                                     std::log(0.4f) + 3,  // after ids[0]
                                     std::log(0.7f) - 5,
                                     std::log(0.1f) - 5,
                                     std::log(0.1f) - 5,
                                     std::log(0.1f) - 5,  // after ids[0..1]
                                     0,
                                     0,
                                     0,
                                     0};  // after the last: unused
  const std::vector<int> ids = {1, 3, 0};
  const std::vector<float> p = sequenceTokenProbabilities(logits, ids, V);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NEAR(p[0], 0.4f, 1e-6);
  EXPECT_NEAR(p[1], 0.7f, 1e-6);
  EXPECT_TRUE(sequenceTokenProbabilities(std::vector<float>(V, 0.0f), std::vector<int>{2}, V).empty());
  EXPECT_THROW(sequenceTokenProbabilities(logits, std::vector<int>{1, 3}, V), Error);     // 3 rows for 2 ids
  EXPECT_THROW(sequenceTokenProbabilities(logits, std::vector<int>{1, 9, 0}, V), Error);  // outside the vocabulary
  // On a real decoder: the probability of each target token equals the softmax of the forward's row.
  const EncoderDecoderRun run = encoderDecoderRun(6, 5);
  const int realV = static_cast<int>(run.logits.size() / run.target.size());
  const std::vector<float> real = sequenceTokenProbabilities(run.logits, run.target, realV);
  ASSERT_EQ(real.size(), run.target.size() - 1);
  double worst = 0;
  for (size_t t = 0; t + 1 < run.target.size(); ++t) {
    double sum = 0;
    for (int v = 0; v < realV; ++v) sum += std::exp((double)run.logits[t * realV + v]);
    worst = std::max(worst, std::abs(real[t] - std::exp((double)run.logits[t * realV + run.target[t + 1]]) / sum));
  }
  EXPECT_LT(worst, 1e-6) << "largest difference from exp(logit) / sum exp(logits)";
}

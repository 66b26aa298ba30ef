// The trainability lab settings (config.h): norm "none" and residual false, each against a change
// computed by hand or by an independent construction, on the reference backend:
//   norm none, pre-norm   layer 0's queries read the raw embedding; the logits are the last residual
//                         times the unembedding (no final norm); no norm parameters are counted;
//   norm none, post-norm  the stream after each sublayer is x + f(x), nothing renormalised;
//   residual false        = the same weights with the what-if skip-residual at every layer;
// and the config's round trip, its rules, the presets of the shipped comparison.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/nn/transformer.h"
#include "model/nn/what_if.h"
#include "model/theory/cost.h"
#include "model/train/train_presets.h"
#include "tests/test_helpers.h"

namespace tscope {
namespace {

using testing::compare;

TEST(Trainability, ConfigRoundTripsAndItsRulesSayWhy) {
  ModelConfig c = testing::smallConfig(2, 2, 16, 20, 16);
  c.norm = NormKind::None;
  c.residual = false;
  const nlohmann::json j = configToJson(c);
  EXPECT_EQ(j.at("norm"), "none");
  EXPECT_EQ(j.at("residual"), false);
  const ModelConfig back = configFromJson(j);
  EXPECT_EQ(back.norm, NormKind::None);
  EXPECT_FALSE(back.residual);
  EXPECT_FALSE(configToJson(testing::smallConfig(2, 2, 16, 20, 16)).contains("residual"));  // the default is left out
  ModelConfig bad = c;
  bad.causal = false;
  bad.mlm_head = true;
  EXPECT_NE(validateConfig(bad).find("norm none"), std::string::npos) << validateConfig(bad);
  nlohmann::json wrong = j;
  wrong["residual"] = "yes";
  EXPECT_THROW(configFromJson(wrong), Error);
}

TEST(Trainability, NoNormHasNoNormParameters) {
  ModelConfig c = testing::smallConfig(2, 2, 16, 20, 16);
  const int64_t withNorms = countParameters(c).total;
  c.norm = NormKind::None;
  const ParamCounts none = countParameters(c);
  EXPECT_EQ(none.layerNorm, 0);
  EXPECT_EQ(withNorms - none.total, (2 * 2 + 1) * 2 * 16);  // ln_1, ln_2 per layer and ln_f, gain and bias of C each
  const Weights weights(c);
  EXPECT_GE((int64_t)weights.totalFloats(), none.total);
  EXPECT_EQ(weights.lnfWeight, nullptr);
  EXPECT_EQ(weights.layers[0].ln1Weight, nullptr);
}

TEST(Trainability, NoNormPreNormReadsTheRawStream) {
  ModelConfig c = testing::smallConfig(2, 2, 16, 20, 16);
  c.norm = NormKind::None;
  const Weights weights = testing::randomWeights(c, 31);
  auto backend = makeReferenceBackend();
  Transformer model(weights, *backend);
  const int T = 6, C = c.n_embd, V = c.vocab_size, D = c.headDim(), H = c.n_head;
  const std::vector<int> ids = testing::sequence(T, V, 3);
  Trace trace;
  const std::vector<float> logits = model.logitsFor(ids, &trace, testing::componentsAndInternals(0));
  // Layer 0's queries: the raw embedding times W_Q plus its bias, no norm between (no RoPE here).
  const float* Wqkv = weights.layers[0].qkvWeight;
  const float* bqkv = weights.layers[0].qkvBias;
  double worst = 0;
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d) {
        double q = bqkv[h * D + d];
        for (int k = 0; k < C; ++k) q += (double)trace.embedded[(size_t)t * C + k] * Wqkv[(size_t)k * c.qkvDim() + h * D + d];
        worst = std::max(worst, std::abs(q - trace.q[((size_t)h * T + t) * D + d]));
      }
  EXPECT_LT(worst, 1e-4);
  // The logits: the last residual times the (tied) unembedding.
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int k = 0; k < C; ++k) s += (double)trace.finalResid[(size_t)t * C + k] * weights.wte[(size_t)v * C + k];
      ASSERT_NEAR(logits[(size_t)t * V + v], s, 1e-4 * (1 + std::abs(s)));
    }
}

TEST(Trainability, NoNormPostNormAddsWithoutRenormalising) {
  ModelConfig c = testing::smallConfig(2, 2, 16, 20, 16);
  c.norm = NormKind::None;
  c.pre_norm = false;
  const Weights weights = testing::randomWeights(c, 32);
  auto backend = makeReferenceBackend();
  Transformer model(weights, *backend);
  const int T = 5, C = c.n_embd;
  Trace trace;
  model.logitsFor(testing::sequence(T, c.vocab_size, 4), &trace, testing::componentsAndInternals(1));
  const int li = *trace.capturedIndex(1);
  const float* mid = trace.residAfterAttn.data() + (size_t)li * T * C;
  const float* out = trace.residAfterMlp.data() + (size_t)li * T * C;
  const float* mlp = trace.mlpOut.data() + (size_t)1 * T * C;
  double largestMean = 0;
  for (int t = 0; t < T; ++t) {
    double mean = 0;
    for (int k = 0; k < C; ++k) {
      ASSERT_NEAR(out[(size_t)t * C + k], mid[(size_t)t * C + k] + mlp[(size_t)t * C + k], 1e-5);
      mean += out[(size_t)t * C + k] / C;
    }
    largestMean = std::max(largestMean, std::abs(mean));
  }
  EXPECT_GT(largestMean, 1e-3);  // a post-norm with a norm would leave every row's mean at 0
}

TEST(Trainability, NoResidualIsTheSkipResidualWhatIfAtEveryLayer) {
  for (bool pre : {true, false}) {
    ModelConfig c = testing::smallConfig(3, 2, 16, 20, 16);
    c.pre_norm = pre;
    ModelConfig without = c;
    without.residual = false;
    const Weights weights = testing::randomWeights(c, 33), weightsWithout = testing::randomWeights(without, 33);
    auto backend = makeReferenceBackend();
    Transformer clean(weights, *backend), skipped(weights, *backend), model(weightsWithout, *backend);
    skipped.setWhatIfs(parseWhatIfs("skip-residual:0, skip-residual:1, skip-residual:2", c));
    const std::vector<int> ids = testing::sequence(7, c.vocab_size, 5);
    const std::vector<float> got = model.logitsFor(ids);
    EXPECT_LE(compare(got, skipped.logitsFor(ids)).relative(), 1e-6) << (pre ? "pre" : "post");
    EXPECT_GT(compare(got, clean.logitsFor(ids)).maxAbs, 1e-3) << (pre ? "pre" : "post");
    // The what-if cannot remove what the model does not have.
    EXPECT_THROW(model.setWhatIfs(parseWhatIfs("skip-residual:0", without)), Error);
  }
  ModelConfig none = testing::smallConfig(2, 2, 16, 20, 16);
  none.norm = NormKind::None;
  EXPECT_NE(whatIfProblem(WhatIf{WhatIfKind::SkipFinalNorm, 0}, none).find("no norms"), std::string::npos);
}

TEST(Trainability, TheComparisonsPresetsDifferOnlyInWhatTheyCompare) {
  const TrainPreset* base = findTrainPreset("brown-deep");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->config.model.n_layer, 8);
  auto sameOtherwise = [&](const char* key, auto edit) {
    const TrainPreset* p = findTrainPreset(key);
    ASSERT_NE(p, nullptr) << key;
    ModelConfig expected = base->config.model;
    edit(expected);
    EXPECT_EQ(configToJson(p->config.model), configToJson(expected)) << key;
    EXPECT_EQ(p->config.maxSteps, base->config.maxSteps) << key;
  };
  sameOtherwise("brown-deep-postnorm", [](ModelConfig& m) { m.pre_norm = false; });
  sameOtherwise("brown-deep-nonorm", [](ModelConfig& m) { m.norm = NormKind::None; });
  sameOtherwise("brown-deep-noresidual", [](ModelConfig& m) { m.residual = false; });
  // Switch: top-1 experts as wide as the dense feed-forward, so the active parameters per token are
  // the dense model's plus a C x E router.
  const TrainPreset* dense = findTrainPreset("brown");
  ASSERT_NE(dense, nullptr);
  ModelConfig denseModel = dense->config.model;
  denseModel.vocab_size = 1024;
  denseModel.n_positions = 64;
  const int64_t denseActive = countParameters(denseModel).active;
  for (int e : {2, 4, 8}) {
    const TrainPreset* p = findTrainPreset("brown-switch" + std::to_string(e));
    ASSERT_NE(p, nullptr) << e;
    ModelConfig m = p->config.model;
    m.vocab_size = 1024;
    m.n_positions = 64;
    EXPECT_EQ(m.n_experts, e);
    EXPECT_EQ(m.moe_top_k, 1);
    EXPECT_EQ(countParameters(m).active - denseActive, (int64_t)m.n_layer * m.n_embd * e) << e;
    EXPECT_EQ(p->config.maxSteps * p->config.batch, dense->config.maxSteps * dense->config.batch) << e;
  }
}

}  // namespace
}  // namespace tscope

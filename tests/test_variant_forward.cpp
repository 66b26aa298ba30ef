// The efficient-attention lab on the live model: Transformer::setAttentionVariant computes a
// layer's attention with a variant (efficient_attention.h) on the real q, k, v. Exact and flash
// must give the model's own logits; an approximate variant must move them, only where it is set;
// a continuation of the KV cache is refused; the Session fills variantLogits or a one-line note.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "app/session/session.h"
#include "model/io/model_io.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"
#include "tests/test_session_helpers.h"

namespace tscope {
namespace {

double maxRelative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-6;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, (double)std::fabs(a[i] - b[i]));
    scale = std::max(scale, (double)std::fabs(b[i]));
  }
  return diff / scale;
}

AttentionVariantParams variant(AttentionVariant kind) {
  AttentionVariantParams p;
  p.variant = kind;
  p.tile = 3;  // several tiles over the test's 11 tokens
  p.features = 16;
  p.projected = 4;
  return p;
}

// Variants whose own attention is plain softmax attention (a variant replaces the model's
// attention, ALiBi biases and sliding windows included, so those are left out here).
bool plainAttention(const ModelConfig& c) {
  return c.position_encoding != PositionEncoding::Alibi && c.slidingWindow() == 0 && !c.hasVariantAttention();
}

TEST(VariantForward, ExactAndFlashGiveTheModelsLogitsInEveryPlainVariant) {
  auto backend = makeCpuBackend(1);
  int checked = 0;
  for (const auto& arch : testing::architectureVariants()) {
    const ModelConfig config = testing::variantConfig(arch);
    if (!plainAttention(config)) continue;
    const Weights weights = testing::randomWeights(config, 3);
    Transformer model(weights, *backend);
    const std::vector<int> ids = testing::sequence(11, config.vocab_size, 2);
    const std::vector<float> want = model.logitsFor(ids);
    for (AttentionVariant kind : {AttentionVariant::Exact, AttentionVariant::Flash}) {
      model.setAttentionVariant(variant(kind));
      const std::vector<float> got = model.logitsFor(ids);
      model.setAttentionVariant(std::nullopt);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_LE(maxRelative(got, want), 1e-4) << arch.name << " " << attentionVariantName(kind);
    }
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(VariantForward, AnApproximateVariantMovesTheLogitsOnlyWhereItIsSet) {
  auto backend = makeCpuBackend(1);
  const ModelConfig config = testing::variantConfig(testing::architectureVariants().front());
  const Weights weights = testing::randomWeights(config, 3);
  Transformer model(weights, *backend);
  const std::vector<int> ids = testing::sequence(11, config.vocab_size, 2);
  const std::vector<float> exact = model.logitsFor(ids);
  model.setAttentionVariant(variant(AttentionVariant::Linear), 0);
  const std::vector<float> layer0 = model.logitsFor(ids);
  model.setAttentionVariant(variant(AttentionVariant::Linear), -1);
  const std::vector<float> every = model.logitsFor(ids);
  EXPECT_GT(maxRelative(layer0, exact), 1e-4);
  EXPECT_GT(maxRelative(every, layer0), 1e-4);
  // The first position sees only itself: every variant gives it its own value, so row 0 is exact.
  const size_t V = config.vocab_size;
  EXPECT_LE(maxRelative({every.begin(), every.begin() + V}, {exact.begin(), exact.begin() + V}), 1e-4);
  // A continuation of the cache (linear attention is causal: a row reads only the keys up to it)
  // gives the whole-sequence forward's rows; turning the variant off restores exact.
  KVCache cache(*backend, config);
  std::vector<float> logits;
  model.forward(std::span(ids).first(5), cache, logits, true);
  model.forward(std::span(ids).subspan(5), cache, logits, true);
  ASSERT_EQ(logits.size(), (ids.size() - 5) * V);
  EXPECT_LE(maxRelative(logits, {every.begin() + 5 * V, every.end()}), 1e-4);
  EXPECT_FALSE(model.canRecordSteps());
  model.setAttentionVariant(std::nullopt);
  EXPECT_EQ(model.logitsFor(ids), exact);
}

TEST(VariantForward, TheSessionFillsVariantLogitsOrOneLine) {
  session::Session session(loadModel(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-small"), "cpu");
  session::Request request;
  request.prompt = "The quick brown fox jumps over the lazy dog because it";
  request.sampling.greedy = true;
  request.attentionVariant = variant(AttentionVariant::Flash);
  auto s = testing::computeSnapshot(session, request);
  ASSERT_TRUE(s && s->error.empty()) << (s ? s->error : "no snapshot");
  ASSERT_EQ(s->variantLogits.size(), (size_t)session.config().vocab_size) << s->variantNote;
  EXPECT_LE(maxRelative(s->variantLogits, s->trace.logits), 1e-4);
  request.attentionVariant = variant(AttentionVariant::Window);
  request.attentionVariant->window = 2;
  request.variantLayer = 1;
  s = testing::computeSnapshot(session, request);
  ASSERT_EQ(s->variantLogits.size(), (size_t)session.config().vocab_size) << s->variantNote;
  EXPECT_GT(maxRelative(s->variantLogits, s->trace.logits), 1e-4);
  request.attentionVariant->window = 0;  // a bad knob: a note, the exact model still shown
  s = testing::computeSnapshot(session, request);
  EXPECT_TRUE(s->error.empty()) << s->error;
  EXPECT_TRUE(s->variantLogits.empty());
  EXPECT_NE(s->variantNote.find("window"), std::string::npos) << s->variantNote;
  EXPECT_EQ(s->variantNote.find('\n'), std::string::npos);
  request.attentionVariant->window = 4;
  request.variantLayer = 99;
  s = testing::computeSnapshot(session, request);
  EXPECT_TRUE(s->variantLogits.empty());
  EXPECT_NE(s->variantNote.find("99"), std::string::npos) << s->variantNote;
  // The next plain request reuses the prompt's prefix again (the variant run did not disturb it).
  request.attentionVariant.reset();
  request.prompt += " was";
  s = testing::computeSnapshot(session, request);
  EXPECT_GT(s->reusedTokens, 0);
}

}  // namespace
}  // namespace tscope

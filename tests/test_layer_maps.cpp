// Every layer's attention maps under the map memory cap: a long prompt on a 12-layer model holds
// the maps of the layers nearest the selected one (planCapture), and any other layer's maps are
// computed alone from its kept attention inputs (Transformer::layerMaps) without running the prompt
// again. The panels' data path (Snapshot::maps) must equal the maps of a forward that captured
// every layer (the CLI's dump), bit for bit on the reference backend, and never be another
// layer's maps under this layer's name.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "app/session/session.h"
#include "model/io/model_io.h"
#include "model/nn/incremental_forward.h"
#include "model/select/backend_select.h"
#include "model/nn/kv_cache.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "model/tokenize/tokenizer.h"
#include "tests/test_helpers.h"
#include "tests/test_session_helpers.h"

using namespace tscope;
using namespace tscope::session;

namespace {

// A 12-layer, 12-head model (GPT-2's depth and heads; narrow, so the test is quick) with
// brown-small's BPE tokenizer.
LoadedModel twelveLayers(int positions) {
  std::unique_ptr<Tokenizer> tokenizer = loadTokenizerFromDir(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-small", "gpt2-bpe");
  ModelConfig c = tscope::testing::smallConfig(12, 12, 48, tokenizer->vocabSize(), positions);
  return LoadedModel{tscope::testing::randomWeights(c, 20261127), std::move(tokenizer), "tscope", "twelve-layers", "", {}};
}

// A prompt of at least `tokens` tokens.
std::string longPrompt(const Tokenizer& tokenizer, int tokens) {
  const std::string words = "the jury said it did find that many of the city's relief rolls were handled well and the voters ";
  std::string text;
  while ((int)tokenizer.encode(text).size() < tokens) text += words;
  return text;
}

// The maps of every layer from one forward that captures them all (the CLI dump's cap).
Trace everyLayer(const Weights& weights, Backend& backend, const std::vector<int>& ids) {
  Transformer model(weights, backend);
  KVCache cache(backend, weights.config(), (int)ids.size());
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 0;
  options.memoryCapBytes = size_t(8) << 30;
  Trace trace;
  std::vector<float> logits;
  model.forward(ids, cache, logits, false, &trace, options);
  EXPECT_EQ((int)trace.layers.size(), weights.config().n_layer);
  return trace;
}

std::vector<float> head(const Trace& trace, int layer, int h, bool scores) {
  const float* m = scores ? trace.scoreMap(*trace.capturedIndex(layer), h) : trace.attnMap(*trace.capturedIndex(layer), h);
  return std::vector<float>(m, m + (size_t)trace.T * trace.Tk);
}

}  // namespace

TEST(LayerMaps, ThePlanStartsAtTheFocusLayerAndKeepsTheInputsOfTheRest) {
  ModelConfig c = tscope::testing::smallConfig(12, 12, 48, 100, 2048);
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 0;
  const int T = 752;
  options.memoryCapBytes = 3 * layerMapBytes(12, T, T);  // three layers' maps
  for (const auto& [focus, held] :
       std::vector<std::pair<int, std::vector<int>>>{{-1, {0, 1, 2}}, {0, {0, 1, 2}}, {5, {4, 5, 6}}, {11, {9, 10, 11}}}) {
    Trace plan;
    plan.T = plan.Tk = T;
    plan.H = 12;
    plan.C = 48;
    options.focusLayer = focus;
    planCapture(plan, options, c);
    EXPECT_EQ(plan.layers, held) << "focus " << focus;
    EXPECT_TRUE(plan.truncated);
    EXPECT_NE(plan.note.find("3 of 12 layers"), std::string::npos) << plan.note;
    EXPECT_EQ(plan.inputLayers.size(), 9u);
    for (int layer : plan.inputLayers) EXPECT_FALSE(plan.capturedIndex(layer)) << layer;
    EXPECT_FALSE(plan.capturedIndex(3 + focus + 12)) << "a layer outside the model is never an index";
  }
  // One layer's maps over the cap: nothing held, nothing to compute alone.
  Trace plan;
  plan.T = plan.Tk = T;
  plan.H = 12;
  options.memoryCapBytes = layerMapBytes(12, T, T) - 1;
  planCapture(plan, options, c);
  EXPECT_TRUE(plan.layers.empty());
  EXPECT_TRUE(plan.inputLayers.empty());
  EXPECT_FALSE(plan.capturedIndex(0));
}

// The case: 752 tokens, 12 layers of 12 heads under the 512 MiB cap hold 9 layers. Every
// layer selected in turn shows its own maps, equal bit for bit to the full capture's, and moving
// the selection reuses the prompt's forward; an edit keeps them exact.
TEST(LayerMaps, EveryLayerPastTheCapEqualsTheFullCaptureReferenceBitExact) {
  LoadedModel loaded = twelveLayers(1024);
  const std::string prompt = longPrompt(*loaded.tokenizer, 752);
  Session session(std::move(loaded), "reference");
  Request request;
  request.prompt = prompt;
  request.focusLayer = 11;
  auto first = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(first && first->error.empty()) << (first ? first->error : "no snapshot");
  const int T = (int)first->ids.size();
  ASSERT_GE(T, 752);
  EXPECT_TRUE(first->trace.truncated) << "the test needs a prompt past the cap";
  ASSERT_TRUE(first->trace.capturedIndex(11)) << "the focus layer is captured first";
  EXPECT_FALSE(first->trace.capturedIndex(0));
  EXPECT_EQ(first->trace.lensIds.size(), (size_t)12 * first->trace.lensPositions.size() * first->trace.lensK) << "the lens covers every layer";
  const Weights& weights = session.weights();
  auto reference = makeBackend("reference");
  const Trace all = everyLayer(weights, *reference, first->ids);
  for (int layer = 0; layer < 12; ++layer) {
    request.focusLayer = layer;
    auto s = tscope::testing::computeSnapshot(session, request);
    ASSERT_TRUE(s && s->error.empty()) << layer;
    EXPECT_EQ(s->reusedTokens, T - 1) << "selecting layer " << layer << " ran the prompt again";
    const auto maps = s->maps(layer);
    ASSERT_TRUE(maps) << "layer " << layer << ": " << s->mapsMissing(layer);
    for (int h : {0, 5, 11}) {
      EXPECT_EQ(maps->rows->map(maps->index, h, false), head(all, layer, h, false)) << "layer " << layer << " head " << h;
      EXPECT_EQ(maps->rows->map(maps->index, h, true), head(all, layer, h, true)) << "layer " << layer << " head " << h;
    }
    const std::vector<float> mean = attentionShown(*maps->rows, weights.config(), maps->index, 0, true, false);
    std::vector<float> want(mean.size(), 0.0f);
    for (int h = 0; h < 12; ++h) {
      const auto m = head(all, layer, h, false);
      for (size_t i = 0; i < want.size(); ++i) want[i] += m[i];
    }
    for (size_t i = 0; i < want.size(); i += 997) {
      if (std::isnan(mean[i])) EXPECT_EQ(want[i], 0.0f) << "a masked cell, layer " << layer;  // attentionShown: masked = NaN
      else EXPECT_NEAR(mean[i], want[i] / 12, 1e-6) << "layer " << layer;
    }
    // Another layer's maps are never offered under this one's name.
    for (int other = 0; other < 12; ++other) {
      if (other != layer && s->maps(other)) {
        EXPECT_TRUE(s->trace.capturedIndex(other)) << other;
      }
    }
  }
  // An edit of the prompt's end: prefix reuse, and the selected uncaptured layer still exact.
  request.prompt = prompt + " jury";
  request.focusLayer = 0;
  auto edited = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(edited && edited->error.empty());
  EXPECT_GT(edited->reusedTokens, 0);
  const auto maps = edited->maps(0);
  ASSERT_TRUE(maps) << edited->mapsMissing(0);
  const Trace fresh = everyLayer(weights, *reference, edited->ids);
  EXPECT_EQ(maps->rows->map(maps->index, 3, false), head(fresh, 0, 3, false));
  // A cap under one layer's maps: no layer is shown, and the line says why.
  request.mapMemoryBytes = size_t(16) << 20;
  auto capped = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(capped && capped->error.empty());
  EXPECT_FALSE(capped->maps(0));
  EXPECT_NE(capped->mapsMissing(0).find("over the map memory cap"), std::string::npos) << capped->mapsMissing(0);
}

// At the sizes real models reach on the fast path: 12 layers, 1,100 tokens (4 layers held), the
// last layer selected after the first equals the full capture's map.
TEST(LayerMaps, TheLastLayerOfALongPromptOnTheEigenBackend) {
  LoadedModel loaded = twelveLayers(2048);
  const std::string prompt = longPrompt(*loaded.tokenizer, 1100);
  Session session(std::move(loaded), "cpu");
  Request request;
  request.prompt = prompt;
  request.focusLayer = 0;
  auto first = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(first && first->error.empty());
  ASSERT_FALSE(first->trace.capturedIndex(11));
  request.focusLayer = 11;
  const auto started = std::chrono::steady_clock::now();
  auto s = tscope::testing::computeSnapshot(session, request);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(s && s->error.empty());
  std::printf("layer 11 of a %zu-token prompt, not captured: shown after %.0f ms (12 heads, D = 4)\n", s->ids.size(), ms);
  const auto maps = s->maps(11);
  ASSERT_TRUE(maps) << s->mapsMissing(11);
  EXPECT_EQ(s->focusLayer, 11);
  const Weights& weights = session.weights();
  auto cpu = makeBackend("cpu");
  const Trace all = everyLayer(weights, *cpu, s->ids);
  for (int h : {0, 11}) {
    const auto d = tscope::testing::compare(maps->rows->map(maps->index, h, false), head(all, 11, h, false));
    EXPECT_LT(d.maxAbs, 1e-5) << d.describe();
  }
}

// What-ifs (model/nn/what_if.h) on the reference backend, each against a change computed by hand
// or by an independent construction, and each checked to change something:
//   no-causal-mask  = the same weights in a model built without the mask, and the maps see the future;
//   no-positions    the last position's logits no longer depend on the order of the tokens before it;
//   no-scale        layer 0's scores are the clean ones times sqrt(d);
//   uniform-attention:L  the layer's maps are 1/(t+1) and its heads the mean of the visible values;
//   skip-residual:L the stream after each sublayer of L is that sublayer's output alone;
//   skip-mlp:L      = the model with L's MLP output projection zeroed;
//   skip-final-norm the logits are the last residual times the unembedding;
//   shuffle:SEED    a seeded permutation of the ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/core/error.h"
#include "model/nn/incremental_forward.h"
#include "model/nn/inside_views.h"
#include "model/nn/transformer.h"
#include "model/nn/what_if.h"
#include "tests/test_helpers.h"

namespace tscope {
namespace {

using testing::compare;

ModelConfig variantNamed(const std::string& name) {
  const auto variants = testing::architectureVariants();
  const auto it = std::find_if(variants.begin(), variants.end(), [&](const auto& v) { return v.name == name; });
  if (it == variants.end()) throw Error("no variant " + name);
  return testing::variantConfig(*it);
}

TEST(WhatIf, NamesParseFormatAndBadOnesSayWhy) {
  const ModelConfig c = variantNamed("gpt2");
  const WhatIfs w = parseWhatIfs(" no-causal-mask, skip-mlp:1 ,shuffle:7,no-causal-mask", c);
  ASSERT_EQ(w.items.size(), 3u);
  EXPECT_EQ(formatWhatIfs(w), "no-causal-mask,skip-mlp:1,shuffle:7");
  EXPECT_EQ(parseWhatIfs(formatWhatIfs(w), c), w);
  EXPECT_TRUE(w.atLayer(WhatIfKind::SkipMlp, 1));
  EXPECT_FALSE(w.atLayer(WhatIfKind::SkipMlp, 0));
  EXPECT_EQ(describeWhatIfs(w), "no causal mask, no MLP in layer 1, tokens shuffled (seed 7)");
  EXPECT_TRUE(parseWhatIfs("", c).empty());
  auto error = [&](const std::string& text, const ModelConfig& config) {
    try {
      parseWhatIfs(text, config);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << text;
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error("no-mask", c).find("not one of no-causal-mask"), std::string::npos);
  EXPECT_NE(error("skip-mlp", c).find("expected skip-mlp:LAYER"), std::string::npos);
  EXPECT_NE(error("skip-mlp:x", c).find("whole number"), std::string::npos);
  EXPECT_NE(error("no-scale:2", c).find("takes no argument"), std::string::npos);
  EXPECT_NE(error("uniform-attention:9", c).find("outside the model's"), std::string::npos);
  EXPECT_NE(error("skip-residual:-1", c).find("whole number"), std::string::npos);
  EXPECT_NE(error("no-scale,,no-positions", c).find("empty item"), std::string::npos);
  EXPECT_NE(error("shuffle:1,shuffle:2", c).find("one shuffle"), std::string::npos);
  EXPECT_NE(error("no-causal-mask", variantNamed("encoder_sinusoidal")).find("no causal mask to remove"), std::string::npos);
  EXPECT_NE(error("no-positions", variantNamed("nopos")).find("no positional encoding"), std::string::npos);
  EXPECT_NE(error("skip-mlp:0", variantNamed("attention_only")).find("attention-only"), std::string::npos);
  EXPECT_NE(error("skip-final-norm", variantNamed("rmsnorm_postnorm")).find("post-norm"), std::string::npos);
  // The Transformer refuses what the parser would, and keeps what it had.
  auto backend = makeReferenceBackend();
  const Weights weights = testing::randomWeights(variantNamed("attention_only"), 1);
  Transformer model(weights, *backend);
  EXPECT_THROW(model.setWhatIfs(WhatIfs{{{WhatIfKind::SkipMlp, 0}}}), Error);
  EXPECT_TRUE(model.whatIfs().empty());
}

TEST(WhatIf, NoCausalMaskIsTheSameWeightsWithoutTheMask) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "rope", "gqa2_rope", "mqa_alibi_window3"}) {
    ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 21);
    c.causal = false;
    const Weights bidirectional = testing::randomWeights(c, 21);
    const std::vector<int> ids = testing::sequence(9, c.vocab_size, 3);
    Transformer model(weights, *backend), reference(bidirectional, *backend), clean(weights, *backend);
    model.setWhatIfs(parseWhatIfs("no-causal-mask", weights.config()));
    Trace trace;
    const auto got = model.logitsFor(ids, &trace, testing::componentsAndInternals());
    EXPECT_LE(compare(got, reference.logitsFor(ids)).relative(), 1e-6) << name;
    EXPECT_GT(compare(got, clean.logitsFor(ids)).maxAbs, 1e-4) << name;
    EXPECT_GT(trace.attnMap(0, 0)[1], 0.0f) << name << ": row 0 now sees key 1";
  }
}

// Without positions a layer-0 head is a weighted set operation: the last row's output depends on the
// tokens before it, not on their order. (Deeper layers can still tell order: the causal mask lets
// each token see a different prefix, which is why models without any positional encoding work.)
TEST(WhatIf, WithoutPositionsLayerZeroCannotTellTheOrderOfTheTokensBefore) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "sinusoidal_base100", "rope", "alibi", "gqa2_rope_llama3_scaled"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 22);
    const int T = 8, A = c.attnDim();
    std::vector<int> ids = testing::sequence(T, c.vocab_size, 5), swapped = ids;
    std::reverse(swapped.begin(), swapped.end() - 1);  // the same tokens before the last, in another order
    ASSERT_NE(ids, swapped);
    Transformer model(weights, *backend);
    auto lastRow = [&](const std::vector<int>& tokens) {
      Trace trace;
      model.logitsFor(tokens, &trace, testing::componentsAndInternals());
      return std::vector<float>(trace.headMix.begin() + (size_t)(T - 1) * A, trace.headMix.begin() + (size_t)T * A);  // layer 0, row T-1
    };
    EXPECT_GT(compare(lastRow(ids), lastRow(swapped)).maxAbs, 1e-4) << name << ": positions matter as trained";
    model.setWhatIfs(parseWhatIfs("no-positions", c));
    EXPECT_LE(compare(lastRow(ids), lastRow(swapped)).relative(), 1e-5) << name;
  }
}

TEST(WhatIf, NoScaleMultipliesTheFirstLayersScoresBySqrtD) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "rope", "head_dim16_qknorm_gqa2_rope_swiglu"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 23);
    const std::vector<int> ids = testing::sequence(7, c.vocab_size, 1);
    Transformer model(weights, *backend);
    Trace clean, unscaled;
    model.logitsFor(ids, &clean, testing::componentsAndInternals());
    model.setWhatIfs(parseWhatIfs("no-scale", c));
    model.logitsFor(ids, &unscaled, testing::componentsAndInternals());
    const double sqrtD = std::sqrt((double)c.headDim());
    const int T = 7;
    for (int h = 0; h < c.n_head; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j <= t; ++j) {
          const size_t at = ((size_t)h * T + t) * T + j;
          EXPECT_NEAR(unscaled.scores[at], clean.scores[at] * sqrtD, 1e-4 * (1 + std::abs(unscaled.scores[at]))) << name;
        }
    EXPECT_GT(compare(unscaled.attn, clean.attn).maxAbs, 1e-3) << name;
  }
}

TEST(WhatIf, UniformAttentionAveragesTheVisibleValues) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "gqa2_rope", "mqa_alibi_window3"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 24);
    const int L = 1, T = 8, H = c.n_head, D = c.headDim(), A = c.attnDim(), Hkv = c.kvHeads();
    const std::vector<int> ids = testing::sequence(T, c.vocab_size, 2);
    Transformer model(weights, *backend);
    model.setWhatIfs(parseWhatIfs("uniform-attention:1", c));
    Trace trace;
    model.logitsFor(ids, &trace, testing::componentsAndInternals(L));
    const int li = *trace.capturedIndex(L);
    const int window = c.slidingWindow();
    for (int h = 0; h < H; ++h) {
      const int kv = h / (H / Hkv);
      for (int t = 0; t < T; ++t) {
        const int first = window > 0 ? std::max(0, t - window + 1) : 0, n = t - first + 1;
        for (int j = 0; j < T; ++j) EXPECT_FLOAT_EQ(trace.attnMap(li, h)[(size_t)t * T + j], j >= first && j <= t ? 1.0f / n : 0.0f) << name;
        for (int d = 0; d < D; ++d) {
          double mean = 0;
          for (int j = first; j <= t; ++j) mean += trace.v[((size_t)kv * T + j) * D + d];
          EXPECT_NEAR(trace.headMix[((size_t)L * T + t) * A + h * D + d], mean / n, 1e-5) << name;
        }
      }
    }
    // Layer 0 keeps its softmax.
    EXPECT_NE(trace.attnMap(*trace.capturedIndex(0), 0)[(size_t)1 * T], 0.5f) << name;
  }
}

TEST(WhatIf, SkipResidualLeavesOnlyTheSublayersOutput) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "rmsnorm_postnorm", "swiglu_dff48"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 25);
    const int L = 1, T = 6, C = c.n_embd;
    const std::vector<int> ids = testing::sequence(T, c.vocab_size, 4);
    Transformer model(weights, *backend);
    model.setWhatIfs(parseWhatIfs("skip-residual:1", c));
    Trace trace;
    model.logitsFor(ids, &trace, testing::componentsAndInternals(L));
    const int li = *trace.capturedIndex(L);
    const float* mid = trace.residAfterAttn.data() + (size_t)li * T * C;
    const float* out = trace.residAfterMlp.data() + (size_t)li * T * C;
    const float* attn = trace.attnOut.data();  // the internals of layer L: its attention output after W_O
    const float* mlp = trace.mlpOut.data() + (size_t)L * T * C;
    for (size_t i = 0; i < (size_t)T * C; ++i) {
      if (c.pre_norm) {
        ASSERT_NEAR(mid[i], attn[i], 1e-5) << name;
        ASSERT_NEAR(out[i], mlp[i], 1e-5) << name;
      }
    }
    if (!c.pre_norm) {  // post-norm: the layer's output is norm(MLP(norm(attention))): its rows have mean ~0 like any norm's output
      Transformer clean(weights, *backend);
      EXPECT_GT(compare(clean.logitsFor(ids), model.logitsFor(ids)).maxAbs, 1e-4) << name;
    }
  }
}

TEST(WhatIf, SkipMlpEqualsZeroingTheLayersOutputProjection) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "swiglu_dff48", "layernorm_postnorm_relu"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 26);
    Weights zeroed = testing::randomWeights(c, 26);
    std::fill_n(zeroed.param("h.0.mlp.c_proj.weight"), (size_t)c.dFF() * c.n_embd, 0.0f);
    std::fill_n(zeroed.param("h.0.mlp.c_proj.bias"), c.n_embd, 0.0f);
    const std::vector<int> ids = testing::sequence(9, c.vocab_size, 6);
    Transformer model(weights, *backend), reference(zeroed, *backend), clean(weights, *backend);
    model.setWhatIfs(parseWhatIfs("skip-mlp:0", c));
    const auto got = model.logitsFor(ids);
    EXPECT_LE(compare(got, reference.logitsFor(ids)).relative(), 1e-6) << name;
    EXPECT_GT(compare(got, clean.logitsFor(ids)).maxAbs, 1e-4) << name;
  }
}

TEST(WhatIf, SkipFinalNormUnembedsTheRawResidual) {
  auto backend = makeReferenceBackend();
  const ModelConfig c = variantNamed("gelu_erf_untied");
  const Weights weights = testing::randomWeights(c, 27);
  const int T = 5, C = c.n_embd, V = c.vocab_size;
  const std::vector<int> ids = testing::sequence(T, V, 7);
  Transformer model(weights, *backend);
  const auto clean = model.logitsFor(ids);
  model.setWhatIfs(parseWhatIfs("skip-final-norm", c));
  Trace trace;
  const auto got = model.logitsFor(ids, &trace, testing::componentsAndInternals());
  const float* unembedding = weights.param("lm_head.weight");
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int k = 0; k < C; ++k) s += (double)trace.finalResid[(size_t)t * C + k] * unembedding[(size_t)v * C + k];
      ASSERT_NEAR(got[(size_t)t * V + v], s, 1e-4 * (1 + std::abs(s)));
    }
  EXPECT_GT(compare(got, clean).maxAbs, 1e-3);
}

TEST(WhatIf, ShuffleIsASeededPermutation) {
  const std::vector<int> order = shuffleOrder(10, 7);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(order, identity);
  EXPECT_EQ(shuffleOrder(10, 7), order);
  EXPECT_NE(shuffleOrder(10, 8), order);
  const ModelConfig c = variantNamed("gpt2");
  const std::vector<int> ids = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  std::vector<int> used;
  const std::vector<int> shuffled = applyShuffle(parseWhatIfs("shuffle:7", c), ids, &used);
  EXPECT_EQ(used, order);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(shuffled[i], ids[order[i]]);
  EXPECT_EQ(applyShuffle(parseWhatIfs("no-scale", c), ids), ids);
  EXPECT_TRUE(applyShuffle({}, std::vector<int>{}).empty());
  EXPECT_EQ(applyShuffle(parseWhatIfs("shuffle:3", c), std::vector<int>{4}), std::vector<int>{4});
}

TEST(WhatIf, PrefixReuseAndLeftOutMapsAgreeWithAFreshForward) {
  auto backend = makeReferenceBackend();
  const ModelConfig c = variantNamed("rope");
  const Weights weights = testing::randomWeights(c, 28);
  Transformer model(weights, *backend), fresh(weights, *backend);
  IncrementalForward incremental(model);
  TraceOptions options;
  options.logitLensTopK = 3;
  std::vector<int> ids = testing::sequence(10, c.vocab_size, 3);
  incremental.run(ids, options);
  for (const char* text : {"no-positions", "uniform-attention:1,skip-mlp:0", "no-causal-mask", "no-scale,skip-final-norm"}) {
    const WhatIfs w = parseWhatIfs(text, c);
    model.setWhatIfs(w);
    fresh.setWhatIfs(w);
    std::string whyNot;
    EXPECT_EQ(incremental.reusableTokens(ids, options, &whyNot), 0) << text;  // the what-ifs changed
    incremental.run(ids, options);
    ids[8] = (ids[8] + 1) % c.vocab_size;  // an edit near the end
    const PromptForward got = incremental.run(ids, options);
    EXPECT_EQ(got.reusedTokens > 0, !w.has(WhatIfKind::NoCausalMask)) << text;
    const auto want = fresh.logitsFor(ids);
    EXPECT_LE(compare(got.logits, std::vector<float>(want.end() - c.vocab_size, want.end())).relative(), 1e-5) << text;
    // A layer's maps computed alone from its kept inputs are the forward's.
    TraceOptions inputs;
    inputs.logitLensTopK = 0;
    inputs.layers = {0};
    inputs.inputLayers = {1};
    Trace all, kept;
    fresh.logitsFor(ids, &all, testing::componentsAndInternals());
    fresh.logitsFor(ids, &kept, inputs);
    ASSERT_TRUE(kept.inputIndex(1)) << text;
    {
      std::vector<float> probs, scores;
      fresh.layerMaps(kept, 1, probs, scores);
      const size_t mapFloats = (size_t)c.n_head * ids.size() * ids.size();
      EXPECT_LE(compare(probs, std::vector<float>(all.attn.begin() + mapFloats, all.attn.begin() + 2 * mapFloats)).relative(), 1e-5) << text;
    }
  }
}

}  // namespace
}  // namespace tscope

namespace tscope {
namespace {

// The Inside panel's stages (headStages) recompute a head's row from q and k: under each what-if
// they must give the map the changed forward computed.
TEST(WhatIf, TheInsideStagesAreTheChangedForwards) {
  auto backend = makeReferenceBackend();
  for (const char* name : {"gpt2", "alibi", "rope"}) {
    const ModelConfig c = variantNamed(name);
    const Weights weights = testing::randomWeights(c, 29);
    const int T = 7;
    const std::vector<int> ids = testing::sequence(T, c.vocab_size, 8);
    for (const char* text : {"", "no-scale", "no-causal-mask", "no-positions", "uniform-attention:1", "no-scale,no-positions,no-causal-mask"}) {
      Transformer model(weights, *backend);
      const WhatIfs w = parseWhatIfs(text, c);
      model.setWhatIfs(w);
      Trace trace;
      model.logitsFor(ids, &trace, testing::componentsAndInternals(1));
      const int li = *trace.capturedIndex(1);
      for (int h = 0; h < c.n_head; ++h)
        for (int query : {0, 3, T - 1}) {
          const HeadStages s = headStages(trace, c, 1, h, query, w);
          for (int j = 0; j < T; ++j)
            ASSERT_NEAR(s.weights[j], trace.attnMap(li, h)[(size_t)query * T + j], 1e-5)
                << name << " " << text << " head " << h << " query " << query;
        }
    }
  }
}

}  // namespace
}  // namespace tscope

// Architecture-lab variants on the whole model: the Eigen path against the plain-loop reference
// over a grid of combinations, KV-cache equivalence (RoPE, ALiBi, GQA, sliding window), an
// encoder attending both ways, post-norm and MoE behaviour, round trips through a model
// directory, and config validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/io/model_io.h"
#include "model/nn/transformer.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::architectureVariants;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::smallConfig;
using tscope::testing::variantConfig;

TEST(Architecture, EigenMatchesReferenceForEveryVariant) {
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    Weights weights = randomWeights(config, 5);
    auto refBackend = makeReferenceBackend();
    auto cpuBackend = makeCpuBackend(2);
    Transformer refModel(weights, *refBackend), cpuModel(weights, *cpuBackend);
    const auto ids = sequence(11, config.vocab_size, 1);
    Trace refTrace, cpuTrace;
    const auto refLogits = refModel.logitsFor(ids, &refTrace);
    const auto cpuLogits = cpuModel.logitsFor(ids, &cpuTrace);
    auto d = compare(cpuLogits, refLogits);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " logits: " << d.describe();
    d = compare(cpuTrace.attn, refTrace.attn);
    EXPECT_LT(d.maxAbs, 1e-4) << v.name << " attention: " << d.describe();
    d = compare(cpuTrace.scores, refTrace.scores);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " scores: " << d.describe();
    if (config.isMoe()) {
      for (int l = 0; l < config.n_layer; ++l) {
        ASSERT_EQ(cpuTrace.moe[l].assignments.size(), refTrace.moe[l].assignments.size()) << v.name;
        for (size_t i = 0; i < cpuTrace.moe[l].assignments.size(); ++i) {
          EXPECT_EQ(cpuTrace.moe[l].assignments[i].expert, refTrace.moe[l].assignments[i].expert) << v.name;
          EXPECT_EQ(cpuTrace.moe[l].assignments[i].dropped, refTrace.moe[l].assignments[i].dropped) << v.name;
        }
      }
    }
  }
}

TEST(Architecture, KvCacheMatchesFullForwardForCausalVariants) {
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    if (!config.causal) continue;                                    // an encoder's earlier tokens would see later ones
    if (config.isMoe() && config.moe_capacity_factor > 0) continue;  // capacity depends on how many tokens share a forward
    Weights weights = randomWeights(config, 6);
    auto backend = makeCpuBackend(1);
    Transformer model(weights, *backend);
    const auto ids = sequence(10, config.vocab_size, 2);
    const auto full = model.logitsFor(ids);
    KVCache cache(*backend, config);
    std::vector<float> step;
    model.forward(std::span(ids).subspan(0, 4), cache, step, false);
    for (int t = 4; t < 10; ++t) {
      model.forward(std::span(ids).subspan(t, 1), cache, step, false);
      const auto d = compare(step.data(), full.data() + (size_t)t * config.vocab_size, config.vocab_size);
      EXPECT_LT(d.relative(), 1e-5) << v.name << " position " << t << ": " << d.describe();
    }
    EXPECT_EQ(cache.bytesPerToken(), (size_t)kvCacheBytesPerToken(config, 4)) << v.name;
  }
}

TEST(Architecture, EncoderAttendsBothWaysAndDecoderDoesNot) {
  for (bool causal : {true, false}) {
    ModelConfig config = smallConfig(1, 2, 16, 20, 16);
    config.causal = causal;
    Weights weights = randomWeights(config, 7);
    auto backend = makeCpuBackend(1);
    Transformer model(weights, *backend);
    auto ids = sequence(6, 20, 3);
    Trace trace;
    const auto before = model.logitsFor(ids, &trace);
    // Attention from position 1 to the later position 4.
    const float forward = trace.attnMap(0, 0)[1 * 6 + 4];
    ids[5] = (ids[5] + 1) % 20;  // change the last token
    const auto after = model.logitsFor(ids);
    const auto d = compare(std::vector<float>(after.begin(), after.begin() + 20), std::vector<float>(before.begin(), before.begin() + 20));
    if (causal) {
      EXPECT_EQ(forward, 0.0f);
      EXPECT_EQ(d.maxAbs, 0.0) << "a decoder's first position must not see the last token";
    } else {
      EXPECT_GT(forward, 0.0f);
      EXPECT_GT(d.maxAbs, 1e-6) << "an encoder's first position must see the last token";
    }
  }
}

TEST(Architecture, SlidingWindowHidesDistantKeys) {
  ModelConfig config = smallConfig(1, 2, 16, 20, 16);
  config.attention_window = 3;
  Weights weights = randomWeights(config, 8);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  Trace trace;
  model.logitsFor(sequence(8, 20, 4), &trace);
  for (int t = 0; t < 8; ++t)
    for (int j = 0; j < 8; ++j) {
      const bool visible = j <= t && t - j < 3;
      EXPECT_EQ(trace.attnMap(0, 1)[t * 8 + j] > 0.0f, visible) << "query " << t << " key " << j;
    }
}

TEST(Architecture, PostNormOutputsAreNormalised) {
  ModelConfig config = smallConfig(2, 2, 32, 30, 16);
  config.pre_norm = false;
  Weights weights(config);
  weights.initRandom(9);  // norm weights 1, biases 0: each residual row is exactly LN(...)
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  Trace trace;
  model.logitsFor(sequence(5, 30, 5), &trace);
  for (size_t row = 0; row < trace.residAfterMlp.size() / 32; ++row) {
    const float* x = trace.residAfterMlp.data() + row * 32;
    const double mean = std::accumulate(x, x + 32, 0.0) / 32;
    double var = 0;
    for (int c = 0; c < 32; ++c) var += (x[c] - mean) * (x[c] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(var / 32, 1.0, 1e-3);
  }
}

TEST(Architecture, MoeTraceAndDroppedTokensPassThrough) {
  ModelConfig config = smallConfig(1, 2, 16, 20, 32);
  config.n_experts = 4;
  config.moe_top_k = 1;
  config.moe_capacity_factor = 0.5;  // capacity ceil(12 / 4 * 0.5) = 2 per expert: some tokens drop
  Weights weights = randomWeights(config, 10);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  Trace trace;
  model.logitsFor(sequence(12, 20, 6), &trace);
  const MoeRouting& routing = trace.moe[0];
  ASSERT_EQ(routing.tokens, 12);
  EXPECT_EQ(routing.capacity, 2);
  EXPECT_EQ(routing.routerLogits.size(), 12u * 4);
  EXPECT_LE(std::accumulate(routing.load.begin(), routing.load.end(), 0), 8);
  ASSERT_FALSE(routing.droppedTokens.empty());
  for (int t : routing.droppedTokens) {
    // A dropped token's feed-forward contributes nothing: the residual is unchanged by the MLP.
    const float* afterAttn = trace.residAfterAttn.data() + (size_t)t * 16;
    const float* afterMlp = trace.residAfterMlp.data() + (size_t)t * 16;
    for (int c = 0; c < 16; ++c) EXPECT_EQ(afterAttn[c], afterMlp[c]) << "token " << t;
  }
  EXPECT_GT(trace.moeAuxLoss, 0.0f);
  // Turning the knobs live: top-2 with no capacity drops nothing.
  model.setMoeRouting({4, 2, 0.0, false, 0.01});
  model.logitsFor(sequence(12, 20, 6), &trace);
  EXPECT_TRUE(trace.moe[0].droppedTokens.empty());
  EXPECT_EQ(std::accumulate(trace.moe[0].load.begin(), trace.moe[0].load.end(), 0), 24);
  EXPECT_THROW(model.setMoeRouting({4, 5, 1.0, false, 0.01}), Error);
}

TEST(Architecture, EveryVariantRoundTripsThroughAModelDirectory) {
  tscope::testing::ScratchDir dir("tscope_arch");
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    Weights weights = randomWeights(config, 11);
    const std::string path = dir.file(v.name);
    saveModelDir(path, weights, nullptr);
    LoadedModel loaded = loadModel(path);
    const ModelConfig& c = loaded.weights.config();
    EXPECT_EQ(configToJson(c), configToJson(config)) << v.name;
    ASSERT_EQ(loaded.weights.totalFloats(), weights.totalFloats()) << v.name;
    EXPECT_EQ(std::memcmp(loaded.weights.arena(), weights.arena(), weights.totalFloats() * sizeof(float)), 0) << v.name;
    // Parameter count from the closed form equals the arena's contents.
    size_t fromLayout = 0;
    for (const auto& s : loaded.weights.layout()) fromLayout += s.numel();
    EXPECT_EQ((int64_t)fromLayout, countParameters(c).total) << v.name;
  }
}

TEST(Architecture, ImpossibleCombinationsNameTheFieldAndRule) {
  auto messageFor = [](const std::function<void(ModelConfig&)>& change) {
    ModelConfig c = smallConfig(2, 4, 32, 41, 24);
    change(c);
    return validateConfig(c);
  };
  EXPECT_EQ(messageFor([](ModelConfig& c) { c.n_head = 5; }), "n_head (5) must divide n_embd (32)");
  EXPECT_EQ(messageFor([](ModelConfig& c) { c.n_kv_head = 3; }), "n_kv_head (3) must divide n_head (4)");
  EXPECT_EQ(messageFor([](ModelConfig& c) {
              c.n_experts = 4;
              c.moe_top_k = 5;
            }),
            "moe_top_k (5) must be at most n_experts (4)");
  EXPECT_EQ(messageFor([](ModelConfig& c) { c.moe_shared_expert_d_ff = 8; }), "moe_shared_expert_d_ff needs a mixture of experts (n_experts > 0)");
  EXPECT_EQ(messageFor([](ModelConfig& c) {
              c.n_experts = 4;
              c.moe_routing = MoeRoutingKind::ExpertChoice;
              c.moe_normalize_top_k = false;
            }),
            "moe_normalize_top_k false is a token_choice setting (expert_choice gates are the router probabilities already)");
  EXPECT_NE(messageFor([](ModelConfig& c) { c.attention_window = -1; }).find("attention_window"), std::string::npos);
  EXPECT_NE(messageFor([](ModelConfig& c) {
              c.n_head = 32;
              c.position_encoding = PositionEncoding::Rope;
            }).find("even head dimension"),
            std::string::npos);
  EXPECT_NE(messageFor([](ModelConfig& c) {
              c.position_encoding = PositionEncoding::Sinusoidal;
              c.position_base = 1.0;
            }).find("position_base"),
            std::string::npos);
  // Llama 3's RoPE scaling: only on RoPE models, with a positive factor, 0 < low < high, a context.
  const auto scaledRope = [&](const std::function<void(ModelConfig&)>& change) {
    return messageFor([&](ModelConfig& c) {
      c.position_encoding = PositionEncoding::Rope;
      c.rope_scaling_factor = 8;
      change(c);
    });
  };
  EXPECT_EQ(scaledRope([](ModelConfig&) {}), "");
  EXPECT_EQ(scaledRope([](ModelConfig& c) { c.position_encoding = PositionEncoding::Alibi; }),
            "rope_scaling_factor needs position_encoding rope (got alibi)");
  EXPECT_NE(scaledRope([](ModelConfig& c) { c.rope_scaling_factor = -2; }).find("rope_scaling_factor must be a finite number > 0"),
            std::string::npos);
  EXPECT_NE(scaledRope([](ModelConfig& c) { c.rope_scaling_factor = std::nan(""); }).find("rope_scaling_factor"), std::string::npos);
  EXPECT_NE(scaledRope([](ModelConfig& c) { c.rope_high_freq_factor = 1; }).find("rope_high_freq_factor (1.000000) must be greater"),
            std::string::npos);
  EXPECT_NE(scaledRope([](ModelConfig& c) { c.rope_low_freq_factor = 0; }).find("rope_low_freq_factor"), std::string::npos);
  EXPECT_EQ(scaledRope([](ModelConfig& c) { c.rope_original_context = 0; }), "rope_original_context must be at least 1 (got 0)");
  // Written to config.json only when set, so configs without it stay as they were.
  ModelConfig plainRope = smallConfig(2, 4, 32, 41, 24);
  plainRope.position_encoding = PositionEncoding::Rope;
  EXPECT_FALSE(configToJson(plainRope).contains("rope_scaling_factor"));
  plainRope.rope_scaling_factor = 8;
  plainRope.rope_original_context = 64;
  const ModelConfig back = configFromJson(configToJson(plainRope));
  EXPECT_EQ(back.rope_scaling_factor, 8.0);
  EXPECT_EQ(back.rope_original_context, 64);
  EXPECT_EQ(back.rope_high_freq_factor, 4.0);
  // From JSON: unknown values and wrong types are named too.
  EXPECT_THROW(configFromJson(nlohmann::json{{"position_encoding", "spiral"}}), Error);
  try {
    configFromJson(nlohmann::json{{"norm", "batchnorm"}});
    FAIL() << "batchnorm accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("norm 'batchnorm' is not one of: layernorm, rmsnorm"), std::string::npos) << e.what();
  }
}

TEST(Architecture, CostFunctionsCoverVariants) {
  ModelConfig moe = smallConfig(2, 4, 32, 41, 24);
  moe.n_experts = 8;
  moe.moe_top_k = 2;
  const ParamCounts p = countParameters(moe);
  const int64_t expert = (32 * 128 + 128) + (128 * 32 + 32);
  EXPECT_EQ(p.perExpert, expert);
  EXPECT_EQ(p.total - p.active, 2 * 6 * expert);  // per layer, 6 of the 8 experts are idle
  // A shared expert (width 16, SwiGLU: three matrices and biases) and its gate (C) are active for every token.
  ModelConfig shared = moe;
  shared.activation = Activation::SwiGlu;
  shared.moe_shared_expert_d_ff = 16;
  const ParamCounts withShared = countParameters(shared);
  const int64_t sharedExpert = 2 * (32 * 16 + 16) + (16 * 32 + 32) + 32;
  ModelConfig swigluMoe = moe;
  swigluMoe.activation = Activation::SwiGlu;
  const ParamCounts withoutShared = countParameters(swigluMoe);
  EXPECT_EQ(withShared.sharedExpert, 2 * sharedExpert);
  EXPECT_EQ(withShared.total - withoutShared.total, 2 * sharedExpert);
  EXPECT_EQ(withShared.active - withoutShared.active, 2 * sharedExpert);
  size_t fromLayout = 0;
  for (const auto& s : parameterLayout(shared)) fromLayout += s.numel();
  EXPECT_EQ((int64_t)fromLayout, withShared.total);
  ModelConfig gqa = smallConfig(2, 4, 32, 41, 24);
  gqa.n_kv_head = 1;
  EXPECT_EQ(kvCacheBytesPerToken(gqa, 2), 2 * 2 * 1 * 8 * 2);  // 2 x L x n_kv_heads x head_dim x bytes
  ModelConfig windowed = smallConfig(2, 4, 32, 41, 24);
  windowed.attention_window = 4;
  EXPECT_DOUBLE_EQ(flopsPerToken(windowed, 20).attentionForward, 2.0 * 2 * 4 * 32);
  // Heads of 16 over C = 32 (A = H D = 64): q, k, v (32, 3 x 64) and W_O (64, 32); Kaplan's
  // attention FLOPs 2 L n d_attn use A; the counts agree with the layout in every variant.
  ModelConfig wide = smallConfig(2, 4, 32, 41, 24);
  wide.head_dim = 16;
  const ParamCounts w = countParameters(wide), narrow = countParameters(smallConfig(2, 4, 32, 41, 24));
  EXPECT_EQ(w.attention - narrow.attention, 2 * ((32 * 192 + 192) + 64 * 32 - (32 * 96 + 96) - 32 * 32));
  EXPECT_DOUBLE_EQ(flopsPerToken(wide, 20).attentionForward, 2.0 * 2 * 20 * 64);
  EXPECT_EQ(kvCacheBytesPerToken(wide, 4), 2 * 2 * 4 * 16 * 4);
  for (const auto& v : architectureVariants()) {
    const ModelConfig c = tscope::testing::variantConfig(v);
    size_t n = 0;
    for (const auto& s : parameterLayout(c)) n += s.numel();
    EXPECT_EQ((int64_t)n, countParameters(c).total) << v.name;
  }
}

TEST(Architecture, SharedExpertAndUnnormalizedTopKAreWrittenOnlyWhenSet) {
  ModelConfig c = smallConfig(2, 4, 32, 41, 24);
  c.n_experts = 4;
  const nlohmann::json plain = configToJson(c);
  EXPECT_FALSE(plain.contains("moe_normalize_top_k"));
  EXPECT_FALSE(plain.contains("moe_shared_expert_d_ff"));
  c.moe_normalize_top_k = false;
  c.moe_shared_expert_d_ff = 12;
  const nlohmann::json written = configToJson(c);
  EXPECT_EQ(written.at("moe_normalize_top_k"), false);
  EXPECT_EQ(written.at("moe_shared_expert_d_ff"), 12);
  const ModelConfig back = configFromJson(written);
  EXPECT_FALSE(back.moe_normalize_top_k);
  EXPECT_EQ(back.moe_shared_expert_d_ff, 12);
  EXPECT_TRUE(back.hasSharedExpert());
}

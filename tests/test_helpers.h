// Shared helpers for the engine tests: random weights with every parameter non-trivial, test token
// sequences, the grid of architecture-lab variants, and error measures that report the largest
// difference they saw.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "model/generate/sampling.h"
#include "model/core/weights.h"
#include "model/nn/trace.h"

namespace tscope::testing {

// A GPT-2-style config of the given size (L layers, H heads, C = d_model, V vocab, P positions).
inline ModelConfig smallConfig(int L, int H, int C, int V, int P) {
  ModelConfig c;
  c.n_layer = L;
  c.n_head = H;
  c.n_embd = C;
  c.vocab_size = V;
  c.n_positions = P;
  return c;
}

// Every layer's components and residuals and the internals of `layer` (-1: none), no logit lens:
// what the Inside panel's views, the attribution and the what-if checks read.
inline TraceOptions componentsAndInternals(int layer = -1) {
  TraceOptions options;
  options.logitLensTopK = 0;
  options.components = true;
  options.residuals = true;
  if (layer >= 0) options.internalLayers = {layer};
  return options;
}

// T token ids below V, a fixed pattern that differs with the seed.
inline std::vector<int> sequence(int T, int V, int seed) {
  std::vector<int> ids(T);
  for (int t = 0; t < T; ++t) ids[t] = (t * 7 + seed * 13 + 3) % V;
  return ids;
}

// One architecture-lab variant: a name and the edit it makes to a small GPT-2 config.
struct ArchitectureVariant {
  std::string name;
  std::function<void(ModelConfig&)> apply;
};

// Every positional encoding, norm and norm position, feed-forward, attention mask, tying, MoE
// routing, qk_norm and RoPE scaling, alone and in combinations, for tests that run each backend over all of them.
inline std::vector<ArchitectureVariant> architectureVariants() {
  return {
      {"gpt2", [](ModelConfig&) {}},
      {"sinusoidal_base100",
       [](ModelConfig& c) {
         c.position_encoding = PositionEncoding::Sinusoidal;
         c.position_base = 100;
       }},
      {"rope", [](ModelConfig& c) { c.position_encoding = PositionEncoding::Rope; }},
      {"alibi", [](ModelConfig& c) { c.position_encoding = PositionEncoding::Alibi; }},
      {"nopos", [](ModelConfig& c) { c.position_encoding = PositionEncoding::None; }},
      {"rmsnorm_postnorm",
       [](ModelConfig& c) {
         c.norm = NormKind::RmsNorm;
         c.pre_norm = false;
       }},
      {"layernorm_postnorm_relu",
       [](ModelConfig& c) {
         c.pre_norm = false;
         c.activation = Activation::Relu;
       }},
      {"swiglu_dff48",
       [](ModelConfig& c) {
         c.activation = Activation::SwiGlu;
         c.d_ff = 48;
       }},
      {"gelu_erf_untied",
       [](ModelConfig& c) {
         c.activation = Activation::GeluErf;
         c.tie_word_embeddings = false;
       }},
      {"gqa2_rope",
       [](ModelConfig& c) {
         c.n_kv_head = 2;
         c.position_encoding = PositionEncoding::Rope;
       }},
      // Llama 3's RoPE scaling with D = 8, base 100 and original context 40: pair wavelengths 6.3,
      // 19.9, 62.8, 199 fall in the kept, blended and divided bands.
      {"gqa2_rope_llama3_scaled",
       [](ModelConfig& c) {
         c.n_kv_head = 2;
         c.position_encoding = PositionEncoding::Rope;
         c.position_base = 100;
         c.rope_scaling_factor = 8;
         c.rope_low_freq_factor = 1;
         c.rope_high_freq_factor = 4;
         c.rope_original_context = 40;
       }},
      {"qknorm_gqa2_rope_rmsnorm",
       [](ModelConfig& c) {
         c.qk_norm = true;
         c.n_kv_head = 2;
         c.position_encoding = PositionEncoding::Rope;
         c.norm = NormKind::RmsNorm;
       }},
      {"mqa_alibi_window3",
       [](ModelConfig& c) {
         c.n_kv_head = 1;
         c.position_encoding = PositionEncoding::Alibi;
         c.attention_window = 3;
       }},
      {"encoder_sinusoidal",
       [](ModelConfig& c) {
         c.causal = false;
         c.position_encoding = PositionEncoding::Sinusoidal;
       }},
      {"encoder_window4",
       [](ModelConfig& c) {
         c.causal = false;
         c.attention_window = 4;
       }},
      {"attention_only", [](ModelConfig& c) { c.attention_only = true; }},
      // The lecture's trainability lab settings: no norm at all, no residual connection, and both.
      {"nonorm", [](ModelConfig& c) { c.norm = NormKind::None; }},
      {"noresidual_rmsnorm",
       [](ModelConfig& c) {
         c.residual = false;
         c.norm = NormKind::RmsNorm;
       }},
      {"nonorm_noresidual_postnorm",
       [](ModelConfig& c) {
         c.norm = NormKind::None;
         c.residual = false;
         c.pre_norm = false;
       }},
      {"moe4_top2",
       [](ModelConfig& c) {
         c.n_experts = 4;
         c.moe_top_k = 2;
         c.moe_capacity_factor = 0;
       }},
      {"moe4_top1_capacity",
       [](ModelConfig& c) {
         c.n_experts = 4;
         c.moe_top_k = 1;
         c.moe_capacity_factor = 1.0;
       }},
      {"moe3_expert_choice_swiglu",
       [](ModelConfig& c) {
         c.n_experts = 3;
         c.moe_top_k = 2;
         c.moe_routing = MoeRoutingKind::ExpertChoice;
         c.moe_capacity_factor = 1.0;
         c.activation = Activation::SwiGlu;
       }},
      {"moe4_top2_shared_unnormalized_swiglu",
       [](ModelConfig& c) {  // Qwen2-MoE's mixture
         c.n_experts = 4;
         c.moe_top_k = 2;
         c.moe_capacity_factor = 0;
         c.moe_normalize_top_k = false;
         c.moe_shared_expert_d_ff = 20;
         c.activation = Activation::SwiGlu;
       }},
      // Heads wider than C / H (Qwen3-0.6B's kind: A = H D = 64 over C = 32) and narrower (A = 16).
      {"head_dim16_qknorm_gqa2_rope_swiglu",
       [](ModelConfig& c) {
         c.head_dim = 16;
         c.qk_norm = true;
         c.n_kv_head = 2;
         c.position_encoding = PositionEncoding::Rope;
         c.norm = NormKind::RmsNorm;
         c.activation = Activation::SwiGlu;
         c.d_ff = 48;
       }},
      {"head_dim4_postnorm_alibi",
       [](ModelConfig& c) {
         c.head_dim = 4;
         c.pre_norm = false;
         c.position_encoding = PositionEncoding::Alibi;
       }},
      // Models built with an efficient-attention variant (config.attention_variant).
      {"linear_rope_gqa2",
       [](ModelConfig& c) {
         c.attention_variant.variant = AttentionVariant::Linear;
         c.position_encoding = PositionEncoding::Rope;
         c.n_kv_head = 2;
       }},
      {"linformer_pool_k5",
       [](ModelConfig& c) {
         c.attention_variant.variant = AttentionVariant::Linformer;
         c.attention_variant.projected = 5;
       }},
      {"encoder_linformer_k7",
       [](ModelConfig& c) {
         c.causal = false;
         c.attention_variant.variant = AttentionVariant::Linformer;
         c.attention_variant.projected = 7;
       }},
      {"window_variant3_alibi",
       [](ModelConfig& c) {
         c.attention_variant.variant = AttentionVariant::Window;
         c.attention_variant.window = 3;
         c.position_encoding = PositionEncoding::Alibi;
       }},
      {"flash_tile4_sinusoidal",
       [](ModelConfig& c) {
         c.attention_variant.variant = AttentionVariant::Flash;
         c.attention_variant.tile = 4;
         c.position_encoding = PositionEncoding::Sinusoidal;
       }},
      {"linear_head_dim12",
       [](ModelConfig& c) {
         c.attention_variant.variant = AttentionVariant::Linear;
         c.head_dim = 12;
       }},
      // BERT's shape: post-norm encoder, embeddings normed, the MLM head before the tied unembedding.
      {"bert_postnorm_embnorm_mlmhead",
       [](ModelConfig& c) {
         c.causal = false;
         c.pre_norm = false;
         c.activation = Activation::GeluErf;
         c.embedding_norm = true;
         c.mlm_head = true;
       }},
      {"prenorm_rmsnorm_embnorm_mlmhead_untied",
       [](ModelConfig& c) {
         c.norm = NormKind::RmsNorm;
         c.embedding_norm = true;
         c.mlm_head = true;
         c.tie_word_embeddings = false;
       }},
  };
}

// The variant applied to a 2-layer, 4-head, C=32, V=41, 24-position model (checked valid).
inline ModelConfig variantConfig(const ArchitectureVariant& v) {
  ModelConfig c = smallConfig(2, 4, 32, 41, 24);
  v.apply(c);
  EXPECT_EQ(validateConfig(c), "") << v.name;
  return c;
}

// GPT-2 init plus noise on norm weights (ln_*, q_norm, k_norm) and biases, so no bias path is trivially zero.
inline Weights randomWeights(const ModelConfig& config, uint64_t seed) {
  Weights w(config);
  w.initRandom(seed);
  Rng rng(seed + 1000);
  for (const auto& spec : w.layout()) {
    if (!spec.name.ends_with(".bias") && spec.name.find("ln_") == std::string::npos && !spec.name.ends_with("_norm.weight")) continue;
    float* p = w.param(spec.name);
    for (size_t i = 0; i < spec.numel(); ++i) p[i] += static_cast<float>(0.2 * (rng.uniform() - 0.5));
  }
  return w;
}

struct Difference {
  double maxAbs = 0;  // largest |a - b|
  double maxRef = 0;  // largest |b|
  size_t where = 0;   // index of the largest difference
  double relative() const { return maxRef > 0 ? maxAbs / maxRef : maxAbs; }
  std::string describe() const {
    return "max |diff| " + std::to_string(maxAbs) + " at " + std::to_string(where) + ", max |ref| " + std::to_string(maxRef) + ", relative " +
           std::to_string(relative());
  }
};

inline Difference compare(const float* a, const float* b, size_t n) {
  Difference d;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(b[i]) && a[i] == b[i]) continue;  // matching -inf (masked scores)
    const double diff = std::isfinite(a[i]) ? std::fabs((double)a[i] - b[i]) : INFINITY;
    if (diff > d.maxAbs || std::isnan(diff)) {
      d.maxAbs = std::isnan(diff) ? INFINITY : diff;
      d.where = i;
    }
    if (std::isfinite(b[i])) d.maxRef = std::max(d.maxRef, std::fabs((double)b[i]));
  }
  return d;
}

inline Difference compare(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return Difference{INFINITY, 0, 0};
  return compare(a.data(), b.data(), a.size());
}

}  // namespace tscope::testing

// Llama-family HuggingFace checkpoints onto tscope's layout. HF linear layers are stored (out, in)
// and tscope's (in, out), so every matrix is transposed; q, k, v go into the fused c_attn columns
// Q | K | V; gate_proj/up_proj/down_proj become c_gate/c_fc/c_proj; absent biases stay zero.
// Mixtral's sparse MoE block maps onto tscope's token-choice mixture: its router softmax over all
// experts renormalised over the top k equals tscope's softmax(KeepTopK(h, k)), with no capacity
// limit; experts' w1/w3/w2 become c_gate/c_fc/c_proj. Qwen2-MoE's (every layer sparse) is the same
// mixture with the top-k probabilities unrenormalised when norm_topk_prob is false, plus a shared
// expert (mlp.shared_expert.*) scaled by sigmoid(x . shared_expert_gate), whose (1, C) weight
// becomes the float vector (C). HF's
// RoPE rotates the pairs (i, i + D/2) of a head (rotate_half), tscope's the pairs (2i, 2i + 1), so
// the q and k rows of each head are reordered (i -> 2i, i + D/2 -> 2i + 1): q . k is unchanged.
// Qwen3's per-head q_norm / k_norm weights (D) are reordered the same way (RMS is order-blind).
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_vit.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/hf_shards.h"

namespace tscope {

using hf::architectureOf, hf::modelTypeOf, hf::isNull, hf::readOptional, hf::Placement, hf::ShardSet;

namespace {

const std::set<std::string> kFamily = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                                       "Qwen3ForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM"};
const std::set<std::string> kFamilyTypes = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe"};

// "llama", "mistral", "qwen2", "qwen3", "mixtral" or "qwen2_moe" for a config of the family (by architecture, else model_type).
std::string familyOf(const nlohmann::json& j) {
  const std::string arch = architectureOf(j);
  if (arch.empty()) return modelTypeOf(j);
  if (arch == "MistralForCausalLM") return "mistral";
  if (arch == "Qwen2ForCausalLM") return "qwen2";
  if (arch == "Qwen3ForCausalLM") return "qwen3";
  if (arch == "MixtralForCausalLM") return "mixtral";
  if (arch == "Qwen2MoeForCausalLM") return "qwen2_moe";
  return "llama";
}

// What the checkpoint stores beside the weights every Llama-family model has.
struct HfBiases {
  bool qkv = false;  // q_proj/k_proj/v_proj.bias (Qwen2, Qwen2-MoE; Llama and Qwen3 with attention_bias)
  bool o = false;    // o_proj.bias (Llama and Qwen3 with attention_bias)
  bool mlp = false;  // gate_proj/up_proj/down_proj.bias (Llama with mlp_bias)
};

HfBiases biasesOf(const nlohmann::json& j) {
  HfBiases b;
  // HF's Qwen2 and Qwen2-MoE attention always has q/k/v biases and never an o_proj bias, and their
  // MLPs none, whatever attention_bias or mlp_bias say (transformers' modeling_qwen2.py: bias=True
  // for q/k/v_proj, bias=False for o_proj and the MLP). Qwen3 dropped them: attention_bias decides.
  if (familyOf(j) == "qwen2" || familyOf(j) == "qwen2_moe") {
    b.qkv = true;
    return b;
  }
  bool attentionBias = false, mlpBias = false;
  readOptional(j, "attention_bias", attentionBias);
  readOptional(j, "mlp_bias", mlpBias);
  if (attentionBias) b.qkv = b.o = true;
  b.mlp = mlpBias;
  return b;
}

// `family` as familyOf names it: Mixtral and Qwen2-MoE store their mixtures under different names.
std::vector<Placement> placements(const ModelConfig& c, const HfBiases& biases, const std::string& family) {
  const int64_t C = c.n_embd, A = c.attnDim(), F = c.dFF(), V = c.vocab_size, KV = c.kvDim();
  std::vector<Placement> out;
  // One SwiGLU feed-forward of width `width`: the checkpoint's gate / up / down matrices (`names`,
  // with their biases when `withBias`) onto c_gate / c_fc / c_proj.
  using MatrixNames = std::array<const char*, 3>;
  constexpr MatrixNames kLlamaMlp = {"gate_proj", "up_proj", "down_proj"}, kMixtralExpert = {"w1", "w3", "w2"};
  auto addSwiGlu = [&](const std::string& from, const std::string& to, int64_t width, const MatrixNames& names, bool withBias) {
    const MatrixNames params = {"c_gate", "c_fc", "c_proj"};
    for (int m = 0; m < 3; ++m) {
      const bool down = m == 2;
      out.push_back({from + names[m] + ".weight", to + params[m] + ".weight", down ? std::vector<int64_t>{C, width} : std::vector<int64_t>{width, C},
                     false, 0, false});
      if (withBias) out.push_back({from + names[m] + ".bias", to + params[m] + ".bias", {down ? C : width}, true, 0, false});
    }
  };
  out.push_back({"model.embed_tokens.weight", "wte.weight", {V, C}, true, 0, false});
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string hf = "model.layers." + std::to_string(l) + ".", p = "h." + std::to_string(l) + ".";
    out.push_back({hf + "input_layernorm.weight", p + "ln_1.weight", {C}, true, 0, false});
    out.push_back({hf + "post_attention_layernorm.weight", p + "ln_2.weight", {C}, true, 0, false});
    const std::pair<const char*, int64_t> qkv[3] = {{"q_proj", A}, {"k_proj", KV}, {"v_proj", KV}};
    int64_t column = 0;
    for (const auto& [name, rows] : qkv) {
      const bool rope = name[0] != 'v';
      out.push_back({hf + "self_attn." + name + ".weight", p + "attn.c_attn.weight", {rows, C}, false, column, rope});
      if (biases.qkv) out.push_back({hf + "self_attn." + name + ".bias", p + "attn.c_attn.bias", {rows}, false, column, rope});
      column += rows;
    }
    if (c.qk_norm) {  // Qwen3: (D) each, in the heads' RoPE row order
      out.push_back({hf + "self_attn.q_norm.weight", p + "attn.q_norm.weight", {c.headDim()}, false, 0, true});
      out.push_back({hf + "self_attn.k_norm.weight", p + "attn.k_norm.weight", {c.headDim()}, false, 0, true});
    }
    out.push_back({hf + "self_attn.o_proj.weight", p + "attn.c_proj.weight", {C, A}, false, 0, false});
    if (biases.o) out.push_back({hf + "self_attn.o_proj.bias", p + "attn.c_proj.bias", {C}, true, 0, false});
    if (c.isMoe()) {
      // Every layer a mixture: the router (E, C) is Mixtral's block_sparse_moe.gate or Qwen2-MoE's
      // mlp.gate; the experts are SwiGLU (Mixtral's w1 / w3 / w2); Qwen2-MoE adds a shared expert.
      const bool qwen = family == "qwen2_moe";
      const std::string moe = hf + (qwen ? "mlp." : "block_sparse_moe.");
      out.push_back({moe + "gate.weight", p + "mlp.router.weight", {c.n_experts, C}, false, 0, false});
      for (int e = 0; e < c.n_experts; ++e)
        addSwiGlu(moe + "experts." + std::to_string(e) + ".", p + "mlp.experts." + std::to_string(e) + ".", F, qwen ? kLlamaMlp : kMixtralExpert,
                  false);
      if (c.hasSharedExpert()) {
        addSwiGlu(moe + "shared_expert.", p + "mlp.shared_expert.", c.moe_shared_expert_d_ff, kLlamaMlp, false);
        out.push_back({moe + "shared_expert_gate.weight", p + "mlp.shared_expert_gate.weight", {1, C}, true, 0, false, true});
      }
      continue;
    }
    addSwiGlu(hf + "mlp.", p + "mlp.", F, kLlamaMlp, biases.mlp);
  }
  out.push_back({"model.norm.weight", "ln_f.weight", {C}, true, 0, false});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", "lm_head.weight", {V, C}, true, 0, false});
  return out;
}

bool isIgnored(const std::string& name, const ModelConfig& c) {
  // Older Llama checkpoints store RoPE's inverse frequencies (a buffer, recomputed here); tied
  // models may still carry a copy of the embedding as lm_head.
  return name.ends_with(".rotary_emb.inv_freq") || (c.tie_word_embeddings && name == "lm_head.weight");
}

// rope_scaling: "default" changes nothing; "llama3" (Llama 3.1 / 3.2) maps onto the
// rope_scaling_* fields; any other rope_type (linear, dynamic, yarn, longrope, ...) is refused.
// Older configs name the type "type" instead of "rope_type".
void readRopeScaling(const nlohmann::json& s, ModelConfig& c, const std::string& where) {
  const std::string type = s.is_object() ? s.value("rope_type", s.value("type", std::string("?"))) : "?";
  if (type == "default") return;
  if (type != "llama3") throw Error(where + ": rope_scaling with rope_type " + type + " is not supported yet (tscope reads llama3)");
  const std::string inside = where + ": rope_scaling";
  readField(s, "factor", c.rope_scaling_factor, inside);
  readField(s, "low_freq_factor", c.rope_low_freq_factor, inside);
  readField(s, "high_freq_factor", c.rope_high_freq_factor, inside);
  readField(s, "original_max_position_embeddings", c.rope_original_context, inside);
  if (!(c.rope_scaling_factor > 0)) throw Error(inside + ": factor must be > 0 (got " + s["factor"].dump() + ")");
}

}  // namespace

bool isHfLlamaFamily(const nlohmann::json& j) {
  const std::string arch = architectureOf(j);
  return arch.empty() ? kFamilyTypes.count(modelTypeOf(j)) != 0 : kFamily.count(arch) != 0;
}

std::string unsupportedHfArchitecture(const nlohmann::json& j) {
  if (!j.is_object() || isHfLlamaFamily(j) || isHfBert(j) || isHfVit(j)) return "";
  const std::string arch = architectureOf(j), type = modelTypeOf(j);
  if (!arch.empty() && arch != "GPT2LMHeadModel")
    return "architecture " + oneLine(arch, 80) +
           " is not supported yet (tscope reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
           "MixtralForCausalLM, Qwen2MoeForCausalLM, BertForMaskedLM and ViTForImageClassification)";
  if (arch.empty() && !type.empty() && type != "gpt2")
    return "model_type " + oneLine(type, 80) +
           " is not supported yet (tscope reads gpt2, llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, bert and vit)";
  return "";
}

namespace {

// The mixture fields Mixtral and Qwen2-MoE share: E experts (`expertsKey`), num_experts_per_tok
// chosen per token, no capacity limit (HF never drops a token), router_aux_loss_coef (0.001 when
// absent: both HF configs' default).
void readTokenChoiceMoe(const nlohmann::json& j, const std::string& where, const char* expertsKey, ModelConfig& c) {
  readField(j, expertsKey, c.n_experts, where);
  readField(j, "num_experts_per_tok", c.moe_top_k, where);
  c.moe_capacity_factor = 0;
  c.moe_routing = MoeRoutingKind::TokenChoice;
  c.moe_aux_loss_alpha = 0.001;
  readOptional(j, "router_aux_loss_coef", c.moe_aux_loss_alpha, where);
  if (c.n_experts < 1) throw Error(where + ": " + expertsKey + " must be at least 1");
}

// Qwen2-MoE's mixture (HF's Qwen2MoeSparseMoeBlock) on every layer: num_experts SwiGLU experts of
// moe_intermediate_size (intermediate_size is its dense MLP's width, unused when every layer is
// sparse), top num_experts_per_tok, renormalised only with norm_topk_prob, and a shared expert of
// shared_expert_intermediate_size. Dense layers (decoder_sparse_step > 1, mlp_only_layers) are refused.
void readQwen2MoeFields(const nlohmann::json& j, const std::string& where, ModelConfig& c) {
  int sparseStep = 1;
  readOptional(j, "decoder_sparse_step", sparseStep, where);
  std::vector<int> denseLayers;
  if (!isNull(j, "mlp_only_layers")) denseLayers = readArray<int>(j, "mlp_only_layers", where);
  if (sparseStep != 1 || !denseLayers.empty())
    throw Error(where + ": Qwen2-MoE with dense layers (decoder_sparse_step " + std::to_string(sparseStep) + ", " +
                std::to_string(denseLayers.size()) + " mlp_only_layers) is not supported yet: tscope needs every layer sparse");
  readTokenChoiceMoe(j, where, "num_experts", c);  // Qwen2MoeConfig's default router_aux_loss_coef is 0.001 too
  readField(j, "moe_intermediate_size", c.d_ff, where);
  readField(j, "shared_expert_intermediate_size", c.moe_shared_expert_d_ff, where);
  c.moe_normalize_top_k = false;  // Qwen2MoeConfig's default norm_topk_prob
  readOptional(j, "norm_topk_prob", c.moe_normalize_top_k, where);
  if (c.d_ff < 1) throw Error(where + ": moe_intermediate_size must be at least 1");
  if (c.moe_shared_expert_d_ff < 1) throw Error(where + ": shared_expert_intermediate_size must be at least 1");
}

}  // namespace

ModelConfig hfLlamaConfig(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
  ModelConfig c;
  c.position_encoding = PositionEncoding::Rope;
  c.norm = NormKind::RmsNorm;
  c.activation = Activation::SwiGlu;
  c.pre_norm = true;
  c.tie_word_embeddings = false;  // LlamaConfig's default
  readField(j, "hidden_size", c.n_embd, where);
  readField(j, "intermediate_size", c.d_ff, where);
  readField(j, "num_hidden_layers", c.n_layer, where);
  readField(j, "num_attention_heads", c.n_head, where);
  readField(j, "vocab_size", c.vocab_size, where);
  c.n_kv_head = c.n_head;
  readOptional(j, "num_key_value_heads", c.n_kv_head, where);
  c.layer_norm_epsilon = 1e-6;
  readOptional(j, "rms_norm_eps", c.layer_norm_epsilon, where);
  c.position_base = 10000;
  readOptional(j, "rope_theta", c.position_base, where);
  int maxPositions = 2048;
  readOptional(j, "max_position_embeddings", maxPositions, where);
  c.n_positions = std::clamp(maxPositions, 1, kHfContextCap);
  readOptional(j, "tie_word_embeddings", c.tie_word_embeddings, where);
  std::string act = "silu";
  readOptional(j, "hidden_act", act, where);
  if (act != "silu") throw Error(where + ": hidden_act \"" + act + "\" is not supported yet (Llama-family models need silu)");
  if (!isNull(j, "rope_scaling")) readRopeScaling(j["rope_scaling"], c, where);
  // head_dim (Qwen3: 128 at every size, so 16 heads of 128 over hidden_size 1024 in Qwen3-0.6B) sets
  // the attention width H D apart from hidden_size; absent or null, it is hidden_size / heads.
  if (c.n_head <= 0) throw Error(where + ": num_attention_heads must be positive (got " + std::to_string(c.n_head) + ")");
  if (!isNull(j, "head_dim")) {
    readOptional(j, "head_dim", c.head_dim, where);
    if (c.head_dim <= 0) throw Error(where + ": head_dim must be positive (got " + std::to_string(c.head_dim) + ")");
    if (c.n_embd % c.n_head == 0 && c.head_dim == c.n_embd / c.n_head) c.head_dim = 0;  // the default width: nothing to record
  }
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0)
    throw Error(where + ": hidden_size " + std::to_string(c.n_embd) + " is not a multiple of num_attention_heads " + std::to_string(c.n_head) +
                " and there is no head_dim");
  // Mistral: sliding_window on every layer. Qwen2 and Qwen3: only with use_sliding_window, on layers
  // from max_window_layers on (all of them or none are expressible). Llama ignores the field, as HF does.
  const std::string family = familyOf(j);
  c.qk_norm = family == "qwen3";
  int window = 0;
  if (family != "llama") readOptional(j, "sliding_window", window, where);
  bool useWindow = window > 0;
  if (family == "qwen2" || family == "qwen3" || family == "qwen2_moe") {
    useWindow = false;
    readOptional(j, "use_sliding_window", useWindow, where);
    int fromLayer = 0;
    readOptional(j, "max_window_layers", fromLayer, where);
    if (useWindow && fromLayer >= c.n_layer) useWindow = false;
    if (useWindow && fromLayer > 0)
      throw Error(where + ": a sliding window on layers " + std::to_string(fromLayer) + ".. only (max_window_layers) is not supported yet");
  }
  c.attention_window = useWindow && window > 0 ? window : 0;
  if (family == "mixtral") {
    // Every layer is a mixture (HF's MixtralDecoderLayer); tokens are never dropped (no capacity).
    readTokenChoiceMoe(j, where, "num_local_experts", c);
  }
  if (family == "qwen2_moe") readQwen2MoeFields(j, where, c);
  if (auto msg = validateConfig(c); !msg.empty()) throw Error(where + ": " + msg);
  return c;
}

std::vector<Placement> hf::llamaFamilyPlan(const ModelConfig& config, const nlohmann::json& hfConfig) {
  return placements(config, biasesOf(hfConfig), familyOf(hfConfig));
}

bool hf::llamaFamilyIgnores(const std::string& tensorName, const ModelConfig& config) { return isIgnored(tensorName, config); }

Weights loadHfLlamaWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress) {
  const ShardSet shards(dir);
  return placeWeights(
      dir, shards, config, hf::llamaFamilyPlan(config, hfConfig), [&](const std::string& name) { return isIgnored(name, config); },
      architectureOf(hfConfig), progress);
}

}  // namespace tscope

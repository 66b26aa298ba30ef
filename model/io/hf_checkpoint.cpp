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

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "model/core/error.h"
#include "model/core/file_check.h"
#include "model/core/json_field.h"
#include "model/io/safetensors.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

const std::set<std::string> kFamily = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                                       "Qwen3ForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM"};
const std::set<std::string> kFamilyTypes = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe"};
constexpr uintmax_t kMaxIndexBytes = 64u << 20;

std::string architectureOf(const nlohmann::json& j) {
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty() && it->front().is_string())
    return it->front().get<std::string>();
  return "";
}

std::string modelTypeOf(const nlohmann::json& j) {
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) return it->get<std::string>();
  return "";
}

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

bool isNull(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null();
}

// Reads an optional field that may also be null (HF writes null for "not set").
template <class T>
bool readOptional(const nlohmann::json& j, const char* key, T& out, const std::string& where = "config.json") {
  if (isNull(j, key)) return false;
  readField(j, key, out, where);
  return true;
}

// What the checkpoint stores beside the weights every Llama-family model has.
struct HfBiases {
  bool qkv = false;  // q_proj/k_proj/v_proj.bias (Qwen2, Qwen2-MoE; Llama and Qwen3 with attention_bias)
  bool o = false;    // o_proj.bias (Llama and Qwen3 with attention_bias)
  bool mlp = false;  // gate_proj/up_proj/down_proj.bias (Llama with mlp_bias)
};

HfBiases biasesOf(const nlohmann::json& j) {
  HfBiases b;
  if (familyOf(j) == "qwen2" || familyOf(j) == "qwen2_moe") b.qkv = true;  // Qwen3 dropped them: attention_bias, default false, decides
  bool attentionBias = false, mlpBias = false;
  readOptional(j, "attention_bias", attentionBias);
  readOptional(j, "mlp_bias", mlpBias);
  if (attentionBias) b.qkv = b.o = true;
  b.mlp = mlpBias;
  return b;
}

// Where each stored tensor lives: one SafetensorsFile per shard, opened once.
class ShardSet {
 public:
  explicit ShardSet(const fs::path& dir) {
    const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    if (somethingAt(index.string())) {
      readIndex(dir, index);
    } else if (somethingAt(single.string())) {
      auto& file = open(single);
      for (const auto& [name, info] : file.tensors()) where_[name] = &file;
    } else {
      throw Error(dir.string() + ": no model.safetensors or model.safetensors.index.json in the model directory");
    }
  }
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  const SafetensorsFile& fileOf(const std::string& name) const { return *where_.at(name); }
  const std::map<std::string, const SafetensorsFile*>& tensors() const { return where_; }
  std::string anyPath() const { return files_.empty() ? "" : files_.begin()->first; }

 private:
  SafetensorsFile& open(const fs::path& path) {
    auto& slot = files_[path.string()];
    if (!slot) slot = std::make_unique<SafetensorsFile>(path.string());
    return *slot;
  }
  void readIndex(const fs::path& dir, const fs::path& index) {
    const std::string where = index.string();
    const nlohmann::json j = readJsonFile(where, kMaxIndexBytes, "safetensors index");
    auto map = j.is_object() ? j.find("weight_map") : j.end();
    if (map == j.end() || !map->is_object()) throw Error(where + ": no \"weight_map\" object");
    for (const auto& [name, shard] : map->items()) {
      if (!shard.is_string()) throw Error(where + ": the shard of '" + name + "' is not a file name");
      const std::string file = shard.get<std::string>();
      // A shard is a plain file beside the index: no directories, no way out of the model directory.
      if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." || file == "..")
        throw Error(where + ": the shard '" + file + "' of '" + name + "' is not a file name in the model directory");
      const fs::path path = dir / file;
      if (!fs::is_regular_file(path)) throw Error(where + ": shard '" + file + "' (holding '" + name + "') is missing");
      const SafetensorsFile& st = open(path);
      if (!st.has(name)) throw Error(path.string() + ": missing tensor '" + name + "' (the index places it in this shard)");
      where_[name] = &st;
    }
    // Tensors a shard holds that the index does not list are reported as unexpected, too.
    for (const auto& [path, file] : files_)
      for (const auto& [name, info] : file->tensors())
        if (!where_.count(name)) throw Error(path + ": tensor '" + name + "' is not listed in " + index.filename().string());
  }
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
};

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// One stored tensor and where it goes: rows [0, rows) of the (out, in) HF matrix (a bias is
// (out, 1)) become columns [column, column + rows) of the (in, width) tscope matrix, source row
// rowOrder[j] into column + j. `copy` tensors keep their layout (embeddings, norms).
struct Placement {
  std::string hfName;
  std::string param;
  std::vector<int64_t> shape;  // as HF stores it
  bool copy = false;
  int64_t column = 0;
  bool ropeOrder = false;    // q and k: the rows of each head reordered for tscope's RoPE pairs
  bool floatVector = false;  // a (1, n) matrix kept as tscope's float vector (n), never as halves
};

// Whether the placement is a matrix a 16-bit checkpoint keeps as halves.
bool isHalfMatrix(const Placement& p) { return p.shape.size() == 2 && !p.floatVector; }

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

// The HF row that tscope's column j of a head's D-wide block reads.
int64_t ropeSourceRow(int64_t j, int64_t D) {
  const int64_t head = j / D, e = j % D;
  return head * D + (e % 2 == 0 ? e / 2 : e / 2 + D / 2);
}

// src (rows, in) row-major -> columns [column, column + rows) of dst (in, width).
void placeTransposed(float* dst, int64_t width, const Placement& p, const std::vector<float>& src, int64_t D) {
  const int64_t rows = p.shape[0], in = p.shape.size() > 1 ? p.shape[1] : 1;
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t source = p.ropeOrder ? ropeSourceRow(j, D) : j;
    for (int64_t i = 0; i < in; ++i) dst[i * width + p.column + j] = src[source * in + i];
  }
}

// What keeps a 16-bit model's halves alive: the mapped shards they are read from in place, and
// the matrices that had to be built (q, k, v fused into c_attn with their RoPE row order; any
// misaligned tensor).
struct HalfStore {
  std::vector<std::shared_ptr<const MappedFile>> mappings;
  std::vector<std::vector<uint16_t>> owned;
};

// The 16-bit type every matrix of the plan is stored in, or none (an F32 matrix, or F16 and BF16
// mixed): then the model is held in float32.
std::optional<HalfType> halfTypeOf(const std::vector<Placement>& plan, const ShardSet& shards) {
  std::optional<HalfType> type;
  for (const auto& p : plan) {
    if (!isHalfMatrix(p)) continue;
    const DType dtype = shards.fileOf(p.hfName).info(p.hfName).dtype;
    if (dtype == DType::F32) return std::nullopt;
    const HalfType t = dtype == DType::BF16 ? HalfType::Bf16 : HalfType::F16;
    if (type && *type != t) return std::nullopt;
    type = t;
  }
  return type;
}

// Every matrix of the plan as a HalfMatrix (rows = out, cols = in; the embeddings (V, C)): read in
// place from the mapped shard when it is one whole aligned tensor in HF's order, else assembled
// in `store` (source row rowOrder into row column + j, as placeTransposed places columns).
std::vector<HalfMatrix> placeHalves(const std::vector<Placement>& plan, const ShardSet& shards, const std::vector<ParamSpec>& layout, HalfType type,
                                    int64_t D, HalfStore& store, const std::function<void()>& placed) {
  std::map<std::string, size_t> indexOf;
  for (size_t i = 0; i < layout.size(); ++i) indexOf[layout[i].name] = i;
  std::vector<HalfMatrix> halves(layout.size());
  std::set<const MappedFile*> mapped;
  for (const auto& p : plan) {
    if (!isHalfMatrix(p)) continue;
    placed();
    const size_t i = indexOf.at(p.param);
    const ParamSpec& spec = layout[i];
    const int64_t rows = p.copy ? spec.shape[0] : spec.shape[1], cols = p.copy ? spec.shape[1] : spec.shape[0];
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    const uint16_t* inPlace = file.halvesInPlace(p.hfName, p.shape);
    if (inPlace && !p.ropeOrder && p.column == 0 && p.shape[0] == rows) {
      halves[i] = HalfMatrix{inPlace, type, rows, cols, !p.copy};
      if (mapped.insert(file.mapping().get()).second) store.mappings.push_back(file.mapping());
      continue;
    }
    if (!halves[i]) {
      store.owned.emplace_back((size_t)rows * (size_t)cols);
      halves[i] = HalfMatrix{store.owned.back().data(), type, rows, cols, !p.copy};
    }
    uint16_t* dst = const_cast<uint16_t*>(halves[i].data);
    const uint8_t* src = file.bytesInPlace(p.hfName);
    for (int64_t j = 0; j < p.shape[0]; ++j) {
      const int64_t source = p.ropeOrder ? ropeSourceRow(j, D) : j;
      std::memcpy(dst + (p.column + j) * cols, src + source * cols * 2, (size_t)cols * 2);
    }
    file.releasePages(p.hfName);
  }
  return halves;
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
  if (!j.is_object() || isHfLlamaFamily(j)) return "";
  const std::string arch = architectureOf(j), type = modelTypeOf(j);
  if (!arch.empty() && arch != "GPT2LMHeadModel")
    return "architecture " + oneLine(arch, 80) +
           " is not supported yet (tscope reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
           "MixtralForCausalLM and Qwen2MoeForCausalLM)";
  if (arch.empty() && !type.empty() && type != "gpt2")
    return "model_type " + oneLine(type, 80) + " is not supported yet (tscope reads gpt2, llama, mistral, qwen2, qwen3, mixtral and qwen2_moe)";
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

Weights loadHfLlamaWeights(const std::string& dirString, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress) {
  const fs::path dir(dirString);
  const ShardSet shards(dir);
  const std::vector<Placement> plan = placements(config, biasesOf(hfConfig), familyOf(hfConfig));
  // Every tensor is checked before the arena is allocated, so config.json cannot ask for more
  // memory than the files hold.
  std::set<std::string> expected;
  for (const auto& p : plan) {
    if (!shards.has(p.hfName))
      throw Error((fs::exists(dir / "model.safetensors.index.json") ? (dir / "model.safetensors.index.json").string() : shards.anyPath()) +
                  ": missing tensor '" + p.hfName + "'");
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    if (file.info(p.hfName).shape != p.shape)
      throw Error(file.path() + ": tensor '" + p.hfName + "' has shape " + shapeText(file.info(p.hfName).shape) + " but the config needs " +
                  shapeText(p.shape));
    expected.insert(p.hfName);
  }
  for (const auto& [name, file] : shards.tensors())
    if (!expected.count(name) && !isIgnored(name, config))
      throw Error(file->path() + ": unexpected tensor '" + name + "' (not part of a " + architectureOf(hfConfig) + " with this config)");
  const std::vector<ParamSpec> layout = parameterLayout(config);
  std::map<std::string, int64_t> widthOf;  // the columns of each tscope matrix
  for (const auto& spec : layout) widthOf[spec.name] = spec.shape.back();
  // A BF16 / F16 checkpoint keeps its matrices as halves; norms and biases (and F32 checkpoints)
  // become float32 in the owned arena, zero-filled where the checkpoint has no bias.
  const std::optional<HalfType> halfType = halfTypeOf(plan, shards);
  auto store = std::make_shared<HalfStore>();
  int done = 0;
  const auto placed = [&, total = static_cast<int>(plan.size())] { progress ? progress(++done, total) : void(); };
  const std::vector<HalfMatrix> halves =
      halfType ? placeHalves(plan, shards, layout, *halfType, config.headDim(), *store, placed) : std::vector<HalfMatrix>(layout.size());
  Weights weights(config, halves, store);
  std::vector<float> buffer;
  for (const auto& p : plan) {
    if (halfType && isHalfMatrix(p)) continue;  // held as halves
    placed();
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    float* dst = weights.convertedParam(p.param);
    if (p.copy) {
      file.readFloat(p.hfName, dst, p.shape);
    } else {
      buffer.resize(file.info(p.hfName).numel());
      file.readFloat(p.hfName, buffer.data(), p.shape);
      placeTransposed(dst, widthOf.at(p.param), p, buffer, config.headDim());
    }
    file.releasePages(p.hfName);
  }
  return weights;
}

}  // namespace tscope

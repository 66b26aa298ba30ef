// GGUF model files onto tscope's layout (gguf_model.h): the metadata as a HuggingFace config.json,
// llama.cpp's tensor names as HF's, the Llama-family placement plan, matrices kept packed in the
// file's type. Tensor names: gguf-py's constants.py (MODEL_TENSOR, TENSOR_NAMES); metadata keys:
// ggml's docs/gguf.md ("LLM" section: [llm].context_length, embedding_length, block_count,
// feed_forward_length, attention.head_count(_kv), attention.layer_norm_rms_epsilon, rope.freq_base).
#include "model/io/gguf_model.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/core/error.h"
#include "model/core/quant.h"
#include "model/io/gguf.h"
#include "model/io/gguf_tokenizer.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_shards.h"

namespace tscope {

namespace {

using hf::Placement;

struct GgufArch {
  std::string_view name, hfArchitecture, modelType;
  bool interleavedQk;  // q/k rows stored in interleaved RoPE pairs (llama.cpp's LLAMA rope type)
  double defaultEps;   // when attention.layer_norm_rms_epsilon is absent
};
constexpr GgufArch kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "llama", true, 1e-5},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", false, 1e-6},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", false, 1e-6},
};

const GgufArch* archNamed(const std::string& name) {
  for (const GgufArch& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

// HF tensor name -> llama.cpp's; a name without one comes back unchanged (then reported missing).
std::string ggufNameOf(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static constexpr std::pair<std::string_view, std::string_view> kLayer[] = {
      {"input_layernorm.", "attn_norm."},    {"post_attention_layernorm.", "ffn_norm."},
      {"self_attn.q_proj.", "attn_q."},      {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},      {"self_attn.o_proj.", "attn_output."},
      {"self_attn.q_norm.", "attn_q_norm."}, {"self_attn.k_norm.", "attn_k_norm."},
      {"mlp.gate_proj.", "ffn_gate."},       {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."}};
  constexpr std::string_view prefix = "model.layers.";
  if (hf.rfind(prefix, 0) != 0) return hf;
  const size_t dot = hf.find('.', prefix.size());
  if (dot == std::string::npos) return hf;
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size()), rest = hf.substr(dot + 1);
  for (const auto& [from, to] : kLayer)
    if (rest.rfind(from, 0) == 0) return "blk." + layer + "." + std::string(to) + rest.substr(from.size());
  return hf;
}

// The stored tensor of a placement, its dims checked against the plan's HF shape (reversed: GGUF
// lists the fastest-varying dimension first) and its type readable.
const GgufTensorInfo& tensorOf(const GgufFile& file, const Placement& p, const std::string& name) {
  const GgufTensorInfo* t = file.findTensor(name);
  if (!t) throw Error(file.name() + ": missing tensor '" + name + "'");
  const std::vector<int64_t> want(p.shape.rbegin(), p.shape.rend());
  const bool vectorOfRow = p.floatVector && t->dims.size() == 1 && t->elements() == p.shape.back();
  if (t->dims != want && !vectorOfRow)
    throw Error(file.name() + ": tensor '" + name + "' has dims " + hf::shapeText(t->dims) + " but the config needs " + hf::shapeText(want));
  if (!t->type) file.tensorData(*t);  // throws the one line naming its type
  return *t;
}

// A tensor's values as float32 in its stored (HF (out, in)) row-major order.
std::vector<float> floatsOf(const GgufFile& file, const GgufTensorInfo& t) {
  const int64_t cols = t.dims.empty() ? 1 : t.dims[0], rows = cols ? t.elements() / cols : 0;
  std::vector<float> out(static_cast<size_t>(t.elements()));
  const uint8_t* data = file.tensorData(t);
  const size_t bytesPerRow = *rowBytes(*t.type, cols);
  for (int64_t r = 0; r < rows; ++r) dequantizeRow(*t.type, data + r * bytesPerRow, out.data() + r * cols, cols);
  return out;
}

// What keeps a GGUF model's packed matrices alive: the mapped file, and the matrices assembled from
// several tensors (q, k, v fused into c_attn).
struct GgufStore {
  std::shared_ptr<const void> mapping;
  std::vector<std::vector<uint8_t>> owned;
};

// The matrices of one tscope parameter (c_attn: q, k, v) as one PackedMatrix when they share a
// packed type: in place when it is one tensor in the file's row order, else assembled in `store`.
// Nothing (the caller converts them to float32) when their types differ or are F32.
PackedMatrix packedParam(const GgufFile& file, const std::vector<const Placement*>& parts,
                         const std::map<std::string, const GgufTensorInfo*>& tensors, const ParamSpec& spec, int64_t D, GgufStore& store) {
  const WeightType type = *tensors.at(parts[0]->hfName)->type;
  if (type == WeightType::F32) return {};
  for (const Placement* p : parts)
    if (*tensors.at(p->hfName)->type != type) return {};
  const bool copy = parts[0]->copy;
  const int64_t rows = copy ? spec.shape[0] : spec.shape[1], cols = copy ? spec.shape[1] : spec.shape[0];
  const Placement& first = *parts[0];
  if (parts.size() == 1 && !first.ropeOrder && first.column == 0 && first.shape[0] == rows)
    return PackedMatrix(file.tensorData(*tensors.at(first.hfName)), type, rows, cols, !copy);
  const size_t bytesPerRow = *rowBytes(type, cols);
  std::vector<uint8_t>& buffer = store.owned.emplace_back(static_cast<size_t>(rows) * bytesPerRow);
  for (const Placement* p : parts) {
    const uint8_t* src = file.tensorData(*tensors.at(p->hfName));
    for (int64_t j = 0; j < p->shape[0]; ++j) {
      const int64_t source = p->ropeOrder ? hf::ropeSourceRow(j, D) : j;
      std::memcpy(buffer.data() + static_cast<size_t>(p->column + j) * bytesPerRow, src + static_cast<size_t>(source) * bytesPerRow, bytesPerRow);
    }
  }
  return PackedMatrix(buffer.data(), type, rows, cols, !copy);
}

Weights placeGgufWeights(const GgufFile& file, const ModelConfig& config, std::vector<Placement> plan, const GgufArch& arch,
                         const LoadProgress& progress) {
  if (arch.interleavedQk)
    for (Placement& p : plan) p.ropeOrder = false;       // already in tscope's pair order
  std::map<std::string, const GgufTensorInfo*> tensors;  // by HF name
  std::set<std::string> expected;
  for (const Placement& p : plan) {
    const std::string name = ggufNameOf(p.hfName);
    tensors[p.hfName] = &tensorOf(file, p, name);
    expected.insert(name);
  }
  for (const GgufTensorInfo& t : file.tensors())
    if (!expected.count(t.name))
      throw Error(file.name() + ": unexpected tensor '" + oneLine(t.name, 80) + "' (not part of a " + std::string(arch.name) +
                  " model with this config)");
  const std::vector<ParamSpec> layout = parameterLayout(config);
  std::map<std::string, size_t> indexOf;
  for (size_t i = 0; i < layout.size(); ++i) indexOf[layout[i].name] = i;
  std::map<std::string, std::vector<const Placement*>> matrices;  // by tscope parameter
  for (const Placement& p : plan)
    if (hf::isPackedMatrix(p)) matrices[p.param].push_back(&p);
  int done = 0;
  const auto placed = [&, total = static_cast<int>(plan.size())] { progress ? progress(++done, total) : void(); };
  auto store = std::make_shared<GgufStore>();
  store->mapping = file.owner();
  std::vector<PackedMatrix> packed(layout.size());
  std::set<std::string> packedParams;
  for (const auto& [param, parts] : matrices) {
    const size_t i = indexOf.at(param);
    packed[i] = packedParam(file, parts, tensors, layout[i], config.headDim(), *store);
    if (!packed[i]) continue;
    packedParams.insert(param);
    for (size_t k = 0; k < parts.size(); ++k) placed();
  }
  Weights weights(config, packed, store);
  for (const Placement& p : plan) {
    if (packedParams.count(p.param)) continue;
    placed();
    const std::vector<float> values = floatsOf(file, *tensors.at(p.hfName));
    float* dst = weights.convertedParam(p.param);
    if (p.copy) std::copy(values.begin(), values.end(), dst);
    else hf::placeTransposed(dst, layout[indexOf.at(p.param)].shape.back(), p, values.data(), config.headDim());
  }
  return weights;
}

}  // namespace

bool ggufArchitectureSupported(const std::string& architecture) { return archNamed(architecture) != nullptr; }

nlohmann::json ggufHfConfig(const GgufFile& file) {
  const std::string name = file.architecture();
  const GgufArch* arch = archNamed(name);
  if (!arch)
    throw Error(file.name() + ": architecture '" + oneLine(name, 40) + "' is not supported yet (tscope reads llama, qwen2 and qwen3 GGUF files)");
  const std::string p = name + ".";
  if (file.tryUint(p + "expert_count").value_or(0) > 0)
    throw Error(file.name() + ": " + p + "expert_count is set: mixture-of-experts GGUF files are not read yet");
  if (const auto scaling = file.tryString(p + "rope.scaling.type"); scaling && *scaling != "none")
    throw Error(file.name() + ": " + p + "rope.scaling.type is '" + oneLine(*scaling, 40) + "', which tscope does not read yet");
  if (file.findTensor("rope_freqs.weight")) throw Error(file.name() + ": rope_freqs.weight (Llama 3.1-style RoPE frequency factors) is not read yet");
  const GgufTensorInfo& embedding = file.tensor("token_embd.weight");
  if (embedding.dims.size() != 2) throw Error(file.name() + ": token_embd.weight is not a matrix (dims " + hf::shapeText(embedding.dims) + ")");
  const uint64_t heads = file.getUint(p + "attention.head_count");
  nlohmann::json j;
  j["architectures"] = {std::string(arch->hfArchitecture)};
  j["model_type"] = std::string(arch->modelType);
  j["hidden_size"] = file.getUint(p + "embedding_length");
  j["intermediate_size"] = file.getUint(p + "feed_forward_length");
  j["num_hidden_layers"] = file.getUint(p + "block_count");
  j["num_attention_heads"] = heads;
  j["num_key_value_heads"] = file.tryUint(p + "attention.head_count_kv").value_or(heads);
  j["rms_norm_eps"] = file.tryFloat(p + "attention.layer_norm_rms_epsilon").value_or(arch->defaultEps);
  j["rope_theta"] = file.tryFloat(p + "rope.freq_base").value_or(10000.0);
  j["vocab_size"] = embedding.dims[1];
  j["tie_word_embeddings"] = file.findTensor("output.weight") == nullptr;
  j["hidden_act"] = "silu";
  if (const auto context = file.tryUint(p + "context_length")) j["max_position_embeddings"] = *context;
  const auto keyLength = file.tryUint(p + "attention.key_length"), valueLength = file.tryUint(p + "attention.value_length");
  if (keyLength && valueLength && *keyLength != *valueLength)
    throw Error(file.name() + ": attention.key_length " + std::to_string(*keyLength) + " differs from value_length " + std::to_string(*valueLength) +
                ", which tscope does not support");
  if (keyLength) j["head_dim"] = *keyLength;
  return j;
}

LoadedModel loadGgufModel(const std::string& path, const LoadProgress& progress) {
  const GgufFile file = GgufFile::open(path);
  const nlohmann::json hfConfig = ggufHfConfig(file);
  const ModelConfig config = hfLlamaConfig(hfConfig, file.name());
  LoadedModel model{Weights{}, nullptr, "gguf", path, "", {}};
  model.weights = placeGgufWeights(file, config, hf::llamaFamilyPlan(config, hfConfig), *archNamed(file.architecture()), progress);
  try {
    model.tokenizer = padTokenizer(ggufTokenizer(file), config.vocab_size);
  } catch (const Error& e) {
    model.tokenizerNote = e.what();
  }
  return model;
}

}  // namespace tscope

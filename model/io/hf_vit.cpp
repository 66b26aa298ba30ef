// HuggingFace ViTForImageClassification onto tscope's image encoder (hf_vit.h). HF's ViT
// (modeling_vit.py, ViTConfig's fields): the patch embedding is a Conv2d of kernel and stride p, weight
// (C, channels, p, p) and bias (C): as a matmul, a patch's pixels flattened channel, row, column (the
// weight's own order, imagePatchRows in config.h) times the weight reshaped (C, K) and transposed into
// tscope's patch.weight (K, C); the bias is wte's row 1, which every patch token looks up. cls_token
// (1, 1, C) is wte's row 0, position_embeddings (1, 1 + P, C) wpe. Each layer is pre-norm:
// x + attention(layernorm_before(x)), then x + output(act(intermediate(layernorm_after(x)))); the final
// vit.layernorm is ln_f and the classifier reads the [CLS] row. Matrices are stored (out, in).
#include "model/io/hf_vit.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/core/error.h"
#include "model/io/hf_shards.h"

namespace tscope {

using hf::architectureOf, hf::modelTypeOf, hf::readOptional, hf::ShardSet;

namespace {

constexpr const char* kClassifier = "ViTForImageClassification";

// One stored tensor and where its values go. Copied: element i to param[offset + i]. Transposed: the
// stored (rows, in) matrix (a 4-D convolution weight read as (C, K)) into columns [offset, offset +
// rows) of the (in, width) tscope matrix.
struct VitPlacement {
  std::string hfName;
  std::vector<int64_t> shape;  // as HF stores it
  std::string param;
  bool transpose = false;
  int64_t offset = 0;
};

bool listsClassifier(const nlohmann::json& j) {
  auto it = j.find("architectures");
  if (it == j.end() || !it->is_array()) return false;
  return std::any_of(it->begin(), it->end(), [](const nlohmann::json& a) { return a.is_string() && a.get<std::string>() == kClassifier; });
}

// image_size or patch_size: a number, or HF's [height, width] with both the same (tscope's images and
// patches are square).
int readSquare(const nlohmann::json& j, const char* key, int fallback, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_array()) {
    int side = fallback;
    readField(j, key, side, where);
    return side;
  }
  if (it->size() != 2) throw Error(where + ": \"" + key + "\" must be a number or [height, width] (got " + std::to_string(it->size()) + " values)");
  int sides[2] = {0, 0};
  for (int i = 0; i < 2; ++i)
    if (const char* problem = jsonFieldProblem((*it)[i], sides[i])) throw Error(where + ": \"" + key + "\"[" + std::to_string(i) + "] " + problem);
  if (sides[0] != sides[1])
    throw Error(where + ": \"" + key + "\" [" + std::to_string(sides[0]) + ", " + std::to_string(sides[1]) +
                "] is not square: tscope reads square images cut into square patches");
  return sides[0];
}

// The classes: id2label's (num_labels must agree when both are given), else num_labels of them.
int classCount(const nlohmann::json& j, const std::string& where) {
  const int classes = static_cast<int>(hfVitLabels(j, where).size());
  int numLabels = classes;
  if (!hf::isNull(j, "id2label") && readOptional(j, "num_labels", numLabels, where) && numLabels != classes)
    throw Error(where + ": num_labels " + std::to_string(numLabels) + " disagrees with the " + std::to_string(classes) + " classes of id2label");
  return classes;
}

Activation vitActivation(const nlohmann::json& j, const std::string& where) {
  std::string act = "gelu";
  readOptional(j, "hidden_act", act, where);
  if (act == "gelu") return Activation::GeluErf;  // HF's "gelu" is the exact erf form
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return Activation::GeluTanh;
  if (act == "relu") return Activation::Relu;
  throw Error(where + ": hidden_act \"" + oneLine(act, 40) + "\" is not supported yet (ViT models need gelu, gelu_new, gelu_pytorch_tanh or relu)");
}

// Refuses the ViT heads that are not image classifiers.
void requireClassifier(const nlohmann::json& j, const std::string& where) {
  const std::string arch = architectureOf(j);
  if (!listsClassifier(j) && !arch.empty()) {
    const std::string why = arch == "ViTForMaskedImageModeling" ? " is not a classifier (it reconstructs masked patches)"
                            : arch == "ViTModel"                ? " has no classifier (the encoder only)"
                                                                : " is not supported yet";
    throw Error(where + ": architecture " + oneLine(arch, 80) + why + "; tscope reads " + kClassifier);
  }
  bool maskToken = false;
  readOptional(j, "use_mask_token", maskToken, where);
  if (maskToken) throw Error(where + ": use_mask_token true (ViTForMaskedImageModeling's mask token) is not supported: tscope reads " + kClassifier);
}

std::vector<VitPlacement> vitPlacements(const ModelConfig& c, const std::string& vit, bool qkvBias) {
  const int64_t C = c.n_embd, F = c.dFF(), V = c.vocab_size, P1 = c.n_positions, p = c.patch_size;
  std::vector<VitPlacement> out;
  auto copy = [&](const std::string& hf, std::vector<int64_t> shape, const std::string& param, int64_t offset = 0) {
    out.push_back({hf, std::move(shape), param, false, offset});
  };
  auto linear = [&](const std::string& hf, const std::string& param, int64_t rows, int64_t in) {  // (out, in) -> (in, out)
    out.push_back({hf + ".weight", {rows, in}, param + ".weight", true, 0});
    copy(hf + ".bias", {rows}, param + ".bias");
  };
  auto norm = [&](const std::string& hf, const std::string& param) {
    copy(hf + ".weight", {C}, param + ".weight");
    copy(hf + ".bias", {C}, param + ".bias");
  };
  const std::string e = vit + "embeddings.";
  copy(e + "cls_token", {1, 1, C}, "wte.weight");
  copy(e + "patch_embeddings.projection.bias", {C}, "wte.weight", C);
  out.push_back({e + "patch_embeddings.projection.weight", {C, c.num_channels, p, p}, "patch.weight", true, 0});
  copy(e + "position_embeddings", {1, P1, C}, "wpe.weight");
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string hf = vit + "encoder.layer." + std::to_string(l) + ".", t = "h." + std::to_string(l) + ".";
    norm(hf + "layernorm_before", t + "ln_1");
    int64_t column = 0;
    for (const char* name : {"query", "key", "value"}) {
      const std::string base = hf + "attention.attention." + name;
      out.push_back({base + ".weight", {C, C}, t + "attn.c_attn.weight", true, column});
      if (qkvBias) copy(base + ".bias", {C}, t + "attn.c_attn.bias", column);  // else zero, as the arena starts
      column += C;
    }
    linear(hf + "attention.output.dense", t + "attn.c_proj", C, C);
    norm(hf + "layernorm_after", t + "ln_2");
    linear(hf + "intermediate.dense", t + "mlp.c_fc", F, C);
    linear(hf + "output.dense", t + "mlp.c_proj", C, F);
  }
  norm(vit + "layernorm", "ln_f");
  copy("classifier.weight", {V, C}, "lm_head.weight");  // (V, C) is tscope's unembedding layout already
  copy("classifier.bias", {V}, "lm_head.bias");
  return out;
}

// Every planned tensor present with its shape, and nothing else stored but ViTModel's pooler, before
// the arena is allocated (config.json cannot ask for more memory than the files hold).
void checkTensors(const ShardSet& shards, const std::vector<VitPlacement>& plan, const std::string& vit) {
  std::set<std::string> expected;
  for (const auto& p : plan) {
    if (!shards.has(p.hfName)) throw Error(shards.anyPath() + ": missing tensor '" + p.hfName + "'");
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    if (file.info(p.hfName).shape != p.shape)
      throw Error(file.path() + ": tensor '" + p.hfName + "' has shape " + hf::shapeText(file.info(p.hfName).shape) + " but the config needs " +
                  hf::shapeText(p.shape));
    expected.insert(p.hfName);
  }
  for (const auto& [name, file] : shards.tensors())
    if (!expected.count(name) && !name.starts_with(vit + "pooler."))
      throw Error(file->path() + ": unexpected tensor '" + name + "' (not part of a " + kClassifier + " with this config)");
}

}  // namespace

bool isHfVit(const nlohmann::json& j) { return j.is_object() && (listsClassifier(j) || modelTypeOf(j) == "vit"); }

ModelConfig hfVitConfig(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
  requireClassifier(j, where);
  ModelConfig c;
  c.causal = false;
  c.pre_norm = true;  // x + f(LN(x)), then vit.layernorm
  c.norm = NormKind::LayerNorm;
  c.position_encoding = PositionEncoding::Learned;
  c.tie_word_embeddings = false;
  c.tokenizer = "labels";
  readField(j, "hidden_size", c.n_embd, where);
  readField(j, "num_hidden_layers", c.n_layer, where);
  readField(j, "num_attention_heads", c.n_head, where);
  readField(j, "intermediate_size", c.d_ff, where);
  c.layer_norm_epsilon = 1e-12;  // ViTConfig's default
  readOptional(j, "layer_norm_eps", c.layer_norm_epsilon, where);
  c.activation = vitActivation(j, where);
  c.image_size = readSquare(j, "image_size", 224, where);  // ViTConfig's defaults: 224, 16, 3
  c.patch_size = readSquare(j, "patch_size", 16, where);
  c.num_channels = 3;
  readOptional(j, "num_channels", c.num_channels, where);
  if (c.image_size < 1) throw Error(where + ": image_size must be at least 1 (got " + std::to_string(c.image_size) + ")");
  if (c.patch_size < 1) throw Error(where + ": patch_size must be at least 1 (got " + std::to_string(c.patch_size) + ")");
  if (c.image_size % c.patch_size != 0)
    throw Error(where + ": patch_size " + std::to_string(c.patch_size) + " does not divide image_size " + std::to_string(c.image_size) +
                ": ViT cuts the image into whole patches");
  c.vocab_size = classCount(j, where);
  if (c.n_head < 1) throw Error(where + ": num_attention_heads must be at least 1 (got " + std::to_string(c.n_head) + ")");
  if (c.n_embd % c.n_head != 0)
    throw Error(where + ": hidden_size " + std::to_string(c.n_embd) + " is not a multiple of num_attention_heads " + std::to_string(c.n_head));
  if (c.d_ff < 1) throw Error(where + ": intermediate_size must be at least 1");
  if (c.image_size <= 4096) c.n_positions = 1 + c.numPatches();  // a larger image_size: validateConfig says why
  if (auto msg = validateConfig(c); !msg.empty()) throw Error(where + ": " + msg);
  return c;
}

std::vector<std::string> hfVitLabels(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
  if (hf::isNull(j, "id2label")) {
    int n = 0;
    if (!readOptional(j, "num_labels", n, where)) throw Error(where + ": no \"id2label\" or \"num_labels\": the number of classes is unknown");
    if (n < 1 || n > (1 << 20)) throw Error(where + ": num_labels must be 1..1048576 (got " + std::to_string(n) + ")");
    std::vector<std::string> labels;
    for (int i = 0; i < n; ++i) labels.push_back("LABEL_" + std::to_string(i));
    return labels;
  }
  const nlohmann::json& map = j.at("id2label");
  if (!map.is_object() || map.empty()) throw Error(where + ": \"id2label\" must be an object {\"0\": \"class name\", ...} with at least one class");
  std::vector<std::string> labels(map.size());
  std::vector<bool> seen(map.size(), false);
  for (const auto& [key, value] : map.items()) {
    const bool digits = !key.empty() && key.size() <= 9 && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    const size_t id = digits ? std::stoul(key) : map.size();
    if (id >= map.size() || seen[id])
      throw Error(where + ": id2label's key \"" + oneLine(key, 20) + "\" is not one of the ids 0.." + std::to_string(map.size() - 1) +
                  " (once each)");
    if (!value.is_string())
      throw Error(where + ": id2label[\"" + oneLine(key, 20) + "\"] is not a string (got " + std::string(value.type_name()) + ")");
    seen[id] = true;
    labels[id] = value.get<std::string>();
  }
  return labels;
}

Weights loadHfVitWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress) {
  if (!config.isImage()) throw Error(dir + ": loadHfVitWeights needs an image model's config");
  const ShardSet shards(dir);
  // ViTForImageClassification's encoder is under vit.; a checkpoint saved without it is read as well.
  const std::string vit = shards.has("embeddings.cls_token") && !shards.has("vit.embeddings.cls_token") ? "" : "vit.";
  bool qkvBias = true;  // ViTConfig's default
  readOptional(hfConfig, "qkv_bias", qkvBias, dir + "/config.json");
  const std::vector<VitPlacement> plan = vitPlacements(config, vit, qkvBias);
  checkTensors(shards, plan, vit);
  Weights weights(config);  // an owned float32 arena, zero-filled (the q/k/v biases without qkv_bias)
  std::map<std::string, int64_t> widthOf;
  for (const auto& spec : weights.layout()) widthOf[spec.name] = spec.shape.back();
  std::vector<float> buffer;
  int done = 0;
  for (const auto& p : plan) {
    if (progress) progress(++done, static_cast<int>(plan.size()));
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    float* dst = weights.convertedParam(p.param);
    buffer.resize(file.info(p.hfName).numel());
    file.readFloat(p.hfName, buffer.data(), p.shape);  // F16 and BF16 converted
    if (!p.transpose) {
      std::copy(buffer.begin(), buffer.end(), dst + p.offset);
    } else {
      const int64_t rows = p.shape[0], in = static_cast<int64_t>(buffer.size()) / rows, width = widthOf.at(p.param);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < in; ++i) dst[i * width + p.offset + r] = buffer[r * in + i];
    }
    file.releasePages(p.hfName);
  }
  return weights;
}

}  // namespace tscope

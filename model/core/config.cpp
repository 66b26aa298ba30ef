// Config parsing and validation. Every rule names its field so the UI and CLI can show it, and
// is checked before any work starts.
#include "model/core/config.h"

#include <algorithm>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/core/json_field.h"

namespace tscope {

namespace {

struct Names {
  const char* text;
  int value;
};
constexpr Names kPositionNames[] = {{"learned", (int)PositionEncoding::Learned},
                                    {"sinusoidal", (int)PositionEncoding::Sinusoidal},
                                    {"rope", (int)PositionEncoding::Rope},
                                    {"alibi", (int)PositionEncoding::Alibi},
                                    {"none", (int)PositionEncoding::None}};
constexpr Names kNormNames[] = {{"layernorm", (int)NormKind::LayerNorm}, {"rmsnorm", (int)NormKind::RmsNorm}, {"none", (int)NormKind::None}};
// HF names: gelu_new and gelu_pytorch_tanh are the tanh approximation GPT-2 uses; gelu is erf's.
constexpr Names kActivationNames[] = {{"gelu_new", (int)Activation::GeluTanh},
                                      {"gelu_pytorch_tanh", (int)Activation::GeluTanh},
                                      {"gelu", (int)Activation::GeluErf},
                                      {"relu", (int)Activation::Relu},
                                      {"swiglu", (int)Activation::SwiGlu}};
constexpr Names kRoutingNames[] = {{"token_choice", (int)MoeRoutingKind::TokenChoice}, {"expert_choice", (int)MoeRoutingKind::ExpertChoice}};

template <size_t N>
const char* nameOf(const Names (&names)[N], int value) {
  for (const auto& n : names)
    if (n.value == value) return n.text;
  return "?";
}

template <size_t N>
int valueOf(const Names (&names)[N], const std::string& text, const char* field) {
  for (const auto& n : names)
    if (text == n.text) return n.value;
  std::string allowed;
  for (const auto& n : names) allowed += std::string(allowed.empty() ? "" : ", ") + n.text;
  throw Error(std::string(field) + " '" + text + "' is not one of: " + allowed);
}

template <typename T>
void readField(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (const char* problem = jsonFieldProblem(*it, out))
    throw Error(std::string("field '") + key + "' " + problem + " (got " + (it->is_number() ? it->dump() : it->type_name()) + ")");
}

template <typename Enum, size_t N>
void readEnum(const nlohmann::json& j, const char* key, const Names (&names)[N], Enum& out) {
  std::string text;
  readField(j, key, text);
  if (!text.empty()) out = static_cast<Enum>(valueOf(names, text, key));
}

std::string rangeRule(const char* name, long v, long min, long max) {
  if (v < min || v > max)
    return std::string(name) + " must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " + std::to_string(v) + ")";
  return "";
}

// The attention_variant rules of a model config (its knobs, and what they cannot be combined with).
std::string attentionVariantConfigProblem(const ModelConfig& c) {
  const AttentionVariantParams& p = c.attention_variant;
  const std::string name = attentionVariantName(p.variant);
  if (p.linformerE != nullptr || p.linformerF != nullptr)
    return "attention_variant linformer in a config takes a fixed projection (pool or gaussian), not learned arrays";
  if (std::string problem = attentionVariantProblem(p, c.n_positions); !problem.empty()) return "attention_variant_knobs: " + problem;
  if (p.variant == AttentionVariant::Window && c.attention_window > 0 && c.attention_window != p.window)
    return "attention_window (" + std::to_string(c.attention_window) + ") and attention_variant window's knob (" + std::to_string(p.window) +
           ") disagree: give the window once";
  if (!c.hasVariantAttention()) return "";
  if (c.attention_window > 0)
    return "attention_variant " + name + " replaces the whole attention, so attention_window must be 0 (or use attention_variant window)";
  if (c.position_encoding == PositionEncoding::Alibi && p.variant != AttentionVariant::Flash)
    return "attention_variant " + name + " cannot add ALiBi's distance bias: use learned, sinusoidal, rope or no positions";
  if (c.position_encoding == PositionEncoding::Alibi)
    return "attention_variant flash does not add ALiBi's distance bias: use exact attention for ALiBi models";
  return "";
}

// "attention_variant": "linformer", "attention_variant_knobs": {"projected": 16, "projection": "pool", "seed": 1}
void readAttentionVariant(const nlohmann::json& j, AttentionVariantParams& p) {
  std::string name;
  readField(j, "attention_variant", name);
  if (name.empty()) return;
  const std::optional<AttentionVariant> variant = attentionVariantFromName(name);
  if (!variant) {
    std::string allowed;
    for (AttentionVariant v : allAttentionVariants()) allowed += std::string(allowed.empty() ? "" : ", ") + attentionVariantName(v);
    throw Error("attention_variant '" + name + "' is not one of: " + allowed);
  }
  p.variant = *variant;
  auto knobs = j.find("attention_variant_knobs");
  if (knobs == j.end() || knobs->is_null()) return;
  if (!knobs->is_object()) throw Error("field 'attention_variant_knobs' must be an object of knob names and values");
  for (const auto& [key, value] : knobs->items()) {
    if (key == "projection") {
      std::string text;
      readField(*knobs, "projection", text);
      const std::optional<LinformerProjection> projection = linformerProjectionFromName(text);
      if (!projection) throw Error("attention_variant_knobs.projection '" + text + "' is not one of: pool, gaussian");
      p.linformerProjection = *projection;
      continue;
    }
    if (key == "seed") {
      readField(*knobs, "seed", p.seed);
      continue;
    }
    const AttentionKnob* knob = nullptr;
    for (const AttentionKnob& k : attentionKnobs())
      if (key == k.name) knob = &k;
    if (!knob) throw Error("attention_variant_knobs has an unknown knob '" + key + "'");
    if (knob->variant != p.variant)
      throw Error("attention_variant_knobs." + key + " is a knob of " + attentionVariantName(knob->variant) + ", not of " + name);
    int v = 0;
    readField(*knobs, key.c_str(), v);
    p.*(knob->member) = v;
  }
}

// Llama 3's RoPE scaling fields: unset (factor 0), or a positive factor on a RoPE model with
// 0 < low < high frequency factors and a positive original context. "" when they are fine.
std::string ropeScalingProblem(const ModelConfig& c) {
  if (!c.hasRopeScaling()) return "";
  const auto number = [](double v) { return std::to_string(v); };
  if (c.position_encoding != PositionEncoding::Rope)
    return std::string("rope_scaling_factor needs position_encoding rope (got ") + toString(c.position_encoding) + ")";
  if (!(c.rope_scaling_factor > 0 && c.rope_scaling_factor < 1e6))
    return "rope_scaling_factor must be a finite number > 0, or 0 for no scaling (got " + number(c.rope_scaling_factor) + ")";
  if (!(c.rope_low_freq_factor > 0 && c.rope_high_freq_factor > c.rope_low_freq_factor && c.rope_high_freq_factor < 1e6))
    return "rope_high_freq_factor (" + number(c.rope_high_freq_factor) + ") must be greater than rope_low_freq_factor (" +
           number(c.rope_low_freq_factor) + "), which must be > 0, both finite";
  if (c.rope_original_context < 1) return "rope_original_context must be at least 1 (got " + std::to_string(c.rope_original_context) + ")";
  return "";
}

// The encoder-decoder rules (docs/ENCODER_DECODER.md): "" when the model is decoder-only or they hold.
std::string encoderDecoderProblem(const ModelConfig& c) {
  if (c.n_encoder_layer < 0 || c.n_encoder_layer > 1024) return rangeRule("n_encoder_layer", c.n_encoder_layer, 0, 1024);
  if (!c.isEncoderDecoder()) return "";
  for (auto [name, id] : {std::pair{"decoder_start_token_id", c.decoder_start_token_id}, std::pair{"eos_token_id", c.eos_token_id}})
    if (id < 0 || id >= c.vocab_size)
      return std::string(name) + " must be a token id in [0, " + std::to_string(c.vocab_size) + ") for an encoder-decoder model (got " +
             std::to_string(id) + ")";
  if (!c.causal) return "causal must be true in an encoder-decoder model (its encoder is always bidirectional, its decoder causal)";
  if (c.slidingWindow() > 0 || c.attention_variant.variant != AttentionVariant::Exact)
    return "an encoder-decoder model uses exact attention: attention_window must be 0 and attention_variant exact";
  if (c.qk_norm) return "qk_norm is not supported in encoder-decoder models";
  if (c.hasRopeScaling()) return "rope_scaling_factor is not supported in encoder-decoder models";
  return "";
}

// The Vision Transformer's rules (docs/VISION.md): "" for a text model or when they hold.
std::string imageProblem(const ModelConfig& c) {
  if (c.image_size < 0 || c.image_size > 4096) return rangeRule("image_size", c.image_size, 0, 4096);
  if (!c.isImage()) return c.tokenizer == "labels" ? "tokenizer \"labels\" (class names) is for image models: set image_size" : "";
  for (auto msg : {rangeRule("patch_size", c.patch_size, 1, 4096), rangeRule("num_channels", c.num_channels, 1, 4)})
    if (!msg.empty()) return msg;
  if (c.image_size % c.patch_size != 0)
    return "patch_size (" + std::to_string(c.patch_size) + ") must divide image_size (" + std::to_string(c.image_size) + ")";
  const long long tokens = 1 + (long long)c.patchGrid() * c.patchGrid();
  if (tokens > (1 << 20)) return "image_size / patch_size gives " + std::to_string(tokens) + " patch tokens, more than tscope runs (1048576)";
  if (c.n_positions != tokens)
    return "n_positions must be " + std::to_string(tokens) + " for an image of " + std::to_string(c.image_size) + " pixels in patches of " +
           std::to_string(c.patch_size) + ": [CLS] and one token per patch (got " + std::to_string(c.n_positions) + ")";
  if (c.causal || c.masked_lm || c.mlm_head || c.hasTokenTypes() || c.isEncoderDecoder())
    return "an image model is an encoder classifier: causal false, and no masked_lm, mlm_head, token types or encoder-decoder";
  if (c.tie_word_embeddings) return "an image model's classifier (lm_head) is its own: tie_word_embeddings must be false";
  if (c.position_encoding != PositionEncoding::Learned && c.position_encoding != PositionEncoding::Sinusoidal &&
      c.position_encoding != PositionEncoding::None)
    return std::string("an image model adds its positions to the patch embeddings: position_encoding learned, sinusoidal or none (got ") +
           toString(c.position_encoding) + ")";
  if (c.position_encoding == PositionEncoding::Sinusoidal && c.n_embd % 4 != 0)
    return "an image model's sinusoidal positions are 2-D sin-cos (a quarter of n_embd for each of sin and cos of the row and of the column): "
           "n_embd must be a multiple of 4 (got " +
           std::to_string(c.n_embd) + ")";
  if (c.tokenizer != "labels") return "an image model's tokenizer is \"labels\" (its class names, id2label)";
  return "";
}

}  // namespace

const char* toString(PositionEncoding v) { return nameOf(kPositionNames, (int)v); }
const char* toString(NormKind v) { return nameOf(kNormNames, (int)v); }
const char* toString(Activation v) { return nameOf(kActivationNames, (int)v); }
const char* toString(MoeRoutingKind v) { return nameOf(kRoutingNames, (int)v); }

ModelConfig encoderStackConfig(const ModelConfig& config) {
  ModelConfig e = config;
  e.n_layer = config.n_encoder_layer;
  e.n_encoder_layer = 0;
  e.causal = false;
  return e;
}

std::vector<int> imageTokenIds(const ModelConfig& config) {
  std::vector<int> ids(1 + config.numPatches(), 1);
  ids[0] = 0;
  return ids;
}

std::vector<float> imagePatchRows(const ModelConfig& config, const float* pixels, size_t count) {
  if (count != (size_t)config.imageFloats())
    throw Error("the image has " + std::to_string(count) + " values, but the model reads " + std::to_string(config.num_channels) + " x " +
                std::to_string(config.image_size) + " x " + std::to_string(config.image_size));
  const int S = config.image_size, p = config.patch_size, G = config.patchGrid(), K = config.patchDim();
  std::vector<float> rows((size_t)(1 + G * G) * K, 0.0f);
  for (int gy = 0; gy < G; ++gy)
    for (int gx = 0; gx < G; ++gx) {
      float* row = rows.data() + (size_t)(1 + gy * G + gx) * K;
      for (int ch = 0; ch < config.num_channels; ++ch)
        for (int y = 0; y < p; ++y)
          for (int x = 0; x < p; ++x) *row++ = pixels[((size_t)ch * S + gy * p + y) * S + gx * p + x];
    }
  return rows;
}

std::vector<int> tokenTypes(const ModelConfig& config, const int* tokens, size_t count) {
  std::vector<int> types(count, 0);
  if (!config.hasTokenTypes() || config.sep_token_id < 0) return types;
  int segment = 0;
  for (size_t t = 0; t < count; ++t) {
    types[t] = std::min(segment, config.type_vocab_size - 1);
    if (tokens[t] == config.sep_token_id) ++segment;
  }
  return types;
}

std::string validateConfig(const ModelConfig& c) {
  for (auto msg :
       {rangeRule("n_layer", c.n_layer, 1, 1024), rangeRule("n_head", c.n_head, 1, 1024), rangeRule("n_embd", c.n_embd, 1, 65536),
        rangeRule("head_dim", c.head_dim, 0, 4096), rangeRule("n_positions", c.n_positions, 1, 1 << 20),
        rangeRule("vocab_size", c.vocab_size, 1, 1 << 22), rangeRule("d_ff", c.d_ff, 0, 1 << 20), rangeRule("n_kv_head", c.n_kv_head, 0, 1024),
        rangeRule("attention_window", c.attention_window, 0, 1 << 20), rangeRule("n_experts", c.n_experts, 0, 2048),
        rangeRule("type_vocab_size", c.type_vocab_size, 0, 1024), rangeRule("sep_token_id", c.sep_token_id, -1, 1 << 22),
        rangeRule("moe_shared_expert_d_ff", c.moe_shared_expert_d_ff, 0, 1 << 20)}) {
    if (!msg.empty()) return msg;
  }
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0)
    return "n_head (" + std::to_string(c.n_head) + ") must divide n_embd (" + std::to_string(c.n_embd) + ")";
  if (c.n_head % c.kvHeads() != 0) return "n_kv_head (" + std::to_string(c.kvHeads()) + ") must divide n_head (" + std::to_string(c.n_head) + ")";
  if (!(c.layer_norm_epsilon > 0.0) || c.layer_norm_epsilon > 1.0) return "layer_norm_epsilon must be in (0, 1]";
  if (c.tokenizer != "gpt2-bpe" && c.tokenizer != "char" && c.tokenizer != "labels")
    return "tokenizer must be \"gpt2-bpe\", \"char\" or \"labels\" (got \"" + c.tokenizer + "\")";
  if (c.position_encoding == PositionEncoding::Rope && c.headDim() % 2 != 0)
    return "position_encoding rope needs an even head dimension (" + std::string(c.head_dim ? "head_dim" : "n_embd / n_head") + " = " +
           std::to_string(c.headDim()) + ")";
  if ((c.position_encoding == PositionEncoding::Sinusoidal || c.position_encoding == PositionEncoding::Rope) &&
      !(c.position_base > 1.0 && c.position_base < 1e12))
    return "position_base must be greater than 1 (got " + std::to_string(c.position_base) + ")";
  if (std::string msg = ropeScalingProblem(c); !msg.empty()) return msg;
  if (std::string msg = attentionVariantConfigProblem(c); !msg.empty()) return msg;
  if (std::string msg = encoderDecoderProblem(c); !msg.empty()) return msg;
  if (std::string msg = imageProblem(c); !msg.empty()) return msg;
  if (c.masked_lm && (c.causal || c.isEncoderDecoder()))
    return "masked_lm needs an encoder-only model: causal false and n_encoder_layer 0 (a masked token is predicted from both sides)";
  if (c.embedding_norm && c.isEncoderDecoder())
    return "embedding_norm is not supported in encoder-decoder models (it is BERT's, an encoder-only model)";
  if (c.mlm_head && c.isEncoderDecoder()) return "mlm_head is not supported in encoder-decoder models (it is BERT's, an encoder-only model)";
  if (c.mlm_head && c.activation == Activation::SwiGlu)
    return "mlm_head needs an elementwise activation (gelu, gelu_new, relu): its dense layer has no gate for swiglu";
  if (!c.hasNorm() && (c.embedding_norm || c.mlm_head))
    return "norm none leaves out every norm, but embedding_norm and mlm_head are norms: use layernorm or rmsnorm";
  if (c.hasTokenTypes() && (c.causal || c.isEncoderDecoder()))
    return "type_vocab_size needs an encoder-only model (causal false, n_encoder_layer 0): token types are BERT's segments";
  if (c.sep_token_id >= c.vocab_size) return "sep_token_id (" + std::to_string(c.sep_token_id) + ") is outside the vocabulary";
  if (c.attention_only && c.n_experts > 0) return "attention_only models have no feed-forward, so n_experts must be 0";
  if (c.moe_shared_expert_d_ff > 0 && !c.isMoe()) return "moe_shared_expert_d_ff needs a mixture of experts (n_experts > 0)";
  if (c.isMoe()) {
    if (c.moe_top_k < 1) return "moe_top_k must be at least 1 (got " + std::to_string(c.moe_top_k) + ")";
    if (c.moe_top_k > c.n_experts)
      return "moe_top_k (" + std::to_string(c.moe_top_k) + ") must be at most n_experts (" + std::to_string(c.n_experts) + ")";
    if (!(c.moe_capacity_factor < 1e6)) return "moe_capacity_factor must be finite";
    if (c.moe_routing == MoeRoutingKind::ExpertChoice && !(c.moe_capacity_factor > 0))
      return "moe_capacity_factor must be positive for expert_choice routing";
    if (!(c.moe_aux_loss_alpha >= 0 && c.moe_aux_loss_alpha < 1e6)) return "moe_aux_loss_alpha must be >= 0";
    if (!c.moe_normalize_top_k && c.moe_routing == MoeRoutingKind::ExpertChoice)
      return "moe_normalize_top_k false is a token_choice setting (expert_choice gates are the router probabilities already)";
  }
  return "";
}

namespace {

// The config's members that are not written as they are held (configFields wraps them).
template <class Enum, size_t N>
struct NamedEnum {  // an enum written by its name (the first name of a value; readers take every alias)
  const Names (&names)[N];
  Enum& member;
};
template <class Enum, size_t N>
NamedEnum<Enum, N> named(const Names (&names)[N], Enum& member) {
  return {names, member};
}
template <class Bool>
struct NormPosition {  // pre_norm as "pre" / "post"
  Bool& preNorm;
};
template <class Int>
struct Effective {  // read into the member (0: the default), written as what the model uses (d_ff 0 -> 4C)
  Int& member;
  const ModelConfig& config;
  int (ModelConfig::*effective)() const;  // called by the writer only: a config being read is not yet
                                          // validated, and 4 * n_embd may not fit an int
};
template <class Params>
struct VariantField {  // attention_variant and attention_variant_knobs
  Params& params;
};

// Every config.json key with the member it holds: the one list configFromJson reads (in this order:
// an alias read later wins), unknownConfigKey knows and configToJson writes. visit(key, field,
// written): `written` false leaves the key out of configToJson (a feature the model does not use,
// or an alias only read). C is ModelConfig or const ModelConfig.
template <class C, class Visit>
void configFields(C& c, Visit&& visit) {
  const bool moe = c.isMoe(), rope = c.hasRopeScaling(), encoderDecoder = c.isEncoderDecoder();
  visit("n_layer", c.n_layer, true);
  visit("n_head", c.n_head, true);
  visit("n_embd", c.n_embd, true);
  visit("head_dim", c.head_dim, c.head_dim > 0);
  visit("n_positions", c.n_positions, true);
  visit("vocab_size", c.vocab_size, true);
  visit("layer_norm_epsilon", c.layer_norm_epsilon, true);
  visit("activation_function", named(kActivationNames, c.activation), true);
  visit("tokenizer", c.tokenizer, true);
  visit("position_encoding", named(kPositionNames, c.position_encoding), true);
  visit("position_base", c.position_base, true);
  visit("rope_scaling_factor", c.rope_scaling_factor, rope);
  visit("rope_low_freq_factor", c.rope_low_freq_factor, rope);
  visit("rope_high_freq_factor", c.rope_high_freq_factor, rope);
  visit("rope_original_context", c.rope_original_context, rope);
  visit("norm", named(kNormNames, c.norm), true);
  visit("norm_position", NormPosition<std::remove_reference_t<decltype((c.pre_norm))>>{c.pre_norm}, true);
  visit("residual", c.residual, !c.residual);
  visit("d_ff", Effective<std::remove_reference_t<decltype((c.d_ff))>>{c.d_ff, c, &ModelConfig::dFF}, true);
  visit("n_inner", c.d_ff, false);  // HF GPT-2's name for d_ff (null = 4C)
  visit("n_kv_head", Effective<std::remove_reference_t<decltype((c.n_kv_head))>>{c.n_kv_head, c, &ModelConfig::kvHeads}, true);
  visit("causal", c.causal, true);
  visit("masked_lm", c.masked_lm, c.masked_lm);
  visit("embedding_norm", c.embedding_norm, c.embedding_norm);
  visit("mlm_head", c.mlm_head, c.mlm_head);
  visit("type_vocab_size", c.type_vocab_size, c.hasTokenTypes());
  visit("sep_token_id", c.sep_token_id, c.hasTokenTypes());
  visit("attention_window", c.attention_window, true);
  visit("tie_word_embeddings", c.tie_word_embeddings, true);
  visit("n_experts", c.n_experts, true);
  visit("moe_top_k", c.moe_top_k, moe);
  visit("moe_capacity_factor", c.moe_capacity_factor, moe);
  visit("moe_routing", named(kRoutingNames, c.moe_routing), moe);
  visit("moe_aux_loss_alpha", c.moe_aux_loss_alpha, moe);
  visit("moe_normalize_top_k", c.moe_normalize_top_k, moe && !c.moe_normalize_top_k);
  visit("moe_shared_expert_d_ff", c.moe_shared_expert_d_ff, moe && c.moe_shared_expert_d_ff > 0);
  visit("attention_only", c.attention_only, c.attention_only);
  visit("qk_norm", c.qk_norm, c.qk_norm);
  visit("attention_variant", VariantField<std::remove_reference_t<decltype((c.attention_variant))>>{c.attention_variant},
        c.attention_variant.variant != AttentionVariant::Exact);
  visit("n_encoder_layer", c.n_encoder_layer, encoderDecoder);
  visit("decoder_start_token_id", c.decoder_start_token_id, encoderDecoder);
  visit("eos_token_id", c.eos_token_id, encoderDecoder);
  visit("image_size", c.image_size, c.isImage());
  visit("patch_size", c.patch_size, c.isImage());
  visit("num_channels", c.num_channels, c.isImage());
}

// configFields' reader: every field present in `j`, its type and names checked.
struct FieldReader {
  const nlohmann::json& j;
  template <typename T>
  void operator()(const char* key, T& member, bool) const {
    readField(j, key, member);
  }
  template <typename Enum, size_t N>
  void operator()(const char* key, NamedEnum<Enum, N> field, bool) const {
    readEnum(j, key, field.names, field.member);
  }
  void operator()(const char* key, NormPosition<bool> field, bool) const {
    std::string text;
    readField(j, key, text);
    if (text.empty()) return;
    if (text != "pre" && text != "post") throw Error(std::string(key) + " '" + text + "' is not one of: pre, post");
    field.preNorm = text == "pre";
  }
  void operator()(const char* key, Effective<int> field, bool) const { readField(j, key, field.member); }
  void operator()(const char*, VariantField<AttentionVariantParams> field, bool) const { readAttentionVariant(j, field.params); }
};

// configFields' writer: the keys the model uses, as a reader takes them back.
struct FieldWriter {
  nlohmann::json& j;
  template <typename T>
  void operator()(const char* key, const T& member, bool written) const {
    if (written) j[key] = member;
  }
  template <typename Enum, size_t N>
  void operator()(const char* key, NamedEnum<const Enum, N> field, bool written) const {
    if (written) j[key] = nameOf(field.names, (int)field.member);
  }
  void operator()(const char* key, NormPosition<const bool> field, bool written) const {
    if (written) j[key] = field.preNorm ? "pre" : "post";
  }
  void operator()(const char* key, Effective<const int> field, bool written) const {
    if (written) j[key] = (field.config.*field.effective)();
  }
  void operator()(const char* key, VariantField<const AttentionVariantParams> field, bool written) const {
    if (!written) return;
    j[key] = attentionVariantName(field.params.variant);
    j["attention_variant_knobs"] = attentionVariantKnobsJson(field.params);
  }
};

}  // namespace

ModelConfig configFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  ModelConfig c;
  configFields(c, FieldReader{j});
  // An image model's context and tokenizer follow from its image: a file may leave them out.
  if (c.isImage() && c.patch_size >= 1 && c.image_size <= 4096 && c.image_size % c.patch_size == 0) {
    if (!j.contains("n_positions")) c.n_positions = 1 + c.numPatches();
    if (!j.contains("tokenizer")) c.tokenizer = "labels";
  }
  if (auto msg = validateConfig(c); !msg.empty()) throw Error(msg);
  return c;
}

std::string unknownConfigKey(const nlohmann::json& j) {
  if (!j.is_object()) return "";
  // Every key configFromJson reads, and what tscope writes beside them (configToJson, saveModelDir).
  const ModelConfig none;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one in the lambda below
    bool known = key == "attention_variant_knobs" || key == "model_type" || key == "tscope_version" || key == "comment";
    configFields(none, [&](const char* name, const auto&, bool) { known = known || key == name; });
    if (!known) return key;
  }
  return "";
}

nlohmann::json configToJson(const ModelConfig& c) {
  nlohmann::json j = {{"model_type", "gpt2"}};
  configFields(c, FieldWriter{j});
  return j;
}

}  // namespace tscope

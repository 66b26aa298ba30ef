// HuggingFace BERT masked language models (BertForMaskedLM, and BertForPreTraining's masked-LM part)
// onto tscope's layout. Published architecture (Devlin et al. 2018, arXiv 1810.04805; HF's BertConfig
// fields): embeddings = word + position + token type, then LayerNorm (embedding_norm); each layer is
// post-norm, x = LN(x + attention(x)) then x = LN(x + output(act(intermediate(x)))), with no final
// norm (tscope's post-norm block: ln_1 after the attention, ln_2 after the feed-forward); the masked-LM
// head is dense C -> C, hidden_act, LayerNorm, then the decoder tied to the word embeddings plus an
// output bias of V (mlm_head). q, k, v go into the fused c_attn columns Q | K | V, every (out, in)
// matrix is transposed. token_type_embeddings becomes the token type table (wtt): HF takes
// token_type_ids from the caller, tscope counts them from the [SEP]s as BERT's tokenizer makes them
// for sentence pairs (tokenTypes in config.h), so "[CLS] A [SEP] B [SEP]" reads B as segment 1.
#include <nlohmann/json.hpp>
#include <set>

#include "model/core/error.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_shards.h"

namespace tscope {

using hf::architectureOf, hf::modelTypeOf, hf::readOptional, hf::Placement, hf::ShardSet;

namespace {

const std::set<std::string> kBertArchitectures = {"BertForMaskedLM", "BertForPreTraining", "BertModel"};

// Where the encoder's tensors live: "bert." in BertForMaskedLM / BertForPreTraining, none in BertModel.
std::string prefixOf(const ShardSet& shards) { return shards.has("embeddings.word_embeddings.weight") ? "" : "bert."; }

// A LayerNorm's weight and bias by their names today (weight, bias) or in old checkpoints (gamma, beta).
std::pair<std::string, std::string> layerNormNames(const ShardSet& shards, const std::string& prefix) {
  const bool old = !shards.has(prefix + ".weight") && shards.has(prefix + ".gamma");
  return {prefix + (old ? ".gamma" : ".weight"), prefix + (old ? ".beta" : ".bias")};
}

std::vector<Placement> bertPlacements(const ModelConfig& c, const ShardSet& shards, const std::string& bert) {
  const int64_t C = c.n_embd, F = c.dFF(), V = c.vocab_size;
  std::vector<Placement> out;
  auto copy = [&](const std::string& hfName, const std::string& param, std::vector<int64_t> shape) {
    out.push_back({hfName, param, std::move(shape), true, 0, false});
  };
  auto linear = [&](const std::string& hf, const std::string& param, int64_t rows, int64_t in) {  // (out, in) -> (in, out), bias copied
    out.push_back({hf + ".weight", param + ".weight", {rows, in}, false, 0, false});
    copy(hf + ".bias", param + ".bias", {rows});
  };
  auto norm = [&](const std::string& hf, const std::string& param) {
    const auto [weight, bias] = layerNormNames(shards, hf);
    copy(weight, param + ".weight", {C});
    copy(bias, param + ".bias", {C});
  };
  copy(bert + "embeddings.word_embeddings.weight", "wte.weight", {V, C});
  // float32 always: the embedding adds them as float tables.
  out.push_back({bert + "embeddings.position_embeddings.weight", "wpe.weight", {c.n_positions, C}, true, 0, false, true});
  out.push_back({bert + "embeddings.token_type_embeddings.weight", "wtt.weight", {c.type_vocab_size, C}, true, 0, false, true});
  norm(bert + "embeddings.LayerNorm", "ln_emb");
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string hf = bert + "encoder.layer." + std::to_string(l) + ".", p = "h." + std::to_string(l) + ".";
    int64_t column = 0;
    for (const char* name : {"query", "key", "value"}) {
      out.push_back({hf + "attention.self." + name + ".weight", p + "attn.c_attn.weight", {C, C}, false, column, false});
      out.push_back({hf + "attention.self." + name + ".bias", p + "attn.c_attn.bias", {C}, false, column, false});
      column += C;
    }
    linear(hf + "attention.output.dense", p + "attn.c_proj", C, C);
    norm(hf + "attention.output.LayerNorm", p + "ln_1");
    linear(hf + "intermediate.dense", p + "mlp.c_fc", F, C);
    linear(hf + "output.dense", p + "mlp.c_proj", C, F);
    norm(hf + "output.LayerNorm", p + "ln_2");
  }
  // The head's dense matrix stays float32 (BlockForward runs it as a float matmul).
  out.push_back({"cls.predictions.transform.dense.weight", "mlm.dense.weight", {C, C}, false, 0, false, true});
  copy("cls.predictions.transform.dense.bias", "mlm.dense.bias", {C});
  norm("cls.predictions.transform.LayerNorm", "mlm.ln_head");
  copy("cls.predictions.bias", "mlm.bias", {V});
  return out;
}

// Tensors a BERT checkpoint may hold that the masked LM does not use: the pooler and the
// next-sentence head (BertForPreTraining), the position_ids buffer, the decoder (checked to be tied to the word embeddings) and its bias (HF ties it
// to cls.predictions.bias).
bool isIgnored(const std::string& name, const std::string& bert) {
  return name == bert + "embeddings.position_ids" || name.starts_with(bert + "pooler.") || name.starts_with("cls.seq_relationship.") ||
         name == "cls.predictions.decoder.weight" || name == "cls.predictions.decoder.bias";
}

// `name` (if stored) must hold the same values as the tensor `same` (already placed, `values`).
void requireTied(const ShardSet& shards, const std::string& name, const std::vector<int64_t>& shape, const float* values, const std::string& what) {
  if (!shards.has(name)) return;
  const SafetensorsFile& file = shards.fileOf(name);
  if (file.info(name).shape != shape)
    throw Error(file.path() + ": tensor '" + name + "' has shape " + hf::shapeText(file.info(name).shape) + " but " + what + " has " +
                hf::shapeText(shape));
  const std::vector<float> stored = file.readFloat(name);
  for (size_t i = 0; i < stored.size(); ++i)
    if (stored[i] != values[i])
      throw Error(file.path() + ": '" + name + "' differs from " + what + "; tscope reads BERT with the decoder tied to the word embeddings");
}

}  // namespace

bool isHfBert(const nlohmann::json& j) {
  const std::string arch = architectureOf(j);
  return arch.empty() ? modelTypeOf(j) == "bert" : kBertArchitectures.count(arch) != 0;
}

ModelConfig hfBertConfig(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object at the top level");
  ModelConfig c;
  c.causal = false;
  c.masked_lm = true;
  c.pre_norm = false;  // LN(x + sublayer(x)), no final norm
  c.norm = NormKind::LayerNorm;
  c.position_encoding = PositionEncoding::Learned;
  c.embedding_norm = true;
  c.mlm_head = true;
  c.tie_word_embeddings = true;
  readField(j, "hidden_size", c.n_embd, where);
  readField(j, "num_hidden_layers", c.n_layer, where);
  readField(j, "num_attention_heads", c.n_head, where);
  readField(j, "intermediate_size", c.d_ff, where);
  readField(j, "vocab_size", c.vocab_size, where);
  c.n_positions = 512;  // BertConfig's defaults
  readOptional(j, "max_position_embeddings", c.n_positions, where);
  c.type_vocab_size = 2;  // BertConfig's default
  readOptional(j, "type_vocab_size", c.type_vocab_size, where);
  if (c.type_vocab_size < 1) throw Error(where + ": type_vocab_size must be at least 1");
  readOptional(j, "sep_token_id", c.sep_token_id, where);  // else loadModel takes the tokenizer's [SEP]
  c.layer_norm_epsilon = 1e-12;
  readOptional(j, "layer_norm_eps", c.layer_norm_epsilon, where);
  std::string act = "gelu", positions = "absolute";
  readOptional(j, "hidden_act", act, where);
  if (act == "gelu") c.activation = Activation::GeluErf;  // HF's "gelu" is the exact erf form
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.activation = Activation::GeluTanh;
  else if (act == "relu") c.activation = Activation::Relu;
  else throw Error(where + ": hidden_act \"" + oneLine(act, 40) + "\" is not supported yet (BERT models need gelu, gelu_new or relu)");
  readOptional(j, "position_embedding_type", positions, where);
  if (positions != "absolute")
    throw Error(where + ": position_embedding_type \"" + oneLine(positions, 40) +
                "\" is not supported yet (tscope reads BERT with absolute learned positions)");
  bool decoder = false;
  readOptional(j, "is_decoder", decoder, where);
  if (decoder) throw Error(where + ": is_decoder true (a causal BERT) is not supported: tscope reads BERT as a bidirectional masked LM");
  if (c.d_ff < 1) throw Error(where + ": intermediate_size must be at least 1");
  if (c.n_head > 0 && c.n_embd % c.n_head != 0)
    throw Error(where + ": hidden_size " + std::to_string(c.n_embd) + " is not a multiple of num_attention_heads " + std::to_string(c.n_head));
  if (auto msg = validateConfig(c); !msg.empty()) throw Error(where + ": " + msg);
  return c;
}

Weights loadHfBertWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress) {
  const ShardSet shards(dir);
  const std::string bert = prefixOf(shards), anyFile = shards.anyPath();
  if (!shards.has("cls.predictions.bias"))
    throw Error(anyFile + ": no masked-LM head (cls.predictions.*): a BertModel checkpoint holds the encoder only; tscope reads BertForMaskedLM");
  const std::vector<Placement> plan = bertPlacements(config, shards, bert);
  Weights weights = hf::placeWeights(
      dir, shards, config, plan, [&](const std::string& name) { return isIgnored(name, bert); },
      architectureOf(hfConfig).empty() ? "BERT" : architectureOf(hfConfig), progress);
  std::vector<float> scratch;
  const float* wte = floatLayout(weights.wte, weights.wtePacked, scratch);
  requireTied(shards, "cls.predictions.decoder.weight", {config.vocab_size, static_cast<int64_t>(config.n_embd)}, wte, "the word embeddings");
  requireTied(shards, "cls.predictions.decoder.bias", {config.vocab_size}, weights.mlmBias, "cls.predictions.bias");
  return weights;
}

}  // namespace tscope

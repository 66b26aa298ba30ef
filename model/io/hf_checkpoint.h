// HuggingFace checkpoints of Llama-family models (LlamaForCausalLM incl. SmolLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM) and BERT masked LMs
// (BertForMaskedLM) mapped onto tscope's architecture: RMSNorm, RoPE, SwiGLU, grouped-query attention, sliding windows, tied or untied
// embeddings, Qwen3's q/k norm (qk_norm), Mixtral's and Qwen2-MoE's mixtures of experts (Qwen2-MoE's
// shared expert and unrenormalised top-k gates). Also where such a model lies on disk (a
// directory, or the HuggingFace cache layout models--org--name/snapshots/<hash>/).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/core/weights.h"
#include "model/io/load_progress.h"

namespace tscope {

// The longest context a loaded checkpoint gets (n_positions = min(max_position_embeddings, this)):
// KV caches are sized by it, and Llama 3's 131072 positions would cost gigabytes of cache.
constexpr int kHfContextCap = 4096;

// Whether config.json names one of the Llama-family architectures this file reads
// (`architectures`, else `model_type`).
bool isHfLlamaFamily(const nlohmann::json& hfConfig);

// "" when config.json is a GPT-2 or tscope config or a Llama-family or BERT one this file reads; else one
// line naming the architecture that is not supported yet (Gemma 2, Phi-3, ...).
std::string unsupportedHfArchitecture(const nlohmann::json& hfConfig);

// config.json of a Llama-family model -> ModelConfig (`where` starts messages). Throws tscope::Error with one line naming the
// field that tscope cannot express yet (rope_scaling other than llama3, hidden_act
// other than silu, a sliding window on some layers only) or that is missing or malformed.
ModelConfig hfLlamaConfig(const nlohmann::json& hfConfig, const std::string& where = "config.json");

// Reads the weights of `dir` (model.safetensors, or the shards listed by
// model.safetensors.index.json) for `config` (from hfLlamaConfig(hfConfig)). A checkpoint whose
// matrices are all BF16 (or all F16) keeps them in that dtype (Weights::half): read in place from
// the mapped shards, but for q, k, v (fused into c_attn in tscope's RoPE row order, owned) and any
// misaligned tensor; norms and biases, and every tensor of other checkpoints, become float32. Throws
// tscope::Error with one line naming the tensor and the file: missing, wrong shape, unexpected,
// or an index naming a shard that is missing or outside the directory. `progress` hears of each tensor placed.
Weights loadHfLlamaWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress = {});

// BERT masked language models (hf_bert.cpp): config.json names BertForMaskedLM, BertForPreTraining or
// BertModel (`architectures`, else model_type "bert").
bool isHfBert(const nlohmann::json& hfConfig);
// config.json of a BERT model -> ModelConfig: encoder-only masked LM (causal false, masked_lm),
// post-norm LayerNorm blocks with no final norm, learned positions, embedding_norm, mlm_head, the
// decoder tied to the word embeddings, type_vocab_size token types (sep_token_id when config.json
// has one, else -1 for loadModel to take from the tokenizer). Throws tscope::Error with one line for what tscope cannot
// express (position_embedding_type other than absolute, a hidden_act other than gelu / gelu_new /
// relu, is_decoder) or a missing or malformed field.
ModelConfig hfBertConfig(const nlohmann::json& hfConfig, const std::string& where = "config.json");
// The weights of a BERT directory (model.safetensors or shards) for `config` (from hfBertConfig):
// names with the bert. prefix or none, LayerNorm weight/bias or the old gamma/beta, the token type
// table as wtt (type_vocab_size rows; the segments counted from config.sep_token_id).
// Throws tscope::Error with one line for a checkpoint without the masked-LM head (BertModel), a
// decoder weight that is not the word embeddings, and every missing, misshapen or unexpected tensor.
Weights loadHfBertWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress = {});

// Where the model named by `path` lies: `path` itself when it is a model directory (or any
// existing file); for a HuggingFace cache repo directory (models--org--name) the snapshot that
// refs/main names, else the only (or newest) one under snapshots/; for "org/name" that is not a
// path, the same repo in $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub; for an Ollama model's
// name ("llama3.2:3b", "llama3.2" meaning :latest), its GGUF blob in Ollama's store. Returns `path`
// unchanged when nothing matches (loadModel then reports it missing).
std::string resolveHfModelPath(const std::string& path);

// A model's short name for the screen: "org/name" for a snapshot in the HuggingFace cache
// (.../models--org--name/snapshots/<hash>), Ollama's "name:tag" for a blob in its store, else the
// directory's (or file's) name.
std::string modelDisplayName(const std::string& path);

// A model downloaded by other tools (the HuggingFace cache, Ollama's store), for a list of models to open.
struct DownloadedModel {
  std::string id;                            // "org/name" (what resolveHfModelPath takes); Ollama's "name:tag"
  std::string path;                          // its snapshot directory ("" when none is downloaded); Ollama's GGUF blob
  std::string problem;                       // "" when tscope can open it, else one line why not (architecture, no config.json)
  std::string source = "HuggingFace cache";  // the list's heading: "HuggingFace cache" or "Ollama"
};
// Every models--org--name repo in the caches resolveHfModelPath searches (a repo in two caches:
// the first one's), sorted by id within each cache.
std::vector<DownloadedModel> findCachedHfModels();
// The HuggingFace cache's models, then Ollama's (ollama_store.h).
std::vector<DownloadedModel> findDownloadedModels();

}  // namespace tscope

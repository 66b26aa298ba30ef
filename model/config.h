// Model configuration: the architecture fields of config.json and the rules they must obey.
// Dimension letters used across tscope: B batch, T tokens, C = d_model, H heads, D head dim,
// F = d_ff, V vocab, L layers, E experts.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace tscope {

struct ModelConfig {
  int n_layer = 12;             // L
  int n_head = 12;              // H
  int n_embd = 768;             // C
  int n_positions = 1024;       // longest context (T max)
  int vocab_size = 50257;       // V
  double layer_norm_epsilon = 1e-5;
  std::string activation_function = "gelu_new";  // tanh-approximated GELU (GPT-2)
  std::string tokenizer = "gpt2-bpe";             // "gpt2-bpe" or "char"

  int headDim() const { return n_embd / n_head; }  // D
  int dFF() const { return 4 * n_embd; }           // F
};

// Returns "" when the config is usable, else one line naming the field and the rule it breaks.
std::string validateConfig(const ModelConfig& config);

// Reads the fields above from a HuggingFace-style config.json object (unknown keys ignored).
// Throws tscope::Error on a wrong type or an invalid combination.
ModelConfig configFromJson(const nlohmann::json& json);
nlohmann::json configToJson(const ModelConfig& config);

}  // namespace tscope

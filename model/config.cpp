// Config parsing and validation. Every rule names its field so the UI and CLI can show it.
#include "model/config.h"

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace tscope {

std::string validateConfig(const ModelConfig& c) {
  auto positive = [](const char* name, long v, long max) -> std::string {
    if (v <= 0) return std::string(name) + " must be positive (got " + std::to_string(v) + ")";
    if (v > max) return std::string(name) + " must be at most " + std::to_string(max) + " (got " + std::to_string(v) + ")";
    return "";
  };
  for (auto msg : {positive("n_layer", c.n_layer, 1024), positive("n_head", c.n_head, 1024),
                   positive("n_embd", c.n_embd, 65536), positive("n_positions", c.n_positions, 1 << 20),
                   positive("vocab_size", c.vocab_size, 1 << 22)}) {
    if (!msg.empty()) return msg;
  }
  if (c.n_embd % c.n_head != 0)
    return "n_head (" + std::to_string(c.n_head) + ") must divide n_embd (" + std::to_string(c.n_embd) + ")";
  if (!(c.layer_norm_epsilon > 0.0f) || c.layer_norm_epsilon > 1.0f)
    return "layer_norm_epsilon must be in (0, 1]";
  if (c.activation_function != "gelu_new" && c.activation_function != "gelu_pytorch_tanh" &&
      c.activation_function != "gelu")
    return "activation_function '" + c.activation_function + "' is not supported (use gelu_new)";
  if (c.tokenizer != "gpt2-bpe" && c.tokenizer != "char")
    return "tokenizer must be \"gpt2-bpe\" or \"char\" (got \"" + c.tokenizer + "\")";
  return "";
}

namespace {
template <typename T>
void readField(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(std::string("config.json: field '") + key + "' has the wrong type (" + it->type_name() + ")");
  }
}
}  // namespace

ModelConfig configFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("config.json: expected a JSON object at the top level");
  ModelConfig c;
  readField(j, "n_layer", c.n_layer);
  readField(j, "n_head", c.n_head);
  readField(j, "n_embd", c.n_embd);
  readField(j, "n_positions", c.n_positions);
  readField(j, "vocab_size", c.vocab_size);
  readField(j, "layer_norm_epsilon", c.layer_norm_epsilon);
  readField(j, "activation_function", c.activation_function);
  readField(j, "tokenizer", c.tokenizer);
  if (auto msg = validateConfig(c); !msg.empty()) throw Error("config.json: " + msg);
  return c;
}

nlohmann::json configToJson(const ModelConfig& c) {
  return {{"model_type", "gpt2"},
          {"n_layer", c.n_layer},
          {"n_head", c.n_head},
          {"n_embd", c.n_embd},
          {"n_positions", c.n_positions},
          {"vocab_size", c.vocab_size},
          {"layer_norm_epsilon", c.layer_norm_epsilon},
          {"activation_function", c.activation_function},
          {"tokenizer", c.tokenizer}};
}

}  // namespace tscope

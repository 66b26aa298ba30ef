// A tiny HuggingFace Llama written by the tests themselves (not by the PyTorch reference): its
// config.json, its tensors' shapes, a safetensors file of them, and the one-line error of loading a
// directory. Shared by test_hf_checkpoint.cpp and test_hf_config.cpp.
#pragma once
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/io/model_io.h"
#include "model/io/safetensors.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

namespace tscope::testing {

// A tiny Llama written here (not by the reference): L 2, C 16, H 4, Hkv 2, F 24, V 32.
inline nlohmann::json tinyConfig() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 16},
          {"intermediate_size", 24},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 32},
          {"max_position_embeddings", 32},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false}};
}

// Every tensor of tinyConfig() with its HF shape, filled with a fixed pattern.
inline std::map<std::string, std::vector<int64_t>> tinyShapes() {
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"model.embed_tokens.weight", {32, 16}}, {"model.norm.weight", {16}}, {"lm_head.weight", {32, 16}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    shapes[p + "input_layernorm.weight"] = {16};
    shapes[p + "post_attention_layernorm.weight"] = {16};
    shapes[p + "self_attn.q_proj.weight"] = {16, 16};
    shapes[p + "self_attn.k_proj.weight"] = {8, 16};
    shapes[p + "self_attn.v_proj.weight"] = {8, 16};
    shapes[p + "self_attn.o_proj.weight"] = {16, 16};
    shapes[p + "mlp.gate_proj.weight"] = {24, 16};
    shapes[p + "mlp.up_proj.weight"] = {24, 16};
    shapes[p + "mlp.down_proj.weight"] = {16, 24};
  }
  return shapes;
}

inline void writeSafetensorsOf(const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::vector<std::vector<float>> storage;
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, shape] : shapes) {
    size_t n = 1;
    for (auto d : shape) n *= d;
    auto& data = storage.emplace_back(n);
    for (size_t i = 0; i < n; ++i) data[i] = 0.1f * std::sin(0.37f * i + name.size());
  }
  size_t i = 0;
  for (const auto& [name, shape] : shapes) tensors.push_back({name, shape, storage[i++].data()});
  writeSafetensors(path, tensors);
}

inline void writeTinyModel(const std::filesystem::path& dir, const nlohmann::json& config = tinyConfig(),
                           const std::map<std::string, std::vector<int64_t>>& shapes = tinyShapes()) {
  std::filesystem::create_directories(dir);
  writeBytes((dir / "config.json").string(), config.dump());
  writeSafetensorsOf((dir / "model.safetensors").string(), shapes);
}

inline std::string loadError(const std::filesystem::path& dir) {
  return errorMessage([&] { loadModel(dir.string()); });
}

}  // namespace tscope::testing

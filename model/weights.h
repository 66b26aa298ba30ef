// The parameters of a GPT-2-style model, all carved out of one float32 arena.
// Matrices are stored (in, out), as HuggingFace GPT-2's Conv1D keeps them, so a linear layer is
// y = x W + b with x (T, in) row-major. Parameter names follow the HF checkpoint (no prefix).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"

namespace tscope {

struct LayerWeights {
  float* ln1Weight;     // (C)
  float* ln1Bias;       // (C)
  float* qkvWeight;     // (C, 3C)  columns: Q | K | V, each head a D-wide slice
  float* qkvBias;       // (3C)
  float* attnProjWeight;  // (C, C)
  float* attnProjBias;    // (C)
  float* ln2Weight;     // (C)
  float* ln2Bias;       // (C)
  float* fcWeight;      // (C, F)
  float* fcBias;        // (F)
  float* fcProjWeight;  // (F, C)
  float* fcProjBias;    // (C)
};

struct ParamSpec {
  std::string name;            // HF name, e.g. "h.3.mlp.c_fc.weight"
  std::vector<int64_t> shape;  // as stored in the checkpoint
  size_t offset = 0;           // in floats, into the arena
  size_t numel() const;
};

// Every parameter of the config, in a fixed order, with its arena offset.
std::vector<ParamSpec> parameterLayout(const ModelConfig& config);

class Weights {
 public:
  Weights() = default;
  explicit Weights(const ModelConfig& config);  // zero-filled
  Weights(Weights&&) noexcept = default;
  Weights& operator=(Weights&&) noexcept = default;
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamSpec>& layout() const { return layout_; }
  float* param(const std::string& name);  // throws tscope::Error if unknown
  const float* param(const std::string& name) const;
  size_t totalFloats() const { return arena_.size(); }
  float* arena() { return arena_.data(); }
  const float* arena() const { return arena_.data(); }

  float* wte = nullptr;  // (V, C) token embedding, also the (tied) unembedding
  float* wpe = nullptr;  // (n_positions, C)
  std::vector<LayerWeights> layers;  // (L)
  float* lnfWeight = nullptr;  // (C)
  float* lnfBias = nullptr;    // (C)

  // Fills every parameter with GPT-2's initialisation (N(0, 0.02), projections scaled by
  // 1/sqrt(2L), LayerNorm weights 1, biases 0) from a seed.
  void initRandom(uint64_t seed);

 private:
  void bindPointers();
  ModelConfig config_;
  std::vector<ParamSpec> layout_;
  std::map<std::string, size_t> index_;
  std::vector<float> arena_;
};

}  // namespace tscope

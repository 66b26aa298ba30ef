// The parameters of a GPT-2-style model (and every architecture-lab variant), all carved out of
// one float32 arena; parameters a variant does not use are absent (null pointers).
// Matrices are stored (in, out), as HuggingFace GPT-2's Conv1D keeps them, so a linear layer is
// y = x W + b with x (T, in) row-major. Parameter names follow the HF checkpoint (no prefix).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/aligned.h"
#include "model/config.h"

namespace tscope {

// One feed-forward network: the dense MLP of a block, or one expert of a mixture.
struct FeedForwardWeights {
  float* fcWeight = nullptr;    // (C, F)
  float* fcBias = nullptr;      // (F)
  float* gateWeight = nullptr;  // (C, F) SwiGLU only: hidden = silu(x Wgate + bgate) * (x Wfc + bfc)
  float* gateBias = nullptr;    // (F)   SwiGLU only
  float* projWeight = nullptr;  // (F, C)
  float* projBias = nullptr;    // (C)
};

struct LayerWeights {
  float* ln1Weight = nullptr;       // (C)
  float* ln1Bias = nullptr;         // (C) LayerNorm only (null for RMSNorm)
  float* qkvWeight = nullptr;       // (C, C + 2 Hkv D)  columns: Q | K | V, each head a D-wide slice
  float* qkvBias = nullptr;         // (C + 2 Hkv D)
  float* attnProjWeight = nullptr;  // (C, C)
  float* attnProjBias = nullptr;    // (C)
  float* ln2Weight = nullptr;       // (C)
  float* ln2Bias = nullptr;         // (C) LayerNorm only
  FeedForwardWeights mlp;           // dense models
  float* routerWeight = nullptr;    // (C, E) mixture of experts: router logits h = x Wg
  std::vector<FeedForwardWeights> experts;  // (E)
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
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  const float* param(const std::string& name) const;
  size_t totalFloats() const { return arena_.size(); }
  float* arena() { return arena_.data(); }
  const float* arena() const { return arena_.data(); }

  float* wte = nullptr;      // (V, C) token embedding, also the unembedding when tied
  float* wpe = nullptr;      // (n_positions, C) learned positions only
  std::vector<LayerWeights> layers;  // (L)
  float* lnfWeight = nullptr;  // (C) pre-norm models only
  float* lnfBias = nullptr;    // (C) pre-norm LayerNorm models only
  float* lmHead = nullptr;     // (V, C) untied unembedding; null when tied to wte
  const float* unembedding() const { return lmHead ? lmHead : wte; }

  // Fills every parameter with GPT-2's initialisation (N(0, 0.02), output projections scaled by
  // 1/sqrt(2L), norm weights 1, biases 0) from a seed.
  // `std` replaces 0.02 (larger values give peaked attention in untrained demo models).
  void initRandom(uint64_t seed, double std = 0.02);

 private:
  void bindPointers();
  ModelConfig config_;
  std::vector<ParamSpec> layout_;
  std::map<std::string, size_t> index_;
  AlignedFloats arena_;  // 64-byte aligned (see aligned.h)
};

}  // namespace tscope

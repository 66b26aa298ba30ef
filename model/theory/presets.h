// Published model shapes as pure data, shared by the Architecture panel and the tests: the
// GPT-3 family of Brown et al. 2020 ("Language Models are Few-Shot Learners", Table 2.1).
// Two rows of that table cannot be built as printed (heads that do not divide d_model); each
// preset keeps the printed numbers beside the shape tscope uses and says what it changed.
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"

namespace tscope {

struct ModelPreset {
  std::string name;            // "GPT-3 Small", ...
  double publishedParameters;  // the size the paper reports (n_params)
  int n_layer;                 // as printed
  int d_model;                 // as printed
  int n_head;                  // as printed
  int d_head;                  // as printed
  int usedDModel;              // what tscope builds (= d_model unless the printed one is invalid)
  int usedHeads;               // what tscope builds (= n_head unless the printed one is invalid)
  std::string note;            // "" when built as printed, else one line on what changed and why
  std::string source;          // citation
};

// GPT-3 Small .. GPT-3 175B: n_ctx 2048, vocabulary 50257 (GPT-2's BPE), d_ff = 4 d_model,
// learned positions, pre-norm LayerNorm, GELU, tied embeddings.
const std::vector<ModelPreset>& gpt3Presets();

// The config tscope builds for a preset (usedDModel, usedHeads, the family's shared fields).
ModelConfig presetConfig(const ModelPreset& preset);
// The config exactly as printed (may fail validateConfig: shown to explain the note).
ModelConfig printedConfig(const ModelPreset& preset);

}  // namespace tscope

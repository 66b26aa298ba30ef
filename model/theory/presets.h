// Published model shapes as pure data, shared by the Architecture panel and the tests: the
// GPT-3 family of Brown et al. 2020 ("Language Models are Few-Shot Learners", Table 2.1), the
// Transformer base and big of Vaswani et al. 2017 (Table 3) and Switch-C of Fedus et al. 2021 (Table 9).
// Two rows of that table cannot be built as printed (heads that do not divide d_model); each
// preset keeps the printed numbers beside the shape tscope uses and says what it changed.
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"

namespace tscope {

enum class PresetFamily { Gpt3, Transformer2017, SwitchT5 };

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
  // Families other than GPT-3 (built as printed; usedDModel / usedHeads = d_model / n_head):
  PresetFamily family = PresetFamily::Gpt3;
  int n_encoder_layer = 0;  // encoder-decoder: the encoder's layers (n_layer: the decoder's)
  int d_ff = 0;             // 0 = 4 d_model
  int vocab_size = 50257;
  int n_ctx = 2048;
  int n_experts = 0;  // top-1 (Switch) when set
  // What a lecture slide says of this model (0 = nothing), shown beside tscope's count.
  double slideTotal = 0, slideActive = 0, slideInferenceBytes = 0;
};

// GPT-3 Small .. GPT-3 175B: n_ctx 2048, vocabulary 50257 (GPT-2's BPE), d_ff = 4 d_model,
// learned positions, pre-norm LayerNorm, GELU, tied embeddings.
const std::vector<ModelPreset>& gpt3Presets();
// Vaswani et al. 2017 ("Attention Is All You Need", Table 3): base (65M) and big (213M); 6 + 6
// layers, post-norm LayerNorm, ReLU, sinusoidal positions, one shared 37,000-token BPE embedding.
const std::vector<ModelPreset>& transformer2017Presets();
// Switch-C (Fedus et al. 2021, "Switch Transformers", Table 9): T5-style encoder-decoder, 15 + 15
// layers, d_model 2080, 32 heads of 64, 2048 top-1 experts of d_ff 6144 in every layer, 1571B
// parameters; the lecture's slide says 1.6T total, "only 10B active" and 20 GB at inference.
const ModelPreset& switchCPreset();
// Every preset the Architecture panel offers: GPT-3, then the 2017 Transformers, then Switch-C.
const std::vector<ModelPreset>& publishedPresets();
// One line on the family's shared fields ("context 2048, vocabulary 50257, ...").
std::string familyDescription(const ModelPreset& preset);

// The config tscope builds for a preset (usedDModel, usedHeads, the family's shared fields).
ModelConfig presetConfig(const ModelPreset& preset);
// The config exactly as printed (may fail validateConfig: shown to explain the note).
ModelConfig printedConfig(const ModelPreset& preset);

}  // namespace tscope

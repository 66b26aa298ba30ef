// The GPT-3 family (Brown et al. 2020, arXiv 2005.14165, Table 2.1) as data.
#include "model/theory/presets.h"

namespace tscope {

namespace {
constexpr const char* kSource = "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1";
}

const std::vector<ModelPreset>& gpt3Presets() {
  static const std::vector<ModelPreset> presets = {
      {"GPT-3 Small", 125e6, 12, 768, 12, 64, 768, 12, "", kSource},
      {"GPT-3 Medium", 350e6, 24, 1024, 16, 64, 1024, 16, "", kSource},
      {"GPT-3 Large", 760e6, 24, 1536, 16, 96, 1536, 16, "", kSource},
      {"GPT-3 XL", 1.3e9, 24, 2048, 24, 128, 2048, 16,
       "24 heads (of 128) do not divide d_model 2048; built with 16 heads of 128, which has the same "
       "parameters (the head count does not change any weight shape)",
       kSource},
      {"GPT-3 2.7B", 2.7e9, 32, 2560, 32, 80, 2560, 32, "", kSource},
      {"GPT-3 6.7B", 6.7e9, 32, 4096, 32, 128, 4096, 32, "", kSource},
      {"GPT-3 13B", 13.0e9, 40, 5140, 40, 128, 5120, 40,
       "40 heads do not divide d_model 5140; built with d_model 5120 = 40 heads x the printed d_head 128", kSource},
      {"GPT-3 175B", 175.0e9, 96, 12288, 96, 128, 12288, 96, "", kSource},
  };
  return presets;
}

ModelConfig printedConfig(const ModelPreset& preset) {
  ModelConfig c;  // GPT-2's defaults: learned positions, pre-norm LayerNorm, GELU, tied embeddings
  c.n_layer = preset.n_layer;
  c.n_embd = preset.d_model;
  c.n_head = preset.n_head;
  c.n_positions = 2048;
  c.vocab_size = 50257;
  c.d_ff = 4 * preset.d_model;
  return c;
}

ModelConfig presetConfig(const ModelPreset& preset) {
  ModelConfig c = printedConfig(preset);
  c.n_embd = preset.usedDModel;
  c.n_head = preset.usedHeads;
  c.d_ff = 4 * preset.usedDModel;
  return c;
}

}  // namespace tscope

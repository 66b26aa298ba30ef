// The GPT-3 family (Brown et al. 2020, arXiv 2005.14165, Table 2.1), the 2017 Transformer
// (Vaswani et al., arXiv 1706.03762, Table 3) and Switch-C (Fedus et al. 2021, arXiv 2101.03961,
// Table 9) as data.
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

const std::vector<ModelPreset>& transformer2017Presets() {
  static const std::vector<ModelPreset> presets = [] {
    constexpr const char* source = "Vaswani et al. 2017, Attention Is All You Need, Table 3";
    ModelPreset base{"Transformer base (2017)", 65e6, 6, 512, 8, 64, 512, 8, "", source};
    ModelPreset big{"Transformer big (2017)", 213e6, 6, 1024, 16, 64, 1024, 16, "", source};
    for (ModelPreset* p : {&base, &big}) {
      p->family = PresetFamily::Transformer2017;
      p->n_encoder_layer = 6;
      p->d_ff = 4 * p->d_model;  // 2048, 4096
      p->vocab_size = 37000;     // the shared source-target BPE of WMT 2014 EN-DE (section 5.1)
      p->n_ctx = 512;            // sinusoidal positions: no table, so any length
    }
    return std::vector<ModelPreset>{base, big};
  }();
  return presets;
}

const ModelPreset& switchCPreset() {
  static const ModelPreset preset = [] {
    ModelPreset p{"Switch-C (2021)", 1571e9, 15, 2080, 32, 64, 2080, 32, "", "Fedus et al. 2021, Switch Transformers, Table 9 (1571B parameters)"};
    p.family = PresetFamily::SwitchT5;
    p.n_encoder_layer = 15;
    p.d_ff = 6144;
    p.vocab_size = 32128;  // T5's SentencePiece vocabulary
    p.n_ctx = 512;
    p.n_experts = 2048;  // top-1, an expert layer in every block ("expert freq. 1")
    // Advanced Transformers, "Path 2" and Appendix A10: 1.6T, "only 10B active", 20 GB at inference.
    p.slideTotal = 1.6e12;
    p.slideActive = 10e9;
    p.slideInferenceBytes = 20e9;
    return p;
  }();
  return preset;
}

const std::vector<ModelPreset>& publishedPresets() {
  static const std::vector<ModelPreset> all = [] {
    std::vector<ModelPreset> v = gpt3Presets();
    for (const ModelPreset& p : transformer2017Presets()) v.push_back(p);
    v.push_back(switchCPreset());
    return v;
  }();
  return all;
}

std::string familyDescription(const ModelPreset& p) {
  switch (p.family) {
    case PresetFamily::Transformer2017:
      return "Encoder-decoder, 6 + 6 layers, d_ff = 4 d_model, post-norm LayerNorm, ReLU, sinusoidal positions, one shared embedding of "
             "37,000 BPE tokens";
    case PresetFamily::SwitchT5:
      return "T5-style encoder-decoder, 15 + 15 layers, 2048 top-1 experts of d_ff 6144 in every layer, RMSNorm, ReLU, vocabulary 32128 "
             "(T5 has no biases and a tiny relative-position table; tscope adds biases, +0.03%, and has no position table)";
    case PresetFamily::Gpt3: break;
  }
  return "Context 2048, vocabulary 50257, d_ff = 4 d_model";
}

ModelConfig printedConfig(const ModelPreset& preset) {
  ModelConfig c;  // GPT-2's defaults: learned positions, pre-norm LayerNorm, GELU, tied embeddings
  c.n_layer = preset.n_layer;
  c.n_embd = preset.d_model;
  c.n_head = preset.n_head;
  c.n_positions = 2048;
  c.vocab_size = 50257;
  c.d_ff = 4 * preset.d_model;
  if (preset.family == PresetFamily::Gpt3) return c;
  c.n_encoder_layer = preset.n_encoder_layer;
  c.n_positions = preset.n_ctx;
  c.vocab_size = preset.vocab_size;
  c.d_ff = preset.d_ff;
  c.activation = Activation::Relu;
  c.decoder_start_token_id = 0;  // T5's pad token starts the decoder; any valid ids do for counting
  c.eos_token_id = 1;
  if (preset.d_head * preset.n_head != preset.d_model) c.head_dim = preset.d_head;
  if (preset.family == PresetFamily::Transformer2017) {
    c.position_encoding = PositionEncoding::Sinusoidal;
    c.pre_norm = false;
  } else {
    c.position_encoding = PositionEncoding::None;
    c.norm = NormKind::RmsNorm;
    c.n_experts = preset.n_experts;
    c.moe_top_k = 1;
  }
  return c;
}

ModelConfig presetConfig(const ModelPreset& preset) {
  ModelConfig c = printedConfig(preset);
  if (preset.family != PresetFamily::Gpt3) return c;
  c.n_embd = preset.usedDModel;
  c.n_head = preset.usedHeads;
  c.d_ff = 4 * preset.usedDModel;
  return c;
}

}  // namespace tscope

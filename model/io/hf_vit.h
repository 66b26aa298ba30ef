// HuggingFace Vision Transformer classifiers (ViTForImageClassification, Dosovitskiy et al. 2020,
// arXiv 2010.11929) onto tscope's image encoder (config.h: image_size, patch_size, num_channels):
// the strided convolution of the patch embedding becomes patch.weight (K, C) and row 1 of wte, the
// [CLS] token row 0, the pre-norm LayerNorm blocks map onto tscope's (q, k, v fused into c_attn, every
// (out, in) matrix transposed), and the classifier on [CLS] becomes lm_head (V, C) plus lm_head.bias.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/core/weights.h"
#include "model/io/load_progress.h"

namespace tscope {

// Whether config.json is a ViT: `architectures` lists ViTForImageClassification, or model_type is
// "vit" (then hfVitConfig refuses the ViT heads that are not classifiers, in one line).
bool isHfVit(const nlohmann::json& hfConfig);

// config.json of a ViTForImageClassification -> ModelConfig: an encoder (causal false), pre-norm
// LayerNorm blocks with a final norm, learned positions (1 + P), GELU (erf: "gelu"; tanh: "gelu_new",
// "gelu_pytorch_tanh") or ReLU, the classes of id2label (else num_labels) as vocab_size, tokenizer
// "labels". Throws tscope::Error with one line naming the field for what tscope cannot express: a
// patch_size that does not divide image_size, a non-square image_size or patch_size, no id2label or
// num_labels, hidden_size not a multiple of num_attention_heads, use_mask_token, another ViT head
// (ViTForMaskedImageModeling, ViTModel), a hidden_act other than those; or a missing or malformed field.
ModelConfig hfVitConfig(const nlohmann::json& hfConfig, const std::string& where = "config.json");

// The class names by id: id2label's values in id order, or "LABEL_0", "LABEL_1", ... (HF's defaults)
// when config.json has only num_labels. Throws tscope::Error (one line starting with `where`) for ids
// that are not 0..n-1 or names that are not strings.
std::vector<std::string> hfVitLabels(const nlohmann::json& hfConfig, const std::string& where = "config.json");

// The weights of a ViT directory (model.safetensors or shards) for `config` (from hfVitConfig): the
// names with the vit. prefix or without it, q/k/v biases zero when config.json has qkv_bias false,
// the pooler (ViTModel's) ignored. F32, F16 and BF16 tensors all become float32 in an owned arena.
// Throws tscope::Error with one line naming the tensor and the file: missing, of the wrong shape, or
// unexpected.
Weights loadHfVitWeights(const std::string& dir, const ModelConfig& config, const nlohmann::json& hfConfig, const LoadProgress& progress = {});

}  // namespace tscope

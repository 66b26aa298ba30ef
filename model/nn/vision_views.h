// What the Vision panel and `tscope-cli classify` show of an image model (docs/VISION.md), as pure
// functions of its weights and trace: attention rollout across layers, the learned position
// embeddings' similarity grid (the ViT paper's Figure 7), the patch-embedding filters, the class
// probabilities.
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"

namespace tscope {

// The printable names of an image model's tokens: "[CLS]", then each patch as "(row,col)" of the grid.
std::vector<std::string> imageTokenLabels(const ModelConfig& config);

// `pixels` (imageFloats()) with the patches `masked` (0-based, row by row over the grid) set to 0 in
// every channel. Throws tscope::Error for a patch outside the grid.
std::vector<float> maskImagePatches(const ModelConfig& config, std::vector<float> pixels, const std::vector<int>& masked);

// Attention rollout (Abnar and Zuidema, 2020, "Quantifying Attention Flow in Transformers"): each
// layer's map averaged over its heads, the residual added as 0.5 A + 0.5 I with rows renormalised,
// then multiplied from the first layer up: rollout = A'_{L-1} ... A'_0. `maps` holds L layers of
// (H, T, T) probabilities each; returns (T, T), row i how much each input token flows into token i.
// Throws tscope::Error when the sizes disagree or a layer is missing.
std::vector<float> attentionRollout(const std::vector<std::vector<float>>& maps, int heads, int T);

// Whether an image model adds a position table (learned wpe, or the fixed 2-D sin-cos table of
// position_encoding "sinusoidal"): what positionSimilarity needs.
bool hasPositionTable(const ModelConfig& config);

// The cosine similarity of every patch position's embedding with every other's (P, P), P =
// numPatches(): wpe rows 1..P ((1 + P, C), row 0 is [CLS]'s); for sinusoidal positions the 2-D
// sin-cos table the forward adds (wpe is then not read). Throws for a model without a position
// table (hasPositionTable) or a table of the wrong size.
std::vector<float> positionSimilarity(const ModelConfig& config, const float* wpe, size_t count);

// The patch embedding's C filters as images: (C, channels, p, p), filter c the column c of
// patch.weight (K, C), each scaled to [-1, 1] by its largest magnitude.
std::vector<float> patchFilters(const ModelConfig& config, const float* patchWeight, size_t count);

// One class prediction: its id, its label and its probability.
struct ClassScore {
  int id = 0;
  std::string label;
  double p = 0;
};
// The k most probable classes of `logits` (V) under the softmax, labels[id] each (labels may be shorter:
// "class ID" then).
std::vector<ClassScore> topClasses(const std::vector<float>& logits, const std::vector<std::string>& labels, int k);

}  // namespace tscope

// The image model's views (vision_views.h).
#include "model/nn/vision_views.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/core/error.h"
#include "model/nn/positional.h"
#include "model/core/softmax.h"

namespace tscope {

std::vector<std::string> imageTokenLabels(const ModelConfig& config) {
  std::vector<std::string> labels{"[CLS]"};
  const int G = config.patchGrid();
  for (int i = 0; i < G * G; ++i) labels.push_back("(" + std::to_string(i / G) + "," + std::to_string(i % G) + ")");
  return labels;
}

std::vector<float> maskImagePatches(const ModelConfig& config, std::vector<float> pixels, const std::vector<int>& masked) {
  const int G = config.patchGrid(), p = config.patch_size, S = config.image_size;
  if (pixels.size() != (size_t)config.imageFloats())
    throw Error("the image has " + std::to_string(pixels.size()) + " values; this model reads " + std::to_string(config.num_channels) + " x " +
                std::to_string(config.image_size) + " x " + std::to_string(config.image_size));
  for (int patch : masked) {
    if (patch < 0 || patch >= G * G)
      throw Error("patch " + std::to_string(patch) + " is outside the " + std::to_string(G) + " x " + std::to_string(G) + " grid");
    const int gy = patch / G, gx = patch % G;
    for (int ch = 0; ch < config.num_channels; ++ch)
      for (int y = 0; y < p; ++y)
        for (int x = 0; x < p; ++x) pixels[((size_t)ch * S + gy * p + y) * S + gx * p + x] = 0.0f;
  }
  return pixels;
}

std::vector<float> attentionRollout(const std::vector<std::vector<float>>& maps, int heads, int T) {
  if (maps.empty()) throw Error("attention rollout needs the maps of every layer");
  const size_t TT = (size_t)T * T;
  std::vector<double> rollout(TT, 0.0), layer(TT), next(TT);
  for (int i = 0; i < T; ++i) rollout[(size_t)i * T + i] = 1.0;
  for (size_t l = 0; l < maps.size(); ++l) {
    if (maps[l].size() != (size_t)heads * TT)
      throw Error("attention rollout: layer " + std::to_string(l) + " has " + std::to_string(maps[l].size()) + " values, not H x T x T");
    for (size_t i = 0; i < TT; ++i) {
      double mean = 0;
      for (int h = 0; h < heads; ++h) mean += maps[l][h * TT + i];
      layer[i] = 0.5 * mean / heads + (i / T == i % T ? 0.5 : 0.0);
    }
    for (int i = 0; i < T; ++i) {  // rows renormalised (a masked or uniform-attention what-if may leave them off 1)
      double sum = 0;
      for (int j = 0; j < T; ++j) sum += layer[(size_t)i * T + j];
      if (sum > 0)
        for (int j = 0; j < T; ++j) layer[(size_t)i * T + j] /= sum;
    }
    // rollout = layer . rollout (this layer reads what the layers below it mixed)
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        double s = 0;
        for (int k = 0; k < T; ++k) s += layer[(size_t)i * T + k] * rollout[(size_t)k * T + j];
        next[(size_t)i * T + j] = s;
      }
    rollout.swap(next);
  }
  return std::vector<float>(rollout.begin(), rollout.end());
}

bool hasPositionTable(const ModelConfig& config) {
  return config.isImage() && (config.hasLearnedPositions() || config.position_encoding == PositionEncoding::Sinusoidal);
}

std::vector<float> positionSimilarity(const ModelConfig& config, const float* wpe, size_t count) {
  if (!hasPositionTable(config)) throw Error("the position similarity grid needs an image model with learned or 2-D sin-cos position embeddings");
  std::vector<float> fixed;
  if (!config.hasLearnedPositions()) {
    fixed = fixedPositionTable(config);  // the 2-D sin-cos table the forward adds
    wpe = fixed.data();
    count = fixed.size();
  }
  if (!wpe) throw Error("the position similarity grid needs an image model with learned or 2-D sin-cos position embeddings");
  const int P = config.numPatches(), C = config.n_embd;
  if (count != (size_t)(1 + P) * C) throw Error("the position table has " + std::to_string(count) + " values, not (1 + P) x C");
  std::vector<double> norms(P);
  for (int i = 0; i < P; ++i) {
    const float* a = wpe + (size_t)(1 + i) * C;
    norms[i] = std::sqrt(std::inner_product(a, a + C, a, 0.0));
  }
  std::vector<float> similarity((size_t)P * P);
  for (int i = 0; i < P; ++i)
    for (int j = 0; j < P; ++j) {
      const float *a = wpe + (size_t)(1 + i) * C, *b = wpe + (size_t)(1 + j) * C;
      const double denominator = norms[i] * norms[j];
      similarity[(size_t)i * P + j] = denominator > 0 ? static_cast<float>(std::inner_product(a, a + C, b, 0.0) / denominator) : 0.0f;
    }
  return similarity;
}

std::vector<float> patchFilters(const ModelConfig& config, const float* patchWeight, size_t count) {
  const int K = config.patchDim(), C = config.n_embd;
  if (!config.isImage() || !patchWeight || count != (size_t)K * C) throw Error("the patch filters need an image model's patch.weight (K, C)");
  std::vector<float> filters((size_t)C * K);
  for (int c = 0; c < C; ++c) {
    float largest = 0;
    for (int k = 0; k < K; ++k) largest = std::max(largest, std::fabs(patchWeight[(size_t)k * C + c]));
    for (int k = 0; k < K; ++k) filters[(size_t)c * K + k] = largest > 0 ? patchWeight[(size_t)k * C + c] / largest : 0.0f;
  }
  return filters;
}

std::vector<ClassScore> topClasses(const std::vector<float>& logits, const std::vector<std::string>& labels, int k) {
  std::vector<float> p(logits.size());
  softmax(logits, p);
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::clamp<int>(k, 0, static_cast<int>(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<ClassScore> top;
  for (int i = 0; i < k; ++i) {
    const int id = order[i];
    top.push_back({id, id < (int)labels.size() ? labels[id] : "class " + std::to_string(id), p[id]});
  }
  return top;
}

}  // namespace tscope

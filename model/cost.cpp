// Closed-form parameter, FLOP and memory counts for GPT-2-style configs.
#include "model/cost.h"

namespace tscope {

ParamCounts countParameters(const ModelConfig& c) {
  const int64_t L = c.n_layer, C = c.n_embd, F = c.dFF(), V = c.vocab_size, P = c.n_positions;
  ParamCounts p;
  p.tokenEmbedding = V * C;
  p.positionEmbedding = P * C;
  const int64_t attentionPerLayer = (C * 3 * C + 3 * C) + (C * C + C);
  const int64_t mlpPerLayer = (C * F + F) + (F * C + C);
  const int64_t normsPerLayer = 2 * 2 * C;
  p.perLayer = attentionPerLayer + mlpPerLayer + normsPerLayer;
  p.attention = L * attentionPerLayer;
  p.mlp = L * mlpPerLayer;
  p.layerNorm = L * normsPerLayer + 2 * C;
  p.embedding = p.tokenEmbedding + p.positionEmbedding;
  p.nonEmbedding = p.attention + p.mlp + p.layerNorm;
  p.total = p.embedding + p.nonEmbedding;
  return p;
}

FlopCounts flopsPerToken(const ModelConfig& c, int contextLength) {
  const ParamCounts p = countParameters(c);
  FlopCounts f;
  f.matmulForward = 2.0 * static_cast<double>(p.nonEmbedding);
  f.attentionForward = 2.0 * c.n_layer * static_cast<double>(contextLength) * c.n_embd;
  f.unembedForward = 2.0 * static_cast<double>(c.vocab_size) * c.n_embd;
  f.forward = f.matmulForward + f.attentionForward;
  f.training = 3.0 * f.forward;
  f.trainingCheckpointed = 4.0 * f.forward;
  return f;
}

int64_t kvCacheBytesPerToken(const ModelConfig& c, int bytesPerValue) {
  return 2LL * c.n_layer * c.n_embd * bytesPerValue;
}

int64_t weightBytes(const ModelConfig& c, int bytesPerValue) { return countParameters(c).total * bytesPerValue; }

}  // namespace tscope

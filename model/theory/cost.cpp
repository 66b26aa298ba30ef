// Closed-form parameter, FLOP and memory counts for every architecture-lab config.
#include "model/theory/cost.h"

#include <algorithm>

namespace tscope {

ParamCounts countParameters(const ModelConfig& c) {
  const int64_t L = c.n_layer, C = c.n_embd, A = c.attnDim(), F = c.dFF(), V = c.vocab_size, P = c.n_positions, E = c.n_experts;
  ParamCounts p;
  p.tokenEmbedding = c.isImage() ? 2 * C : V * C;
  p.patchEmbedding = c.isImage() ? (int64_t)c.patchDim() * C : 0;
  p.positionEmbedding = c.hasLearnedPositions() ? P * C : 0;
  p.tokenTypeEmbedding = (int64_t)c.type_vocab_size * C;
  p.unembedding = (c.tie_word_embeddings ? 0 : V * C) + (c.isImage() ? V : 0);
  const int64_t qkv = c.qkvDim();
  const int64_t attentionPerLayer = (C * qkv + qkv) + (A * C + C);      // W_O maps the A = H D head outputs to C
  const int64_t matrices = c.activation == Activation::SwiGlu ? 2 : 1;  // SwiGLU adds a gate matrix
  const int64_t feedForward = matrices * (C * F + F) + (F * C + C);
  const int64_t normSize = !c.hasNorm() ? 0 : c.hasNormBias() ? 2 * C : C;
  const int64_t routerPerLayer = c.isMoe() ? C * E : 0;
  // A shared expert (width S) and its gate vector (C) run for every token: always active.
  const int64_t S = c.hasSharedExpert() ? c.moe_shared_expert_d_ff : 0;
  const int64_t sharedPerLayer = S > 0 ? matrices * (C * S + S) + (S * C + C) + C : 0;
  const int64_t mlpPerLayer = !c.hasFeedForward() ? 0 : c.isMoe() ? routerPerLayer + E * feedForward + sharedPerLayer : feedForward;
  const int64_t activeMlpPerLayer = !c.hasFeedForward() ? 0
                                    : c.isMoe()         ? routerPerLayer + std::min<int64_t>(c.moe_top_k, E) * feedForward + sharedPerLayer
                                                        : feedForward;
  const int64_t normsPerLayer = c.hasFeedForward() ? 2 : 1;  // ln_1, ln_2 (attention-only: ln_1)
  p.perExpert = c.isMoe() ? feedForward : 0;
  p.perLayer = attentionPerLayer + mlpPerLayer + normsPerLayer * normSize;
  p.attention = L * attentionPerLayer;
  p.mlp = L * mlpPerLayer;
  p.router = L * routerPerLayer;
  p.sharedExpert = L * sharedPerLayer;
  const int64_t qkNormPerLayer = c.qk_norm ? 2 * c.headDim() : 0;  // q_norm, k_norm: one gain vector (D) each
  p.perLayer += qkNormPerLayer;
  p.layerNorm = L * (normsPerLayer * normSize + qkNormPerLayer) + (c.hasFinalNorm() ? normSize : 0) + (c.embedding_norm ? normSize : 0);
  p.outputHead = c.mlm_head ? (C * C + C) + normSize + V : 0;  // runs for every token, so active too
  if (c.isEncoderDecoder()) {
    // The encoder: n_encoder_layer of the same blocks (one more position table when learned, one more
    // final norm); each decoder layer adds a cross-attention sublayer (q, keys | values, output, ln_x).
    const int64_t Le = c.n_encoder_layer, KV2 = 2 * (int64_t)c.kvDim();
    const int64_t crossProjections = (C * A + A) + (C * KV2 + KV2) + (A * C + C);
    const int64_t encoderNorms = Le * (normsPerLayer * normSize + qkNormPerLayer) + (c.hasFinalNorm() ? normSize : 0);
    p.encoder = Le * (attentionPerLayer + mlpPerLayer) + encoderNorms + p.positionEmbedding;
    p.crossAttention = L * (crossProjections + normSize);
    p.perLayer += crossProjections + normSize;  // a decoder layer
    p.positionEmbedding *= 2;
    p.attention += Le * attentionPerLayer + L * crossProjections;
    p.mlp += Le * mlpPerLayer;
    p.router += Le * routerPerLayer;
    p.sharedExpert += Le * sharedPerLayer;
    p.layerNorm += encoderNorms + L * normSize;
  }
  p.embedding = p.tokenEmbedding + p.patchEmbedding + p.positionEmbedding + p.tokenTypeEmbedding + p.unembedding;
  p.nonEmbedding = p.attention + p.mlp + p.layerNorm + p.outputHead;
  p.total = p.embedding + p.nonEmbedding;
  p.activeNonEmbedding = p.attention + (L + c.n_encoder_layer) * activeMlpPerLayer + p.layerNorm + p.outputHead;
  p.active = p.activeNonEmbedding + p.embedding;
  return p;
}

FlopCounts flopsPerToken(const ModelConfig& c, int contextLength) {
  const ParamCounts p = countParameters(c);
  const int attended = c.slidingWindow() > 0 ? std::min(contextLength, c.slidingWindow()) : contextLength;
  FlopCounts f;
  f.matmulForward = 2.0 * static_cast<double>(p.activeNonEmbedding);
  // Kaplan et al. (2020), table 1: 2 n_layer n_ctx d_attn, d_attn = H D (= n_embd unless head_dim is set).
  f.attentionForward = 2.0 * c.n_layer * static_cast<double>(attended) * c.attnDim();
  f.unembedForward = 2.0 * static_cast<double>(c.vocab_size) * c.n_embd;
  f.forward = f.matmulForward + f.attentionForward;
  f.training = 3.0 * f.forward;
  f.trainingCheckpointed = 4.0 * f.forward;
  return f;
}

int64_t kvCacheBytesPerToken(const ModelConfig& c, int bytesPerValue) { return 2LL * c.n_layer * c.kvHeads() * c.headDim() * bytesPerValue; }

int64_t weightBytes(const ModelConfig& c, int bytesPerValue) { return countParameters(c).total * bytesPerValue; }

int64_t attentionMapBytes(const ModelConfig& c, int n, int bytesPerValue) {
  return static_cast<int64_t>(c.n_layer) * c.n_head * n * n * bytesPerValue;
}

}  // namespace tscope

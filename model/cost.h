// Parameter counts, FLOPs per token and memory, as pure functions of the config, so the UI,
// the CLI and the tests all show the same numbers.
// FLOP conventions follow Kaplan et al. 2020 (arXiv 2001.08361, Table 1): forward ~ 2N + 2 L n_ctx
// d_attn per token, N the non-embedding parameters; training ~ 3x forward (6N), and 4x (8N) with
// activation checkpointing (the forward is recomputed once).
#pragma once
#include <cstdint>

#include "model/config.h"

namespace tscope {

struct ParamCounts {
  int64_t tokenEmbedding = 0;     // V * C (also the tied unembedding)
  int64_t positionEmbedding = 0;  // n_positions * C
  int64_t attention = 0;          // all layers: QKV and output projections with biases
  int64_t mlp = 0;                // all layers: both MLP matrices with biases
  int64_t layerNorm = 0;          // all LayerNorms including the final one
  int64_t perLayer = 0;           // one block
  int64_t embedding = 0;          // token + position embeddings
  int64_t nonEmbedding = 0;       // everything else (Kaplan's N)
  int64_t total = 0;
};
ParamCounts countParameters(const ModelConfig& config);

struct FlopCounts {
  double matmulForward = 0;     // 2 N_nonembedding: the weight matmuls of the blocks
  double attentionForward = 0;  // 2 L n_ctx C: QK^T and attention-weighted V at context n_ctx
  double unembedForward = 0;    // 2 V C: the logits (Kaplan leave it out; shown separately)
  double forward = 0;           // matmulForward + attentionForward (Kaplan's C_forward)
  double training = 0;          // 3 x forward (= 6N + attention)
  double trainingCheckpointed = 0;  // 4 x forward (= 8N + attention), activations recomputed
};
FlopCounts flopsPerToken(const ModelConfig& config, int contextLength);

// Bytes of the KV cache per token (2 * L * C * bytesPerValue), and of the weights.
int64_t kvCacheBytesPerToken(const ModelConfig& config, int bytesPerValue = 4);
int64_t weightBytes(const ModelConfig& config, int bytesPerValue = 4);

}  // namespace tscope

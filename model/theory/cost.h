// Parameter counts, FLOPs per token and memory, as pure functions of the config (every
// architecture-lab variant included), so the UI, the CLI and the tests all show the same numbers.
// FLOP conventions follow Kaplan et al. 2020 (arXiv 2001.08361, Table 1): forward ~ 2N + 2 L n_ctx
// d_attn per token, N the non-embedding parameters (for MoE: the active ones); training ~ 3x
// forward (6N), and 4x (8N) with activation checkpointing (the forward is recomputed once).
#pragma once
#include <cstdint>

#include "model/core/config.h"

namespace tscope {

struct ParamCounts {
  int64_t tokenEmbedding = 0;      // V * C (image models: 2 C, the [CLS] embedding and the patch bias)
  int64_t patchEmbedding = 0;      // K * C: image models' patch projection (in embedding)
  int64_t positionEmbedding = 0;   // n_positions * C (learned positions only)
  int64_t tokenTypeEmbedding = 0;  // type_vocab_size * C (BERT's segments only)
  int64_t unembedding = 0;         // V * C when untied, else 0 (shared with the token embedding); image models + V (the classifier's bias)
  int64_t attention = 0;           // all layers: QKV and output projections with biases
  int64_t mlp = 0;                 // all layers: dense MLPs, or all experts and routers
  int64_t router = 0;              // all layers: router matrices (included in mlp)
  int64_t layerNorm = 0;           // all norms including the final one (and qk_norm's q/k gains, embedding_norm's)
  int64_t outputHead = 0;          // mlm_head: BERT's dense C x C + C, its norm and the output bias V (in nonEmbedding)
  int64_t perLayer = 0;            // one block
  int64_t perExpert = 0;           // one expert's feed-forward (MoE only)
  int64_t sharedExpert = 0;        // all layers: shared experts and their gate vectors (included in mlp; active for every token)
  // Encoder-decoder models (their parts are also in attention, mlp, layerNorm, positionEmbedding):
  int64_t encoder = 0;         // the encoder's layers, its final norm and its learned positions
  int64_t crossAttention = 0;  // all decoder layers: the cross-attention projections (in attention) and ln_x (in layerNorm)
  int64_t embedding = 0;       // token + position embeddings (+ untied unembedding)
  int64_t nonEmbedding = 0;    // everything else (Kaplan's N): attention + mlp + layerNorm + outputHead
  int64_t total = 0;
  int64_t activeNonEmbedding = 0;  // parameters one token uses: only its k experts count (MoE)
  int64_t active = 0;              // activeNonEmbedding + embedding
};
ParamCounts countParameters(const ModelConfig& config);

struct FlopCounts {
  double matmulForward = 0;         // 2 N_active: the weight matmuls of the blocks
  double attentionForward = 0;      // 2 L n_ctx' C, n_ctx' = min(n_ctx, window): QK^T and the weighted V
  double unembedForward = 0;        // 2 V C: the logits (Kaplan leave it out; shown separately)
  double forward = 0;               // matmulForward + attentionForward (Kaplan's C_forward)
  double training = 0;              // 3 x forward (= 6N + attention)
  double trainingCheckpointed = 0;  // 4 x forward (= 8N + attention), activations recomputed
};
FlopCounts flopsPerToken(const ModelConfig& config, int contextLength);

// Bytes of the KV cache per token: 2 (K and V) x L x n_kv_heads x head_dim x bytesPerValue.
int64_t kvCacheBytesPerToken(const ModelConfig& config, int bytesPerValue = 4);
int64_t weightBytes(const ModelConfig& config, int bytesPerValue = 4);
// Bytes of the attention probability maps of one forward over n tokens: L x H x n x n x bytes.
int64_t attentionMapBytes(const ModelConfig& config, int n, int bytesPerValue = 4);

}  // namespace tscope

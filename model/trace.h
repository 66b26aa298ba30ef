// What one forward pass records for the UI and the CLI: attention maps and scores, the residual
// stream, logit-lens predictions and the logits. What is captured is chosen by TraceOptions and
// kept under a memory cap (layers past the cap are left out and the trace says so).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/moe.h"

namespace tscope {

struct TraceOptions {
  bool attention = true;        // probabilities and pre-softmax scores of captured layers
  bool residuals = true;        // residual stream after attention and after the MLP
  int logitLensTopK = 5;        // top tokens per (layer, position); 0 = no logit lens
  bool logitLensLastOnly = false;  // lens only at the last new position (cheap for big vocabularies)
  std::vector<int> layers;      // layers to capture; empty = all
  std::vector<int> heads;       // heads whose attention maps are needed; empty = all (maps of other
                                // heads may stay 0: the CUDA backend recomputes only these)
  size_t memoryCapBytes = size_t(512) << 20;

  static TraceOptions nothing() {
    TraceOptions o;
    o.attention = o.residuals = false;
    o.logitLensTopK = 0;
    o.layers = {-1};  // no real layer
    return o;
  }
};

struct Trace {
  int T = 0;      // new tokens in this forward
  int Tk = 0;     // keys each query could see at most (pos0 + T)
  int pos0 = 0;   // tokens already in the KV cache before this forward
  int L = 0, H = 0, C = 0, V = 0;
  std::vector<int> tokens;            // (T) the new token ids
  std::vector<int> layers;            // (Lc) captured layer indices, ascending
  std::vector<float> attn;            // (Lc, H, T, Tk) post-softmax probabilities (0 where masked)
  std::vector<float> scores;          // (Lc, H, T, Tk) pre-softmax q.k/sqrt(D) (-inf where masked)
  std::vector<float> residAfterAttn;  // (Lc, T, C) residual stream after the attention sublayer
  std::vector<float> residAfterMlp;   // (Lc, T, C) residual stream after the block
  std::vector<float> residNorm;       // (L + 1, T) L2 norm: after the embedding, then after each block
  int lensK = 0;
  std::vector<int> lensPositions;     // (P) positions 0..T-1 the logit lens covers
  std::vector<int> lensIds;           // (Lc, P, K) top-K ids of softmax(unembed(ln_f(resid)))
  std::vector<float> lensProbs;       // (Lc, P, K) their probabilities
  std::vector<float> logits;          // (T or 1, V) as returned by the forward
  std::vector<MoeRouting> moe;        // (L) routing of every mixture-of-experts layer (empty for dense layers)
  float moeAuxLoss = 0;               // sum over layers of the load-balancing loss
  double forwardMs = 0;               // wall time of the forward, capture included
  bool truncated = false;             // some requested layers were left out by the memory cap
  std::string note;                   // why, when truncated

  int capturedIndex(int layer) const;  // index into `layers`, or -1
  const float* attnMap(int layerIndex, int head) const { return attn.data() + ((size_t)layerIndex * H + head) * T * Tk; }
  const float* scoreMap(int layerIndex, int head) const { return scores.data() + ((size_t)layerIndex * H + head) * T * Tk; }
};

}  // namespace tscope

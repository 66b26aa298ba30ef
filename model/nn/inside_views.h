// The numbers the Inside-the-block panel shows that are computed rather than read from a Trace:
// one head's attention stage by stage (q.k_j, / sqrt(D), ALiBi's bias, the mask, the softmax, the
// weighted sum of the v_j) with the same softmaxWeights / weightedSum as the kernel-regression
// example, the residual entering a layer, the most active MLP neurons, and the top next tokens.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/core/config.h"
#include "model/core/weights.h"
#include "model/nn/trace.h"
#include "model/nn/what_if.h"

namespace tscope {

// One head of one layer for one query row, from a trace with that layer's internals
// (TraceOptions::internalLayers).
struct HeadStages {
  int layer = 0, head = 0, kvHead = 0;  // kvHead = head / (H / Hkv) (grouped-query attention)
  int query = 0, position = 0;          // row t of the trace; its absolute position pos0 + t
  int D = 0, keys = 0;                  // head width; keys Tk
  std::span<const float> q;             // (D) the query (after RoPE, unscaled)
  std::span<const float> k, v;          // (Tk, D) every key and value of the head's kv head
  std::vector<float> dots;              // (Tk) q . k_j
  std::vector<float> scaled;            // (Tk) dots / sqrt(D), plus ALiBi's -m_h |position - j| when the model uses it
  std::vector<uint8_t> masked;          // (Tk) 1 where the query cannot see key j (attentionMask)
  std::vector<float> scores;            // (Tk) scaled with masked keys -inf: the trace's scores row
  std::vector<float> weights;           // (Tk) softmaxWeights(scores), or for a model built with an attention
                                        // variant its effective map row: the attention map's row
  std::vector<float> output;            // (D) weightedSum(weights, v): the head's slice of headMix
  int visibleKeys() const;              // keys not masked
};

// Throws tscope::Error when the trace has no internals of `layer`, or head / query out of range.
// `whatIfs`: those the forward ran with (what_if.h): the stages are then the changed forward's
// (no mask, no ALiBi bias, scores unscaled, a uniform layer's equal scores).
HeadStages headStages(const Trace& trace, const ModelConfig& config, int layer, int head, int query, const WhatIfs& whatIfs = {});

// The rows of one token through one block, from a trace with components (TraceOptions::components)
// and that layer's internals. In a pre-norm model the residual entering layer l is the embedding
// plus every earlier head mix through its W_O (with the bias) and every earlier MLP output.
struct BlockRows {
  std::vector<float> x;         // (C) the residual entering the layer (empty for post-norm past layer 0)
  std::vector<float> headMix;   // (A = H D) every head's output before W_O, concatenated
  std::vector<float> attnOut;   // (C) after W_O (its bias included)
  std::vector<float> crossOut;  // (C) encoder-decoder models: the cross-attention's output after its W_O (empty otherwise)
  std::vector<float> residMid;  // (C) x + attnOut (+ crossOut) (empty with x)
  std::vector<float> mlpOut;    // (C) the feed-forward output (0 for attention-only models)
  std::vector<float> residOut;  // (C) residMid + mlpOut (empty with x)
  std::string note;             // why x is missing, or ""
};
// Throws tscope::Error when the trace lacks the components or the layer's internals, or t is out of range.
BlockRows blockRows(const Trace& trace, const Weights& weights, int layer, int t);

// The indices of the `count` values largest in magnitude, largest first (ties to the lower index).
std::vector<int> topByMagnitude(std::span<const float> values, int count);

// The `count` most likely next tokens of `logits` (V), most likely first, with probabilities
// softmaxWeights(logits).
struct TokenProbability {
  int id = 0;
  float probability = 0;
};
std::vector<TokenProbability> topNextTokens(std::span<const float> logits, int count);

}  // namespace tscope

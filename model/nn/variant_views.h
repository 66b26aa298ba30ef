// The numbers the Efficient-attention panel shows around the variants (efficient_attention.h):
// one head's real q, k, v taken out of a trace with a layer's internals of every row, how far the
// next-token distribution moves when a variant replaces exact attention (KL and the top tokens
// before and after), and sliding window's receptive field growing layer by layer.
#pragma once
#include <span>
#include <vector>

#include "model/core/config.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/inside_views.h"
#include "model/nn/trace.h"

namespace tscope {

// Head `head` of `layer` as a HeadQkv pointing into the trace (q (Tk, D) of that head, k and v of its
// kv head head / (H / Hkv)), causal as the model is. Needs the layer's internals of every row of the
// prompt (rowPositions = 0 .. Tk - 1: Request::inspectRow = -1); throws tscope::Error otherwise.
HeadQkv traceHeadQkv(const Trace& trace, const ModelConfig& config, int layer, int head);

// The next-token distribution with exact attention against the one with a variant in place.
struct DistributionShift {
  double kl = 0;                         // KL(exact || variant) in nats: sum p log(p / q) over the vocabulary
  std::vector<TokenProbability> before;  // the `top` most likely tokens with exact attention
  std::vector<TokenProbability> after;   // and with the variant
};
// Both logits (V) of the same position; throws tscope::Error when their sizes differ or are 0.
DistributionShift distributionShift(std::span<const float> exactLogits, std::span<const float> variantLogits, int top);

// Sliding window of w keys (the query and w - 1 before it) in every layer: after layer l (1-based)
// a query at `position` has seen l (w - 1) + 1 tokens back (never more than position + 1).
// Returns (layers) those counts for l = 1 .. layers.
std::vector<int> windowReceptiveField(int window, int layers, int position);

}  // namespace tscope

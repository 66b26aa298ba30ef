// The numbers the panels show that are derived from a Trace rather than stored in it: the mean of
// attention over heads, the attention mask (causal and sliding window) drawn grey, the colour range
// of a map, the chosen experts of a MoE layer, and the smoothing of the training-loss curves. Pure
// functions, so the tests check what is drawn.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/core/config.h"
#include "model/core/weights.h"
#include "model/nn/moe.h"
#include "model/nn/trace.h"

namespace tscope {

// (T, Tk) 1 where query t, at position pos0 + t, cannot see key j, as the forward masks it: keys
// after the query in a causal model, and keys w or more positions away with a window of width w.
std::vector<uint8_t> attentionMask(const ModelConfig& config, int T, int Tk, int pos0 = 0);

// m (T, Tk) as drawn: the cells `mask` hides become NaN (grey, not a probability of 0).
void hideMasked(std::vector<float>& m, const std::vector<uint8_t>& mask);

// (T, T) the mean over heads of captured layer `layerIndex`, of probabilities or of scores
// (a masked score stays -inf).
std::vector<float> meanOverHeads(const AttentionRows& maps, int layerIndex, bool scores);

// Grouped-query attention: query head `head` reads key/value head `kvHead`, which the query heads
// firstHead..lastHead share (one head alone without GQA; every head with multi-query attention).
struct KvGroup {
  int kvHead = 0, firstHead = 0, lastHead = 0;
};
KvGroup kvGroupOf(const ModelConfig& config, int head);

// (T, T) what the Attention panel shows: one head or the mean over heads; probabilities with the
// masked cells NaN, or scores with them -inf.
std::vector<float> attentionShown(const AttentionRows& maps, const ModelConfig& config, int layerIndex, int head, bool average, bool scores);

// (T, T) a copy of one head's probabilities `map` over a prompt of T tokens with the masked cells NaN.
std::vector<float> probabilitiesShown(const float* map, int T, const ModelConfig& config);

// Encoder-decoder models (docs/ENCODER_DECODER.md), for the Translation panel:
// (T, S) the cross-attention of captured decoder layer `layerIndex` (decoder rows over source
// columns): head `head`, or the mean over heads. Throws tscope::Error when the trace holds none.
std::vector<float> crossAttentionShown(const Trace& trace, int layerIndex, int head, bool average);
// (S, S) encoder layer `layer`'s self-attention (bidirectional: no cell is masked): head `head`,
// or the mean over heads. Throws tscope::Error for a layer or head the encoder trace lacks.
std::vector<float> encoderAttentionShown(const EncoderTrace& encoder, int layer, int head, bool average);
// (T - 1) how probable the model found each token of a sequence after its first: element t is
// softmax(logits row t)[ids[t + 1]], where row t (of T rows of V) follows ids[0..t]. For a decoder
// input "^ 1 9 9 1" it is p('1' | ^), p('9' | ^1), ... Empty for T < 2; throws tscope::Error when
// the logits are not (T, V) or an id is outside 0..V-1.
std::vector<float> sequenceTokenProbabilities(std::span<const float> logits, std::span<const int> ids, int V);

// {lo, hi}: the smallest and largest finite values of m ({0, 0} when there is none).
std::pair<float, float> finiteRange(const std::vector<float>& m);

// The ids of the `count` largest values (logits or probabilities), largest first, ties to the lower id.
std::vector<int> topTokenIds(const std::vector<float>& values, int count);

// (V) probabilities after a sampling stage: how many tokens can still be drawn (probability > 0).
int tokensKept(const std::vector<float>& probs);

// (T, E) the active experts: each token's gate at the experts it chose (dropped ones included),
// 0 at the others.
std::vector<float> activeExperts(const MoeRouting& routing);

// Assignments per expert split by whether the expert's capacity let them through.
struct ExpertLoadSplit {
  std::vector<float> kept;     // (E) assignments computed
  std::vector<float> dropped;  // (E) assignments over capacity
  int droppedAssignments = 0;  // sum of dropped
};
ExpertLoadSplit expertLoadSplit(const MoeRouting& routing);

// (n) the mean of each value and the window - 1 before it (fewer at the start): the smoothed loss.
std::vector<double> trailingMean(const std::vector<float>& values, size_t window);

// The values of steps 1..n averaged in consecutive buckets of ceil(n / maxPoints) steps, at most
// maxPoints of them; appends each bucket's mean step to stepsOut and mean value to meansOut.
void bucketMeans(const std::vector<double>& values, size_t maxPoints, std::vector<double>& stepsOut, std::vector<double>& meansOut);

// The statistics the configured norm computes over one row x (C): the mean (LayerNorm subtracts
// it; reported for RMSNorm too) and rstd = 1 / sqrt(var + eps) (LayerNorm) or 1 / sqrt(mean
// square + eps) (RMSNorm), in double.
struct NormStatistics {
  double mean = 0, rstd = 1;
};
NormStatistics normStatistics(const float* x, int C, const ModelConfig& config);

// (C) sum_i x[i] W[(firstRow + i) C + c] over i < rows, in double: a row through rows
// firstRow .. firstRow + rows - 1 of a (K, C) weight such as W_O (one head's D rows, or all of them).
std::vector<double> throughRows(const float* x, const float* W, int firstRow, int rows, int C);

// Direct logit attribution: how much each component writing to the residual stream adds to the
// logit of `token` at `position`, through the final norm frozen at that position (its scale and
// centering are linear once the statistics are fixed). The parts sum to the logit (sum()).
// Needs a trace with components (TraceOptions::components) and a pre-norm model (an
// encoder-decoder's decoder: the cross-attention's heads are parts too) without an MLM head (BERT's
// nonlinear head cannot be split into parts); throws tscope::Error otherwise, or for a position or
// token out of range.
struct LogitAttribution {
  int position = 0, token = 0;
  float logit = 0;              // the model's logit (the trace's, when it holds that row)
  float embedding = 0;          // token + position embedding
  std::vector<float> heads;     // (L, H) each head's output through its rows of W_O
  std::vector<float> attnBias;  // (L) the bias of W_O
  std::vector<float> mlp;       // (L) each feed-forward output (0 for attention-only models)
  // Encoder-decoder models (empty otherwise): each decoder layer's cross-attention heads through
  // their rows of the cross-attention's W_O, and that W_O's bias.
  std::vector<float> crossHeads;  // (L, H)
  std::vector<float> crossBias;   // (L)
  float normBias = 0;             // the final norm's bias (0 without one)
  float outputBias = 0;           // the unembedding's own bias at the token: an image model's classifier bias (0 without one)
  double sum() const;             // every part: equals the logit
};
// Why the logits of a model with this config are not a sum of per-component parts ("" when they
// are): an MLM head (not linear), post-norm (renormalised after every sublayer), no residual.
std::string logitAttributionProblem(const ModelConfig& config);
LogitAttribution directLogitAttribution(const Trace& trace, const Weights& weights, int position, int token);

}  // namespace tscope

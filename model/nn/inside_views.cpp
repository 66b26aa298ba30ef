// One head's attention stage by stage, the residual entering a layer, the most active neurons and
// the top next tokens, for the Inside-the-block panel (inside_views.h).
#include "model/nn/inside_views.h"

#include "model/nn/efficient_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/kernel_regression.h"
#include "model/nn/positional.h"
#include "model/nn/trace_views.h"

namespace tscope {

int HeadStages::visibleKeys() const { return (int)std::count(masked.begin(), masked.end(), uint8_t(0)); }

HeadStages headStages(const Trace& trace, const ModelConfig& modelConfig, int layer, int head, int query, const WhatIfs& whatIfs) {
  const ModelConfig config = configAsRun(modelConfig, whatIfs);
  const int li = trace.internalIndex(layer);
  if (li < 0) throw Error("the trace holds no internals of layer " + std::to_string(layer));
  if (head < 0 || head >= trace.H) throw Error("head " + std::to_string(head) + " is outside 0.." + std::to_string(trace.H - 1));
  if (query < 0 || query >= trace.T) throw Error("query row " + std::to_string(query) + " is outside 0.." + std::to_string(trace.T - 1));
  HeadStages s;
  s.layer = layer;
  s.head = head;
  s.kvHead = head / (trace.H / trace.Hkv);
  s.query = query;
  s.position = trace.pos0 + query;
  s.D = trace.D;
  s.keys = trace.Tk;
  const size_t D = trace.D, Tk = trace.Tk;
  const size_t R = trace.R(), r = trace.rowOf(query);
  s.q = std::span<const float>(trace.q).subspan((((size_t)li * trace.H + head) * R + r) * D, D);
  s.k = std::span<const float>(trace.k).subspan(((size_t)li * trace.Hkv + s.kvHead) * Tk * D, Tk * D);
  s.v = std::span<const float>(trace.v).subspan(((size_t)li * trace.Hkv + s.kvHead) * Tk * D, Tk * D);
  const std::vector<uint8_t> mask = attentionMask(config, trace.T, trace.Tk, trace.pos0);
  s.masked.assign(mask.begin() + (size_t)query * Tk, mask.begin() + (size_t)(query + 1) * Tk);
  const bool noPositions = whatIfs.has(WhatIfKind::NoPositions);
  const float slope = config.position_encoding == PositionEncoding::Alibi && !noPositions ? alibiSlopes(trace.H)[head] : 0.0f;
  const double scale = whatIfs.has(WhatIfKind::NoScale) ? 1.0 : 1.0 / std::sqrt((double)D);
  s.dots.resize(Tk);
  s.scaled.resize(Tk);
  s.scores.resize(Tk);
  for (size_t j = 0; j < Tk; ++j) {
    double dot = 0;
    for (size_t d = 0; d < D; ++d) dot += (double)s.q[d] * s.k[j * D + d];
    s.dots[j] = (float)dot;
    s.scaled[j] = (float)(dot * scale - (double)slope * std::abs(s.position - (int)j));
    s.scores[j] = s.masked[j] ? -std::numeric_limits<float>::infinity() : s.scaled[j];
  }
  if (whatIfs.atLayer(WhatIfKind::UniformAttention, layer)) {
    // The what-if's softmax of equal scores: the mean over the visible keys.
    for (size_t j = 0; j < Tk; ++j) s.scores[j] = s.masked[j] ? -std::numeric_limits<float>::infinity() : 0.0f;
    s.weights = softmaxWeights(s.scores);
  } else if (config.hasVariantAttention()) {
    // The model's own variant: its effective map row (out = A v) from this query and every key.
    std::vector<float> q(Tk * D, 0.0f);
    std::copy(s.q.begin(), s.q.end(), q.begin() + (size_t)s.position * D);
    const HeadQkv qkv{q.data(), s.k.data(), s.v.data(), (int)Tk, (int)D, config.causal};
    const VariantResult variant = attentionVariantReference(qkv, config.attentionVariantAsRun());
    s.weights.assign(variant.map.begin() + (size_t)s.position * Tk, variant.map.begin() + (size_t)(s.position + 1) * Tk);
  } else {
    s.weights = softmaxWeights(s.scores);
  }
  s.output = weightedSum(s.weights, s.v, s.D);
  return s;
}

namespace {
// (C) row t of an (R, C) array starting at `rows`.
std::vector<float> row(const std::vector<float>& rows, size_t index, size_t C) { return {rows.begin() + index * C, rows.begin() + (index + 1) * C}; }
// out += x W + b: a row (A) through W_O (A, C) and its bias.
void addProjected(std::vector<float>& out, const std::vector<float>& x, const float* W, const float* b) {
  const int C = static_cast<int>(out.size());
  const std::vector<double> sum = throughRows(x.data(), W, 0, static_cast<int>(x.size()), C);
  for (int c = 0; c < C; ++c) out[c] += (float)(sum[c] + (b ? b[c] : 0.0f));
}
void add(std::vector<float>& out, const std::vector<float>& x) {
  for (size_t c = 0; c < out.size(); ++c) out[c] += x[c];
}
}  // namespace

BlockRows blockRows(const Trace& trace, const Weights& weights, int layer, int t) {
  const size_t C = trace.C, A = trace.A, R = trace.R();
  const int li = trace.internalIndex(layer);
  if (li < 0) throw Error("the trace holds no internals of layer " + std::to_string(layer));
  if (t < 0 || t >= trace.T) throw Error("row " + std::to_string(t) + " is outside 0.." + std::to_string(trace.T - 1));
  if (trace.embedded.size() != R * C || trace.headMix.size() != (size_t)trace.L * R * A || trace.mlpOut.size() != (size_t)trace.L * R * C)
    throw Error("the trace holds no components (TraceOptions::components)");
  const size_t at = trace.rowOf(t);
  BlockRows r;
  r.headMix = row(trace.headMix, (size_t)layer * R + at, A);
  r.attnOut = row(trace.attnOut, (size_t)li * R + at, C);
  r.mlpOut = row(trace.mlpOut, (size_t)layer * R + at, C);
  const bool cross = weights.config().isEncoderDecoder();
  if (cross && trace.crossMix.size() != (size_t)trace.L * R * A) throw Error("the trace holds no components (TraceOptions::components)");
  std::vector<float> projScratch;
  // A decoder layer's cross-attention output: its heads through the cross-attention's W_O.
  auto crossOut = [&](int l) {
    std::vector<float> out(C, 0.0f);
    const ConstLayerWeights& w = weights.layers[l];
    addProjected(out, row(trace.crossMix, (size_t)l * R + at, A), w.crossProjWeight, w.crossProjBias);
    return out;
  };
  if (cross) r.crossOut = crossOut(layer);
  if (!weights.config().residual && layer > 0) {
    r.note = "no residual: each sublayer replaces the stream, so it is not a sum of the components";
    return r;
  }
  if (!weights.config().pre_norm && layer > 0) {
    r.note = "post-norm: the residual is renormalised after every sublayer, so it is not a sum of the components";
    return r;
  }
  r.x = row(trace.embedded, at, C);
  for (int l = 0; l < layer; ++l) {
    const ConstLayerWeights& w = weights.layers[l];
    addProjected(r.x, row(trace.headMix, (size_t)l * R + at, A), floatLayout(w.attnProjWeight, w.attnProjPacked, projScratch), w.attnProjBias);
    if (cross) add(r.x, crossOut(l));
    add(r.x, row(trace.mlpOut, (size_t)l * R + at, C));
  }
  if (!weights.config().residual) {
    r.note = "no residual: the attention's output replaces the stream, so the block's output is not x + attn + mlp";
    return r;
  }
  r.residMid = r.x;
  add(r.residMid, r.attnOut);
  if (cross) add(r.residMid, r.crossOut);
  if (!weights.config().pre_norm) {
    r.note = "post-norm: the attention sum is normalised before the MLP, so the block's output is not x + attn + mlp";
    return r;
  }
  r.residOut = r.residMid;
  add(r.residOut, r.mlpOut);
  return r;
}

std::vector<int> topByMagnitude(std::span<const float> values, int count) {
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min(order.size(), (size_t)std::max(0, count));
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](int a, int b) {
    const float ma = std::abs(values[a]), mb = std::abs(values[b]);
    return ma > mb || (ma == mb && a < b);
  });
  order.resize(n);
  return order;
}

std::vector<TokenProbability> topNextTokens(std::span<const float> logits, int count) {
  const std::vector<float> probs = softmaxWeights(logits);
  std::vector<TokenProbability> out;
  for (int id : topTokenIds(probs, count)) out.push_back({id, probs[id]});
  return out;
}

}  // namespace tscope

// The derived numbers the panels show (trace_views.h): masks, head means, colour ranges and the
// chosen experts, each computed from the trace and the config alone.
#include "model/nn/trace_views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

std::vector<uint8_t> attentionMask(const ModelConfig& config, int T, int Tk, int pos0) {
  std::vector<uint8_t> mask(static_cast<size_t>(T) * Tk, 0);
  for (int t = 0; t < T; ++t) {
    const int position = pos0 + t;
    for (int j = 0; j < Tk; ++j) {
      const bool later = config.causal && j > position;
      const bool outsideWindow = config.slidingWindow() > 0 && std::abs(position - j) >= config.slidingWindow();
      mask[static_cast<size_t>(t) * Tk + j] = later || outsideWindow;
    }
  }
  return mask;
}

void hideMasked(std::vector<float>& m, const std::vector<uint8_t>& mask) {
  for (size_t i = 0; i < m.size() && i < mask.size(); ++i)
    if (mask[i]) m[i] = std::numeric_limits<float>::quiet_NaN();
}

std::vector<float> meanOverHeads(const AttentionRows& maps, int layerIndex, bool scores) {
  const int T = maps.rows(), H = maps.heads();
  std::vector<float> mean(static_cast<size_t>(T) * T, 0.0f), one(mean.size());
  for (int h = 0; h < H; ++h) {
    maps.map(layerIndex, h, scores, one.data());
    for (size_t i = 0; i < mean.size(); ++i) mean[i] += one[i] / H;  // -inf stays -inf where masked
  }
  return mean;
}

KvGroup kvGroupOf(const ModelConfig& config, int head) {
  if (head < 0 || head >= config.n_head) throw Error("head " + std::to_string(head) + " is outside 0.." + std::to_string(config.n_head - 1));
  const int perGroup = config.n_head / config.kvHeads();  // query heads per key/value head (validated to divide)
  const int kvHead = head / perGroup;
  return {kvHead, kvHead * perGroup, kvHead * perGroup + perGroup - 1};
}

std::vector<float> attentionShown(const AttentionRows& maps, const ModelConfig& config, int layerIndex, int head, bool average, bool scores) {
  std::vector<float> m = average ? meanOverHeads(maps, layerIndex, scores) : maps.map(layerIndex, head, scores);
  if (!scores) hideMasked(m, attentionMask(config, maps.rows(), maps.rows()));
  return m;
}

std::vector<float> probabilitiesShown(const float* map, int T, const ModelConfig& config) {
  std::vector<float> m(map, map + static_cast<size_t>(T) * T);
  hideMasked(m, attentionMask(config, T, T));
  return m;
}

namespace {
// (cells) head `head` of `heads` consecutive maps of `cells` floats, or their mean.
std::vector<float> oneHeadOrMean(const float* maps, int heads, size_t cells, int head, bool average) {
  if (!average) return std::vector<float>(maps + static_cast<size_t>(head) * cells, maps + static_cast<size_t>(head + 1) * cells);
  std::vector<double> sum(cells, 0.0);
  for (int h = 0; h < heads; ++h)
    for (size_t i = 0; i < cells; ++i) sum[i] += maps[static_cast<size_t>(h) * cells + i];
  std::vector<float> mean(cells);
  for (size_t i = 0; i < cells; ++i) mean[i] = static_cast<float>(sum[i] / heads);
  return mean;
}
}  // namespace

std::vector<float> crossAttentionShown(const Trace& trace, int layerIndex, int head, bool average) {
  const size_t cells = static_cast<size_t>(trace.T) * trace.S;
  const int captured = static_cast<int>(trace.layers.size());
  if (trace.S == 0 || trace.cross.size() != static_cast<size_t>(captured) * trace.H * cells)
    throw Error("the trace holds no cross-attention (a decoder-only model, or maps not captured)");
  if (layerIndex < 0 || layerIndex >= captured)
    throw Error("captured layer " + std::to_string(layerIndex) + " is outside 0.." + std::to_string(captured - 1));
  if (!average && (head < 0 || head >= trace.H)) throw Error("head " + std::to_string(head) + " is outside 0.." + std::to_string(trace.H - 1));
  return oneHeadOrMean(trace.crossMap(layerIndex, 0), trace.H, cells, head, average);
}

std::vector<float> encoderAttentionShown(const EncoderTrace& encoder, int layer, int head, bool average) {
  const size_t cells = static_cast<size_t>(encoder.S) * encoder.S;
  if (encoder.S == 0 || encoder.attn.size() != static_cast<size_t>(encoder.L) * encoder.H * cells) throw Error("the encoder trace holds no maps");
  if (layer < 0 || layer >= encoder.L) throw Error("encoder layer " + std::to_string(layer) + " is outside 0.." + std::to_string(encoder.L - 1));
  if (!average && (head < 0 || head >= encoder.H)) throw Error("head " + std::to_string(head) + " is outside 0.." + std::to_string(encoder.H - 1));
  return oneHeadOrMean(encoder.attnMap(layer, 0), encoder.H, cells, head, average);
}

std::vector<float> sequenceTokenProbabilities(std::span<const float> logits, std::span<const int> ids, int V) {
  const size_t T = ids.size();
  if (V <= 0 || logits.size() != T * static_cast<size_t>(V))
    throw Error("sequenceTokenProbabilities: " + std::to_string(logits.size()) + " logits for " + std::to_string(T) + " rows of " +
                std::to_string(V));
  std::vector<float> probabilities;
  for (size_t t = 0; t + 1 < T; ++t) {
    const int next = ids[t + 1];
    if (next < 0 || next >= V) throw Error("token id " + std::to_string(next) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
    const std::span<const float> row = logits.subspan(t * V, V);
    probabilities.push_back(static_cast<float>(softmaxNorm(row).probability(row[next])));
  }
  return probabilities;
}

std::pair<float, float> finiteRange(const std::vector<float>& m) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : m)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!(lo <= hi)) return {0.0f, 0.0f};
  return {lo, hi};
}

std::vector<int> topTokenIds(const std::vector<float>& values, int count) {
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t shown = std::min(order.size(), static_cast<size_t>(std::max(0, count)));
  std::partial_sort(order.begin(), order.begin() + shown, order.end(),
                    [&](int a, int b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
  order.resize(shown);
  return order;
}

int tokensKept(const std::vector<float>& probs) {
  return static_cast<int>(std::count_if(probs.begin(), probs.end(), [](float p) { return p > 0; }));
}

std::vector<float> activeExperts(const MoeRouting& routing) {
  std::vector<float> gates(static_cast<size_t>(routing.tokens) * routing.experts, 0.0f);
  for (const MoeAssignment& a : routing.assignments) gates[static_cast<size_t>(a.token) * routing.experts + a.expert] = a.gate;
  return gates;
}

ExpertLoadSplit expertLoadSplit(const MoeRouting& routing) {
  ExpertLoadSplit split;
  split.kept.assign(routing.experts, 0.0f);
  split.dropped.assign(routing.experts, 0.0f);
  for (const MoeAssignment& a : routing.assignments) {
    (a.dropped ? split.dropped : split.kept)[a.expert] += 1.0f;
    split.droppedAssignments += a.dropped ? 1 : 0;
  }
  return split;
}

std::vector<double> trailingMean(const std::vector<float>& values, size_t window) {
  std::vector<double> out(values.size());
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    sum += values[i];
    if (i >= window) sum -= values[i - window];
    out[i] = sum / static_cast<double>(std::min(i + 1, window));
  }
  return out;
}

void bucketMeans(const std::vector<double>& values, size_t maxPoints, std::vector<double>& stepsOut, std::vector<double>& meansOut) {
  const size_t n = values.size(), per = std::max<size_t>(1, (n + maxPoints - 1) / std::max<size_t>(1, maxPoints));
  for (size_t i = 0; i < n; i += per) {
    const size_t end = std::min(n, i + per);
    double step = 0, value = 0;
    for (size_t j = i; j < end; ++j) {
      step += static_cast<double>(j + 1);
      value += values[j];
    }
    stepsOut.push_back(step / static_cast<double>(end - i));
    meansOut.push_back(value / static_cast<double>(end - i));
  }
}

}  // namespace tscope

namespace tscope {

NormStatistics normStatistics(const float* x, int C, const ModelConfig& config) {
  NormStatistics s;
  if (!config.hasNorm()) return {0.0, 1.0};  // norm none: the identity
  double sum = 0, squares = 0;
  for (int c = 0; c < C; ++c) sum += x[c];
  s.mean = sum / C;
  for (int c = 0; c < C; ++c) {
    const double centred = config.norm == NormKind::RmsNorm ? x[c] : x[c] - s.mean;
    squares += centred * centred;
  }
  s.rstd = 1.0 / std::sqrt(squares / C + config.layer_norm_epsilon);
  return s;
}

std::vector<double> throughRows(const float* x, const float* W, int firstRow, int rows, int C) {
  std::vector<double> out(C, 0.0);
  for (int i = 0; i < rows; ++i) {
    const double xi = x[i];
    const float* wRow = W + (size_t)(firstRow + i) * C;
    for (int c = 0; c < C; ++c) out[c] += xi * wRow[c];
  }
  return out;
}

double LogitAttribution::sum() const {
  double s = (double)embedding + normBias + outputBias;
  for (float v : heads) s += v;
  for (float v : attnBias) s += v;
  for (float v : mlp) s += v;
  for (float v : crossHeads) s += v;
  for (float v : crossBias) s += v;
  return s;
}

std::string logitAttributionProblem(const ModelConfig& config) {
  if (config.mlm_head)
    return "direct logit attribution cannot split this model's logits: its MLM head (dense, GELU, LayerNorm) is not linear in the residual";
  if (!config.residual) return "direct logit attribution needs residual connections: without them the last sublayer's output is the whole stream";
  if (!config.pre_norm) return "direct logit attribution needs a pre-norm model: a post-norm model renormalises the residual after every sublayer";
  return "";
}

// The final norm frozen at the position: for LayerNorm, logit = rstd (x . a - mean(x) sum(a)) + b . u
// with a = g * u (u the token's unembedding row), linear in x = the sum of the components; RMSNorm
// drops the mean; no final norm leaves x . u. Each component c takes its share of the first term.
LogitAttribution directLogitAttribution(const Trace& trace, const Weights& weights, int position, int token) {
  const ModelConfig& config = weights.config();
  const int L = config.n_layer, H = config.n_head, C = config.n_embd, D = config.headDim();
  if (std::string problem = logitAttributionProblem(config); !problem.empty()) throw Error(problem);
  if (trace.headMix.empty() || trace.finalResid.empty() || (config.isEncoderDecoder() && trace.crossMix.empty()))
    throw Error("direct logit attribution needs a trace with components");
  if (position < 0 || position >= trace.T)
    throw Error("position " + std::to_string(position) + " is outside the trace's " + std::to_string(trace.T) + " tokens");
  if (token < 0 || token >= config.vocab_size)
    throw Error("token id " + std::to_string(token) + " is outside the vocabulary [0, " + std::to_string(config.vocab_size) + ")");
  const ModelParams<const float>& params = weights;
  std::vector<float> unembeddingRow(C), projScratch;
  if (const PackedMatrix half = params.unembeddingPacked()) half.rowToFloat(token, unembeddingRow.data());
  else std::copy_n(params.unembedding() + (size_t)token * C, C, unembeddingRow.data());
  const float* u = unembeddingRow.data();
  const size_t R = trace.R(), at = trace.rowOf(position), row = at * C;
  // a (C) and the frozen statistics of the final norm's input.
  std::vector<double> a(u, u + C);
  double rstd = 1, sumA = 0, normBias = 0;
  const bool layerNorm = config.hasFinalNorm() && config.norm == NormKind::LayerNorm;
  if (config.hasFinalNorm()) {
    rstd = normStatistics(trace.finalResid.data() + row, C, config).rstd;
    for (int c = 0; c < C; ++c) {
      a[c] *= params.lnfWeight[c];
      sumA += a[c];
      if (params.lnfBias) normBias += (double)params.lnfBias[c] * u[c];
    }
  }
  auto share = [&](const std::vector<double>& component) {
    double dot = 0, mean = 0;
    for (int c = 0; c < C; ++c) {
      dot += component[c] * a[c];
      mean += component[c];
    }
    return static_cast<float>(rstd * (dot - (layerNorm ? mean / C * sumA : 0.0)));
  };
  LogitAttribution out;
  out.position = position;
  out.token = token;
  out.normBias = static_cast<float>(normBias);
  if (params.lmHeadBias) out.outputBias = params.lmHeadBias[token];  // added to the logit after the unembedding
  std::vector<double> component(C);
  const float* embedded = trace.embedded.data() + row;
  component.assign(embedded, embedded + C);
  out.embedding = share(component);
  out.heads.resize((size_t)L * H);
  out.attnBias.assign(L, 0.0f);
  out.mlp.assign(L, 0.0f);
  if (config.isEncoderDecoder()) {
    out.crossHeads.resize((size_t)L * H);
    out.crossBias.assign(L, 0.0f);
  }
  // Layer l's attention sublayer (self or cross): each head's slice of `mixes` (L, R, A) through its
  // rows of W_O (A_in, C_out: h D .. h D + D - 1), and W_O's bias.
  auto attentionParts = [&](int l, const std::vector<float>& mixes, const float* proj, const float* bias, std::vector<float>& heads,
                            std::vector<float>& biases) {
    const float* mix = mixes.data() + ((size_t)l * R + at) * config.attnDim();
    for (int h = 0; h < H; ++h) heads[(size_t)l * H + h] = share(throughRows(mix + h * D, proj, h * D, D, C));
    if (bias) {
      component.assign(bias, bias + C);
      biases[l] = share(component);
    }
  };
  for (int l = 0; l < L; ++l) {
    const ConstLayerWeights& w = params.layers[l];
    attentionParts(l, trace.headMix, floatLayout(w.attnProjWeight, w.attnProjPacked, projScratch), w.attnProjBias, out.heads, out.attnBias);
    if (config.isEncoderDecoder()) attentionParts(l, trace.crossMix, w.crossProjWeight, w.crossProjBias, out.crossHeads, out.crossBias);
    if (config.hasFeedForward()) {
      const float* mlp = trace.mlpOut.data() + ((size_t)l * R + at) * C;
      component.assign(mlp, mlp + C);
      out.mlp[l] = share(component);
    }
  }
  const int V = config.vocab_size;
  const size_t rows = trace.logits.size() / V;
  if (rows == (size_t)trace.T) out.logit = trace.logits[(size_t)position * V + token];
  else if (rows == 1 && position == trace.T - 1) out.logit = trace.logits[token];
  else {  // the logit from the final residual itself (not from the parts)
    const float* x = trace.finalResid.data() + row;
    component.assign(x, x + C);
    out.logit = share(component) + out.normBias + out.outputBias;
  }
  return out;
}

}  // namespace tscope

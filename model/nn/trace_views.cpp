// The derived numbers the panels show (trace_views.h): masks, head means, colour ranges and the
// chosen experts, each computed from the trace and the config alone.
#include "model/nn/trace_views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tscope {

std::vector<uint8_t> attentionMask(const ModelConfig& config, int T, int Tk, int pos0) {
  std::vector<uint8_t> mask(static_cast<size_t>(T) * Tk, 0);
  for (int t = 0; t < T; ++t) {
    const int position = pos0 + t;
    for (int j = 0; j < Tk; ++j) {
      const bool later = config.causal && j > position;
      const bool outsideWindow = config.attention_window > 0 && std::abs(position - j) >= config.attention_window;
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

std::vector<float> attentionShown(const AttentionRows& maps, const ModelConfig& config, int layerIndex, int head, bool average,
                                  bool scores) {
  std::vector<float> m = average ? meanOverHeads(maps, layerIndex, scores) : maps.map(layerIndex, head, scores);
  if (!scores) hideMasked(m, attentionMask(config, maps.rows(), maps.rows()));
  return m;
}

std::vector<float> probabilitiesShown(const float* map, int T, const ModelConfig& config) {
  std::vector<float> m(map, map + static_cast<size_t>(T) * T);
  hideMasked(m, attentionMask(config, T, T));
  return m;
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

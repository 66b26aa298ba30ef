// The efficient-attention lecture's cost side (see attention_cost.h): its complexity table, the
// worked example's attention-matrix bytes, naive against tiled slow-memory traffic, and the
// least-squares log-log fit the measured cost curves are read with.
#include "model/theory/attention_cost.h"

#include <algorithm>
#include <cmath>

#include "model/core/error.h"

namespace tscope {

namespace {

// The lecture's row for one variant (w, k, m, c: the window, projected rows, features, LSH chunk).
VariantComplexity complexityOf(AttentionVariant variant) {
  switch (variant) {
    case AttentionVariant::Exact:
      return {variant, "O(n^2 d)", "O(n^2)", true, 2, 2, "~4k", "short sequences; the reference every variant is checked against"};
    case AttentionVariant::Flash:
      return {variant, "O(n^2 d)", "O(n)", true, 2, 1, "64k+", "exact attention for long contexts: tiles on chip, fewer slow-memory (HBM) trips"};
    case AttentionVariant::Window:
      return {
          variant, "O(n w d)", "O(n w)", false, 1, 1, "unbounded (fixed w)", "local context (Longformer, Mistral); depth widens the receptive field"};
    case AttentionVariant::Lsh:
      return {variant, "O(n log n d)", "O(n c)", false, 1, 1, "64k", "long sequences where similar queries and keys meet in a bucket (Reformer)"};
    case AttentionVariant::Linformer:
      return {variant, "O(n k d)", "O(n k)", false, 1, 1, "fixed n (E, F sized to n)", "encoders with a fixed sequence length; low-rank attention"};
    case AttentionVariant::Linear:
      return {variant, "O(n d^2)", "O(d^2)", false, 1, 0, "unbounded", "streaming and recurrent decoding: phi(Q) (phi(K)^T V), a d x d state"};
    case AttentionVariant::Performer:
      return {variant, "O(n m d)", "O(m d)", false, 1, 0, "unbounded", "an unbiased softmax approximation in linear time (positive random features)"};
  }
  throw Error("complexityTable: unknown attention variant");
}

void requirePositive(const char* what, int64_t value) {
  if (value < 1) throw Error(std::string(what) + " must be at least 1, not " + std::to_string(value));
}

}  // namespace

std::vector<VariantComplexity> complexityTable() {
  std::vector<VariantComplexity> table;
  for (AttentionVariant variant : allAttentionVariants()) table.push_back(complexityOf(variant));
  return table;
}

SlideVariantRow slideVariantRow(AttentionVariant variant) {
  // Advanced Transformers, Appendix A15, "Variant Complexity Exact Max n Use Case", as printed.
  switch (variant) {
    case AttentionVariant::Exact: return {true, "Standard", "O(n^2)", "Yes", "2K-4K", "Default", ""};
    case AttentionVariant::Lsh: return {true, "Reformer", "O(n log n)", "No", "64K", "Long docs", ""};
    case AttentionVariant::Linformer:
      return {true, "Linformer", "O(n)", "No", "32K", "Fast training", "max n: tscope's Linformer has a fixed n (E and F are sized to it)"};
    case AttentionVariant::Linear:
      return {true, "Linear Attn", "O(n)", "No", "16K", "Real-time", "max n: tscope gives linear attention no bound (a d x d state)"};
    case AttentionVariant::Flash:
      return {true, "FlashAttention", "O(n^2)", "Yes", "8K", "GPU-optimized", "max n: tscope says 64k+ (memory O(n), nothing n x n stored)"};
    case AttentionVariant::Window:
    case AttentionVariant::Performer: return {};
  }
  throw Error("slideVariantRow: unknown attention variant");
}

std::vector<SlideLabelPair> slideBestFor() {
  return {{"Books (100K+)", "Reformer"}, {"Articles (8-16K)", "Linformer"}, {"Production (2-4K)", "FlashAttn"}, {"Mobile/Edge", "Linear Attn"}};
}

std::vector<SlideLabelPair> slideWhenToUse() {
  return {{"Long documents", "n > 4096"}, {"Limited memory", "Consumer GPUs"}, {"Real-time", "Latency critical"}, {"Edge deployment", "Mobile, IoT"}};
}

int64_t attentionMatrixBytes(int64_t n, int64_t heads, int bytesPerValue) { return heads * n * n * bytesPerValue; }

// k above n projects to n rows (the op uses min(k, n)).
int64_t linformerMatrixBytes(int64_t n, int64_t k, int64_t heads, int bytesPerValue) { return heads * n * std::min(k, n) * bytesPerValue; }

MemoryTraffic attentionMemoryTraffic(int64_t n, int64_t d, int64_t tileRows, bool causal, int bytesPerValue) {
  requirePositive("attention traffic: n", n);
  requirePositive("attention traffic: d", d);
  requirePositive("attention traffic: tile rows", tileRows);
  requirePositive("attention traffic: bytes per value", bytesPerValue);
  MemoryTraffic traffic;
  // Naive: read Q, K; write S; read S, write P; read P, V; write O (the n x n matrices make it).
  traffic.naiveBytes = (2 * n * d + n * n + 2 * n * n + n * n + n * d + n * d) * bytesPerValue;
  // Tiled: each query tile of tileRows rows reads the K and V rows it can see (all of them, or
  // causal: the key tiles up to and including its diagonal tile, which ends where the query tile ends).
  int64_t keyValueRows = 0;
  for (int64_t start = 0; start < n; start += tileRows) keyValueRows += causal ? std::min(n, start + tileRows) : n;
  traffic.tiledBytes = (n * d + 2 * d * keyValueRows + n * d + 2 * n) * bytesPerValue;
  return traffic;
}

LogLogFit fitLogLog(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw Error("log-log fit: " + std::to_string(x.size()) + " x values but " + std::to_string(y.size()) + " y values");
  if (x.size() < 2) throw Error("log-log fit needs at least two points, not " + std::to_string(x.size()));
  double meanX = 0, meanY = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0) || !std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw Error("log-log fit: point " + std::to_string(i) + " (" + std::to_string(x[i]) + ", " + std::to_string(y[i]) +
                  ") must be positive and finite");
    meanX += std::log(x[i]);
    meanY += std::log(y[i]);
  }
  const double count = static_cast<double>(x.size());
  meanX /= count;
  meanY /= count;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = std::log(x[i]) - meanX;
    sxx += dx * dx;
    sxy += dx * (std::log(y[i]) - meanY);
  }
  if (!(sxx > 0)) throw Error("log-log fit: every x is the same, so there is no slope");
  LogLogFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = meanY - fit.slope * meanX;
  fit.points = static_cast<int>(x.size());
  return fit;
}

}  // namespace tscope

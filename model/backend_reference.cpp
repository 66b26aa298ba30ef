// The reference backend: every op as plain loops, written to be read, not to be fast.
// It is the ground truth the Eigen (and CUDA) paths are tested against.
#include <cmath>
#include <cstring>
#include <limits>

#include "model/backend.h"
#include "model/ops_reference.h"

namespace tscope {

namespace ref {

void embed(float* out, const int* tokens, const float* wte, const float* wpe, int T, int C, int pos0) {
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c)
      out[t * C + c] = wte[static_cast<size_t>(tokens[t]) * C + c] + wpe[static_cast<size_t>(pos0 + t) * C + c];
}

void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) {
  for (int t = 0; t < T; ++t) {
    const float* x = in + static_cast<size_t>(t) * C;
    double mean = 0;
    for (int c = 0; c < C; ++c) mean += x[c];
    mean /= C;
    double var = 0;  // biased variance, as in PyTorch's LayerNorm
    for (int c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c)
      out[static_cast<size_t>(t) * C + c] = static_cast<float>((x[c] - mean) * rstd) * weight[c] + bias[c];
  }
}

void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double sum = bias ? bias[n] : 0.0;
      for (int k = 0; k < K; ++k) sum += static_cast<double>(in[static_cast<size_t>(t) * K + k]) * weight[static_cast<size_t>(k) * N + n];
      out[static_cast<size_t>(t) * N + n] = static_cast<float>(sum);
    }
}

void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double sum = 0;
      for (int k = 0; k < K; ++k) sum += static_cast<double>(in[static_cast<size_t>(t) * K + k]) * weight[static_cast<size_t>(n) * K + k];
      out[static_cast<size_t>(t) * N + n] = static_cast<float>(sum);
    }
}

float geluTanh(float x) {
  const double k = std::sqrt(2.0 / M_PI);
  const double xd = x;
  return static_cast<float>(0.5 * xd * (1.0 + std::tanh(k * (xd + 0.044715 * xd * xd * xd))));
}

void gelu(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = geluTanh(x[i]);
}

void add(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

void attention(float* out, float* probs, float* scores, const float* qkv, float* kCache, float* vCache,
               const AttentionShape& s) {
  const int H = s.nHead, D = s.headDim, C = H * D, T = s.T, Tk = s.keys();
  // Append this call's keys and values to the cache.
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      kCache[static_cast<size_t>(s.pos0 + t) * C + c] = qkv[static_cast<size_t>(t) * 3 * C + C + c];
      vCache[static_cast<size_t>(s.pos0 + t) * C + c] = qkv[static_cast<size_t>(t) * 3 * C + 2 * C + c];
    }
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> row(Tk);
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t) {
      const int lastKey = s.pos0 + t;  // causal: a query sees keys up to its own position
      const float* q = qkv + static_cast<size_t>(t) * 3 * C + h * D;
      double maxScore = -std::numeric_limits<double>::infinity();
      for (int j = 0; j <= lastKey; ++j) {
        const float* k = kCache + static_cast<size_t>(j) * C + h * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
        row[j] = dot * scale;
        maxScore = std::max(maxScore, row[j]);
      }
      double sum = 0;
      for (int j = 0; j <= lastKey; ++j) sum += std::exp(row[j] - maxScore);
      const size_t mapRow = (static_cast<size_t>(h) * T + t) * Tk;
      for (int j = 0; j < Tk; ++j) {
        const bool visible = j <= lastKey;
        if (scores) scores[mapRow + j] = visible ? static_cast<float>(row[j]) : -std::numeric_limits<float>::infinity();
        if (probs) probs[mapRow + j] = visible ? static_cast<float>(std::exp(row[j] - maxScore) / sum) : 0.0f;
      }
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j <= lastKey; ++j)
          acc += std::exp(row[j] - maxScore) / sum * vCache[static_cast<size_t>(j) * C + h * D + d];
        out[static_cast<size_t>(t) * C + h * D + d] = static_cast<float>(acc);
      }
    }
}

}  // namespace ref

namespace {

class ReferenceBackend : public HostBackend {
 public:
  std::string name() const override { return "reference"; }
  void embed(float* out, const int* tokens, const float* wte, const float* wpe, int T, int C, int pos0) override {
    ref::embed(out, tokens, wte, wpe, T, C, pos0);
  }
  void layerNorm(float* out, const float* in, const float* w, const float* b, int T, int C, float eps) override {
    ref::layerNorm(out, in, w, b, T, C, eps);
  }
  void matmul(float* out, const float* in, const float* w, const float* b, int T, int K, int N) override {
    ref::matmul(out, in, w, b, T, K, N);
  }
  void matmulTransposed(float* out, const float* in, const float* w, int T, int K, int N) override {
    ref::matmulTransposed(out, in, w, T, K, N);
  }
  void gelu(float* x, size_t n) override { ref::gelu(x, n); }
  void add(float* x, const float* y, size_t n) override { ref::add(x, y, n); }
  void attention(float* out, float* probs, float* scores, const float* qkv, float* kCache, float* vCache,
                 const AttentionShape& s) override {
    ref::attention(out, probs, scores, qkv, kCache, vCache, s);
  }
};

}  // namespace

std::unique_ptr<Backend> makeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace tscope

// The reference backend: every op as plain loops, written to be read, not to be fast.
// It is the ground truth the Eigen (and CUDA) paths are tested against.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/core/softmax.h"
#include "model/nn/backend.h"
#include "model/nn/ops_reference.h"
#include "model/nn/positional.h"

namespace tscope {

namespace ref {

void embed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0) {
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) out[(size_t)t * C + c] = wte[(size_t)tokens[t] * C + c] + (positions ? positions[(size_t)(pos0 + t) * C + c] : 0.0f);
}

void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) {
  for (int t = 0; t < T; ++t) {
    const float* x = in + (size_t)t * C;
    double mean = 0;
    for (int c = 0; c < C; ++c) mean += x[c];
    mean /= C;
    double var = 0;  // biased variance, as in PyTorch's LayerNorm
    for (int c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c) out[(size_t)t * C + c] = static_cast<float>((x[c] - mean) * rstd) * weight[c] + (bias ? bias[c] : 0.0f);
  }
}

void rmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps) {
  for (int t = 0; t < T; ++t) {
    const float* x = in + (size_t)t * C;
    double meanSquare = 0;
    for (int c = 0; c < C; ++c) meanSquare += (double)x[c] * x[c];
    meanSquare /= C;
    const double rrms = 1.0 / std::sqrt(meanSquare + eps);
    for (int c = 0; c < C; ++c) out[(size_t)t * C + c] = static_cast<float>(x[c] * rrms) * weight[c];
  }
}

void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double sum = bias ? bias[n] : 0.0;
      for (int k = 0; k < K; ++k) sum += static_cast<double>(in[(size_t)t * K + k]) * weight[(size_t)k * N + n];
      out[(size_t)t * N + n] = static_cast<float>(sum);
    }
}

void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double sum = 0;
      for (int k = 0; k < K; ++k) sum += static_cast<double>(in[(size_t)t * K + k]) * weight[(size_t)n * K + k];
      out[(size_t)t * N + n] = static_cast<float>(sum);
    }
}

float geluTanh(float x) {
  const double k = std::sqrt(2.0 / M_PI), xd = x;
  return static_cast<float>(0.5 * xd * (1.0 + std::tanh(k * (xd + 0.044715 * xd * xd * xd))));
}

float geluErf(float x) { return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)))); }

float silu(float x) { return static_cast<float>(x / (1.0 + std::exp(-(double)x))); }

void activate(float* x, size_t n, Activation activation) {
  for (size_t i = 0; i < n; ++i) {
    switch (activation) {
      case Activation::GeluTanh: x[i] = geluTanh(x[i]); break;
      case Activation::GeluErf: x[i] = geluErf(x[i]); break;
      case Activation::Relu: x[i] = x[i] > 0 ? x[i] : 0.0f; break;
      case Activation::SwiGlu: break;  // applied by swiglu(), which needs the gate
    }
  }
}

void swiglu(float* value, const float* gate, size_t n) {
  for (size_t i = 0; i < n; ++i) value[i] = silu(gate[i]) * value[i];
}

void add(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

void gatherRows(float* out, const float* in, const int* rows, int n, int C) {
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < C; ++c) out[(size_t)i * C + c] = in[(size_t)rows[i] * C + c];
}

void scatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C) {
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < C; ++c) out[(size_t)rows[i] * C + c] += weights[i] * in[(size_t)i * C + c];
}

void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s) {
  const int H = s.nHead, D = s.headDim, C = H * D, T = s.T, Tk = s.keys();
  const int kvDim = s.kvDim(), rowWidth = s.qkvDim(), group = H / s.kvHeads();
  if (s.ropeBase > 0) {
    applyRope(qkv, T, H, D, rowWidth, s.pos0, s.ropeBase, s.ropeFrequencies);                // queries
    applyRope(qkv + C, T, s.kvHeads(), D, rowWidth, s.pos0, s.ropeBase, s.ropeFrequencies);  // keys
  }
  // Append this call's keys and values to the cache.
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < kvDim; ++c) {
      kCache[(size_t)(s.pos0 + t) * kvDim + c] = qkv[(size_t)t * rowWidth + C + c];
      vCache[(size_t)(s.pos0 + t) * kvDim + c] = qkv[(size_t)t * rowWidth + C + kvDim + c];
    }
  const double scale = s.scale();
  std::vector<double> row(Tk), weight(Tk);
  for (int h = 0; h < H; ++h) {
    const int kvHead = h / group;
    for (int t = 0; t < T; ++t) {
      const int p = s.pos0 + t;
      const float* q = qkv + (size_t)t * rowWidth + h * D;
      for (int j = 0; j < Tk; ++j) {
        row[j] = -std::numeric_limits<double>::infinity();  // masked: probability 0
        if (!s.visible(p, j)) continue;
        const float* k = kCache + (size_t)j * kvDim + kvHead * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
        row[j] = dot * scale - (s.alibiSlopes ? s.alibiSlopes[h] * std::abs(p - j) : 0.0);
      }
      softmax(row, weight);
      const size_t mapRow = ((size_t)h * T + t) * Tk;
      for (int j = 0; j < Tk; ++j) {
        if (scores) scores[mapRow + j] = static_cast<float>(row[j]);
        if (probs) probs[mapRow + j] = static_cast<float>(weight[j]);
      }
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < Tk; ++j) acc += weight[j] * vCache[(size_t)j * kvDim + kvHead * D + d];
        out[(size_t)t * C + h * D + d] = static_cast<float>(acc);
      }
    }
  }
}

void crossAttentionRow(double* p, const float* q, const float* kv, int S, int Hkv, int D, int kvColumn) {
  const int KV = Hkv * D;
  const double scale = 1.0 / std::sqrt((double)D);
  for (int j = 0; j < S; ++j) {
    const float* k = kv + (size_t)j * 2 * KV + kvColumn;
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += (double)q[d] * k[d];
    p[j] = dot * scale;
  }
  softmax(std::span<const double>(p, S), std::span<double>(p, S));
}

void crossAttention(float* out, float* probs, const float* q, const float* kv, int T, int S, int H, int Hkv, int D) {
  const int C = H * D, KV = Hkv * D, group = H / Hkv;
  std::vector<double> p(S);
  for (int h = 0; h < H; ++h) {
    const int g = (h / group) * D;
    for (int t = 0; t < T; ++t) {
      crossAttentionRow(p.data(), q + (size_t)t * C + h * D, kv, S, Hkv, D, g);
      float* o = out + (size_t)t * C + h * D;
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < S; ++j) acc += p[j] * kv[(size_t)j * 2 * KV + KV + g + d];
        o[d] = static_cast<float>(acc);
      }
      if (probs)
        for (int j = 0; j < S; ++j) probs[((size_t)h * T + t) * S + j] = static_cast<float>(p[j]);
    }
  }
}

}  // namespace ref

namespace {

class ReferenceBackend : public HostBackend {
 public:
  std::string name() const override { return "reference"; }
  void embed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0) override {
    ref::embed(out, tokens, wte, positions, T, C, pos0);
  }
  void layerNorm(float* out, const float* in, const float* w, const float* b, int T, int C, float eps) override {
    ref::layerNorm(out, in, w, b, T, C, eps);
  }
  void rmsNorm(float* out, const float* in, const float* w, int T, int C, float eps) override { ref::rmsNorm(out, in, w, T, C, eps); }
  void matmul(float* out, const float* in, const float* w, const float* b, int T, int K, int N) override { ref::matmul(out, in, w, b, T, K, N); }
  void matmulTransposed(float* out, const float* in, const float* w, int T, int K, int N) override { ref::matmulTransposed(out, in, w, T, K, N); }
  void activate(float* x, size_t n, Activation a) override { ref::activate(x, n, a); }
  void swiglu(float* value, const float* gate, size_t n) override { ref::swiglu(value, gate, n); }
  void add(float* x, const float* y, size_t n) override { ref::add(x, y, n); }
  void zero(float* x, size_t n) override { std::memset(x, 0, n * sizeof(float)); }
  void gatherRows(float* out, const float* in, const int* rows, int n, int C) override { ref::gatherRows(out, in, rows, n, C); }
  void scatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C) override {
    ref::scatterAddRows(out, in, rows, weights, n, C);
  }
  void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s) override {
    ref::attention(out, probs, scores, qkv, kCache, vCache, s);
  }
};

}  // namespace

std::unique_ptr<Backend> makeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace tscope

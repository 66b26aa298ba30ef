// Plain-loop backward passes for the GPT-2 ops (see backward_reference.h), written to be read.
// The derivations are the standard ones (e.g. llm.c's train_gpt2.c documents the same set).
#include "model/backward_reference.h"

#include <cmath>
#include <limits>

namespace tscope::ref {

void embedBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C) {
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      dwte[(size_t)tokens[t] * C + c] += dout[(size_t)t * C + c];
      if (dwpe) dwpe[(size_t)t * C + c] += dout[(size_t)t * C + c];
    }
}

void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int C,
                       float eps) {
  for (int t = 0; t < T; ++t) {
    const float* x = in + (size_t)t * C;
    const float* dy = dout + (size_t)t * C;
    double mean = 0;
    for (int c = 0; c < C; ++c) mean += x[c];
    mean /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= C;
    const double rstd = 1.0 / std::sqrt(var + eps);
    // With xhat = (x - mean) rstd and g = dy * weight:
    // dx = rstd (g - mean(g) - xhat mean(g xhat))
    double meanG = 0, meanGXhat = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - mean) * rstd, g = (double)dy[c] * weight[c];
      meanG += g;
      meanGXhat += g * xhat;
      dweight[c] += static_cast<float>(dy[c] * xhat);
      if (dbias) dbias[c] += dy[c];
    }
    meanG /= C;
    meanGXhat /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - mean) * rstd, g = (double)dy[c] * weight[c];
      din[(size_t)t * C + c] += static_cast<float>(rstd * (g - meanG - xhat * meanGXhat));
    }
  }
}

void matmulBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < K; ++k) {
      double sum = 0;
      for (int n = 0; n < N; ++n) sum += (double)dout[(size_t)t * N + n] * weight[(size_t)k * N + n];
      din[(size_t)t * K + k] += static_cast<float>(sum);
    }
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) {
      double sum = 0;
      for (int t = 0; t < T; ++t) sum += (double)in[(size_t)t * K + k] * dout[(size_t)t * N + n];
      dweight[(size_t)k * N + n] += static_cast<float>(sum);
    }
  if (dbias)
    for (int n = 0; n < N; ++n) {
      double sum = 0;
      for (int t = 0; t < T; ++t) sum += dout[(size_t)t * N + n];
      dbias[n] += static_cast<float>(sum);
    }
}

void matmulTransposedBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int T, int K, int N) {
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < K; ++k) {
      double sum = 0;
      for (int n = 0; n < N; ++n) sum += (double)dout[(size_t)t * N + n] * weight[(size_t)n * K + k];
      din[(size_t)t * K + k] += static_cast<float>(sum);
    }
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      double sum = 0;
      for (int t = 0; t < T; ++t) sum += (double)dout[(size_t)t * N + n] * in[(size_t)t * K + k];
      dweight[(size_t)n * K + k] += static_cast<float>(sum);
    }
}

void geluTanhBackward(float* din, const float* dout, const float* in, size_t n) {
  const double k = std::sqrt(2.0 / M_PI);
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i], inner = k * (x + 0.044715 * x * x * x), th = std::tanh(inner);
    const double dinner = k * (1.0 + 3.0 * 0.044715 * x * x);
    const double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * dinner;
    din[i] += static_cast<float>(grad * dout[i]);
  }
}

void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* probs, int T, int H, int D) {
  const int C = H * D;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> dprobs(T), dscores(T);
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t) {
      const float* p = probs + ((size_t)h * T + t) * T;
      const float* dy = dout + (size_t)t * C + h * D;
      // out_t = sum_j p_tj v_j: dv_j += p_tj dy; dp_tj = dy . v_j
      for (int j = 0; j <= t; ++j) {
        const float* v = qkv + (size_t)j * 3 * C + 2 * C + h * D;
        double dot = 0;
        for (int d = 0; d < D; ++d) {
          dot += (double)dy[d] * v[d];
          dqkv[(size_t)j * 3 * C + 2 * C + h * D + d] += static_cast<float>(p[j] * dy[d]);
        }
        dprobs[j] = dot;
      }
      // softmax: ds_j = p_j (dp_j - sum_i p_i dp_i)
      double weighted = 0;
      for (int j = 0; j <= t; ++j) weighted += p[j] * dprobs[j];
      for (int j = 0; j <= t; ++j) dscores[j] = p[j] * (dprobs[j] - weighted);
      // s_tj = scale q_t . k_j
      const float* q = qkv + (size_t)t * 3 * C + h * D;
      for (int j = 0; j <= t; ++j) {
        const float* k = qkv + (size_t)j * 3 * C + C + h * D;
        for (int d = 0; d < D; ++d) {
          dqkv[(size_t)t * 3 * C + h * D + d] += static_cast<float>(dscores[j] * scale * k[d]);
          dqkv[(size_t)j * 3 * C + C + h * D + d] += static_cast<float>(dscores[j] * scale * q[d]);
        }
      }
    }
}

double crossEntropyForwardBackward(float* dlogits, const float* logits, const int* targets, const unsigned char* scored, int T, int V) {
  int count = 0;
  for (int t = 0; t < T; ++t) count += (!scored || scored[t]) ? 1 : 0;
  double loss = 0;
  for (int t = 0; t < T; ++t) {
    const float* row = logits + (size_t)t * V;
    float* drow = dlogits + (size_t)t * V;
    if (count == 0 || (scored && !scored[t])) {
      for (int v = 0; v < V; ++v) drow[v] = 0;
      continue;
    }
    double maxLogit = -std::numeric_limits<double>::infinity();
    for (int v = 0; v < V; ++v) maxLogit = std::max(maxLogit, (double)row[v]);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(row[v] - maxLogit);
    const double logSum = std::log(sum) + maxLogit;
    loss += (logSum - row[targets[t]]) / count;
    for (int v = 0; v < V; ++v) drow[v] = static_cast<float>((std::exp(row[v] - logSum) - (v == targets[t] ? 1.0 : 0.0)) / count);
  }
  return loss;
}

}  // namespace tscope::ref

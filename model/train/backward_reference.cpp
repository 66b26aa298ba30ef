// Plain-loop backward passes of every training op (see backward_reference.h), written to be read:
// the ground truth the Eigen path (backward_cpu.cpp) is tested against. The derivations are the
// standard ones (llm.c's train_gpt2.c documents the GPT-2 set); each is spelled out in a comment.
#include "model/train/backward_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/train/backward.h"
#include "model/nn/ops_reference.h"

namespace tscope::ref {

void embedBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C) {
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      dwte[(size_t)tokens[t] * C + c] += dout[(size_t)t * C + c];
      if (dwpe) dwpe[(size_t)t * C + c] += dout[(size_t)t * C + c];
    }
}

void embedBackward(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) {
      const float g = dout[(size_t)r * C + c];
      dwte[(size_t)tokens[r] * C + c] += g;
      if (dpositions) dpositions[(size_t)(r % T) * C + c] += g;
    }
}

void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int C, float eps) {
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

void rmsNormBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int T, int C, float eps) {
  for (int t = 0; t < T; ++t) {
    const float* x = in + (size_t)t * C;
    const float* dy = dout + (size_t)t * C;
    double meanSquare = 0;
    for (int c = 0; c < C; ++c) meanSquare += (double)x[c] * x[c];
    meanSquare /= C;
    const double rrms = 1.0 / std::sqrt(meanSquare + eps);
    // y_c = x_c r w_c with r = (mean(x^2) + eps)^-1/2, dr/dx_c = -r^3 x_c / C; with g = dy * w:
    // dx_c = r g_c - r^3 x_c mean(g x)
    double meanGX = 0;
    for (int c = 0; c < C; ++c) {
      meanGX += (double)dy[c] * weight[c] * x[c];
      dweight[c] += static_cast<float>(dy[c] * x[c] * rrms);
    }
    meanGX /= C;
    for (int c = 0; c < C; ++c) din[(size_t)t * C + c] += static_cast<float>(rrms * dy[c] * weight[c] - rrms * rrms * rrms * x[c] * meanGX);
  }
}

void matmulBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int K, int N) {
  if (din)
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

void geluErfBackward(float* din, const float* dout, const float* in, size_t n) {
  // d/dx [0.5 x (1 + erf(x / sqrt 2))] = 0.5 (1 + erf(x / sqrt 2)) + x phi(x), phi the normal density
  const double invSqrt2 = 1.0 / std::sqrt(2.0), invSqrt2Pi = 1.0 / std::sqrt(2.0 * M_PI);
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i];
    const double grad = 0.5 * (1.0 + std::erf(x * invSqrt2)) + x * invSqrt2Pi * std::exp(-0.5 * x * x);
    din[i] += static_cast<float>(grad * dout[i]);
  }
}

void reluBackward(float* din, const float* dout, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (in[i] > 0) din[i] += dout[i];
}

void activationBackward(float* din, const float* dout, const float* in, size_t n, Activation activation) {
  switch (activation) {
    case Activation::GeluTanh: geluTanhBackward(din, dout, in, n); return;
    case Activation::GeluErf: geluErfBackward(din, dout, in, n); return;
    case Activation::Relu: reluBackward(din, dout, in, n); return;
    case Activation::SwiGlu: break;
  }
  throw Error("activationBackward: SwiGLU needs the gate; use swigluBackward");
}

void swigluBackward(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) {
  // out = silu(g) v with silu(g) = g s(g), s the logistic sigmoid: dv = dout silu(g),
  // dg = dout v silu'(g), silu'(g) = s(g) (1 + g (1 - s(g)))
  for (size_t i = 0; i < n; ++i) {
    const double g = gate[i], sigmoid = 1.0 / (1.0 + std::exp(-g));
    dvalue[i] += static_cast<float>(dout[i] * g * sigmoid);
    dgate[i] += static_cast<float>((double)dout[i] * value[i] * sigmoid * (1.0 + g * (1.0 - sigmoid)));
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

void attentionBackward(float* dqkv, const float* dout, const float* qkv, const AttentionShape& s, int batch) {
  BackwardOps::requireNoCache(s);
  const int T = s.T, H = s.nHead, D = s.headDim, C = H * D;
  const int kvDim = s.kvDim(), width = s.qkvDim(), group = H / s.kvHeads();
  const int kOffset = C, vOffset = C + kvDim;  // Q | K | V within a row
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> probs(T), dprobs(T);
  std::vector<double> dseq((size_t)T * width);  // (T, qkvDim): gradient w.r.t. this sequence's Q | K | V as the forward used them
  const std::vector<double> ropeFrequencies = s.ropeBase > 0 ? ropePairFrequencies(s) : std::vector<double>();  // (D/2)
  for (int b = 0; b < batch; ++b) {
    const float* x = qkv + (size_t)b * T * width;  // (T, qkvDim)
    const float* dy = dout + (size_t)b * T * C;    // (T, C)
    std::fill(dseq.begin(), dseq.end(), 0.0);
    for (int h = 0; h < H; ++h) {
      const int kvHead = h / group;
      for (int t = 0; t < T; ++t) {  // query position p = t (pos0 = 0)
        const float* q = x + (size_t)t * width + h * D;
        const float* dyRow = dy + (size_t)t * C + h * D;
        // Recompute the scores s_j = scale q . k_j - slope |t - j| (-inf where masked) and their softmax p_j.
        for (int j = 0; j < T; ++j) {
          probs[j] = -std::numeric_limits<double>::infinity();
          if (!s.visible(t, j)) continue;
          const float* k = x + (size_t)j * width + kOffset + kvHead * D;
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += (double)q[d] * k[d];
          probs[j] = dot * scale - (s.alibiSlopes ? s.alibiSlopes[h] * std::abs(t - j) : 0.0);
        }
        softmax(probs, probs);
        // out_t = sum_j p_j v_j: dv_j += p_j dy; dp_j = dy . v_j
        for (int j = 0; j < T; ++j) {
          dprobs[j] = 0;
          if (!s.visible(t, j)) continue;
          const float* v = x + (size_t)j * width + vOffset + kvHead * D;
          for (int d = 0; d < D; ++d) {
            dprobs[j] += (double)dyRow[d] * v[d];
            dseq[(size_t)j * width + vOffset + kvHead * D + d] += probs[j] * dyRow[d];
          }
        }
        // softmax: ds_j = p_j (dp_j - sum_i p_i dp_i); the ALiBi bias is a constant.
        double weighted = 0;
        for (int j = 0; j < T; ++j) weighted += probs[j] * dprobs[j];
        // s_j = scale q . k_j: dq += ds_j scale k_j; dk_j += ds_j scale q
        for (int j = 0; j < T; ++j) {
          if (!s.visible(t, j)) continue;
          const double dscore = probs[j] * (dprobs[j] - weighted) * scale;
          const float* k = x + (size_t)j * width + kOffset + kvHead * D;
          for (int d = 0; d < D; ++d) {
            dseq[(size_t)t * width + h * D + d] += dscore * k[d];
            dseq[(size_t)j * width + kOffset + kvHead * D + d] += dscore * q[d];
          }
        }
      }
    }
    // RoPE turned pair (2i, 2i+1) of every q and k head at position t by theta = t f_i, f_i =
    // base^(-2i/D) or Llama 3's scaled frequency (positional.h). A rotation is orthogonal, so the
    // gradient of the unrotated pair is the gradient of the rotated one turned back by -theta:
    // (g0 cos + g1 sin, -g0 sin + g1 cos).
    if (s.ropeBase > 0)
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < D / 2; ++i) {
          const double angle = t * ropeFrequencies[i], cosine = std::cos(angle), sine = std::sin(angle);
          for (int head = 0; head < H + s.kvHeads(); ++head) {  // H query heads, then the K heads
            double* pair = dseq.data() + (size_t)t * width + (size_t)head * D + 2 * i;
            const double g0 = pair[0], g1 = pair[1];
            pair[0] = g0 * cosine + g1 * sine;
            pair[1] = -g0 * sine + g1 * cosine;
          }
        }
    float* dx = dqkv + (size_t)b * T * width;
    for (size_t i = 0; i < dseq.size(); ++i) dx[i] += static_cast<float>(dseq[i]);
  }
}

double crossEntropyBackward(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale) {
  double lossSum = 0;
  for (int r = 0; r < rows; ++r) {
    const float* row = logits + (size_t)r * V;  // may be drow itself: every read of row[v] comes before drow[v] is written
    float* drow = dlogits + (size_t)r * V;
    if (scored && !scored[r]) {
      for (int v = 0; v < V; ++v) drow[v] = 0;
      continue;
    }
    const double logSum = logSumExp(std::span<const float>(row, V));
    lossSum += logSum - row[targets[r]];
    // d(-log p_target)/dlogit_v = p_v - [v == target]
    for (int v = 0; v < V; ++v) drow[v] = static_cast<float>(scale * (std::exp(row[v] - logSum) - (v == targets[r] ? 1.0 : 0.0)));
  }
  return lossSum;
}

double crossEntropyForwardBackward(float* dlogits, const float* logits, const int* targets, const unsigned char* scored, int T, int V) {
  int count = 0;
  for (int t = 0; t < T; ++t) count += (!scored || scored[t]) ? 1 : 0;
  if (count == 0) {
    std::fill(dlogits, dlogits + (size_t)T * V, 0.0f);
    return 0;
  }
  return crossEntropyBackward(dlogits, logits, targets, scored, T, V, 1.0f / count) / count;
}

void crossAttentionBackward(float* dq, float* dkv, const float* dout, const float* q, const float* kv, int T, int S, int H, int Hkv, int D,
                            int batch) {
  const int C = H * D, KV = Hkv * D, group = H / Hkv;
  const double scale = 1.0 / std::sqrt((double)D);
  std::vector<double> p(S), dp(S);
  for (int b = 0; b < batch; ++b) {
    const float* qb = q + (size_t)b * T * C;
    const float* doutb = dout + (size_t)b * T * C;
    const float* kvb = kv + (size_t)b * S * 2 * KV;
    float* dqb = dq + (size_t)b * T * C;
    float* dkvb = dkv + (size_t)b * S * 2 * KV;
    for (int h = 0; h < H; ++h) {
      const int g = (h / group) * D;
      for (int t = 0; t < T; ++t) {
        const float* qi = qb + (size_t)t * C + h * D;
        const float* go = doutb + (size_t)t * C + h * D;
        ref::crossAttentionRow(p.data(), qi, kvb, S, Hkv, D, g);  // the forward's probabilities
        double weighted = 0;                                      // sum_j p_j dp_j
        for (int j = 0; j < S; ++j) {
          const float* vj = kvb + (size_t)j * 2 * KV + KV + g;
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += (double)go[d] * vj[d];
          dp[j] = dot;
          weighted += p[j] * dot;
        }
        for (int j = 0; j < S; ++j) {
          const double ds = p[j] * (dp[j] - weighted) * scale;  // gradient of the scaled score
          float* dkj = dkvb + (size_t)j * 2 * KV + g;
          float* dvj = dkj + KV;
          const float* kj = kvb + (size_t)j * 2 * KV + g;
          for (int d = 0; d < D; ++d) {
            dqb[(size_t)t * C + h * D + d] += static_cast<float>(ds * kj[d]);
            dkj[d] += static_cast<float>(ds * qi[d]);
            dvj[d] += static_cast<float>(p[j] * go[d]);
          }
        }
      }
    }
  }
}

}  // namespace tscope::ref

// The backward of one head's efficient-attention variants (so a model trains with them), in double:
// exact, flash and window by the masked softmax rows recomputed one at a time; Linformer and the
// kernel variants (linear, Performer) through their running sums. Trick: a causal running sum
// state_i = sum_{j<=i} x_j gives token j the gradient sum_{i>=j} dstate_i = total - sum_{i<j} dstate_i,
// so one forward sweep (the forward's own state, exactly) gives every gradient in memory linear in n.
#include <algorithm>
#include <cmath>

#include "model/core/error.h"
#include "model/nn/backend.h"
#include "model/nn/efficient_attention.h"

namespace tscope {
namespace {

// Gradients in double, (n, d) each, added into the caller's float arrays at the end.
struct HeadGradients {
  std::vector<double> dq, dk, dv;
  explicit HeadGradients(const HeadQkv& head) : dq(static_cast<size_t>(head.n) * head.d, 0.0), dk(dq.size(), 0.0), dv(dq.size(), 0.0) {}
  void addInto(float* q, float* k, float* v) const {
    for (size_t x = 0; x < dq.size(); ++x) {
      q[x] += static_cast<float>(dq[x]);
      k[x] += static_cast<float>(dk[x]);
      v[x] += static_cast<float>(dv[x]);
    }
  }
};

// The sweep of a running-sum attention: non-causal, every token is added before the first query;
// causal, token i just before query i. suffix(j, sign) adds sign * (the gradient sums G so far) to
// token j's gradients; query(i) adds query i's dstate_i to G. Token j's gradient is then
// G_total - G_{<j} (causal) or G_total.
template <class AddToken, class Query, class Suffix>
void runningSumSweep(int n, bool causal, AddToken&& addToken, Query&& query, Suffix&& suffix) {
  if (!causal)
    for (int j = 0; j < n; ++j) addToken(j);
  for (int i = 0; i < n; ++i) {
    if (causal) {
      addToken(i);
      suffix(i, -1.0);
    }
    query(i);
  }
  for (int j = 0; j < n; ++j) suffix(j, 1.0);
}

// Softmax backward on one row: ds_r = p_r (dp_r - sum_r' p_r' dp_r'), in place over dp (count).
void softmaxBackward(const double* p, double* dp, int count) {
  double weighted = 0;
  for (int r = 0; r < count; ++r) weighted += p[r] * dp[r];
  for (int r = 0; r < count; ++r) dp[r] = p[r] * (dp[r] - weighted);
}

double dot(const float* a, const double* b, int d) {
  double sum = 0;
  for (int c = 0; c < d; ++c) sum += a[c] * b[c];
  return sum;
}

// Exact softmax attention over a mask: per query row, p recomputed; dv_j += p_j dout_i,
// ds = softmax backward of dp_j = dout_i . v_j, dq_i += scale ds_j k_j, dk_j += scale ds_j q_i.
void maskedBackward(const HeadQkv& head, const std::function<bool(int, int)>& visible, const float* dout, HeadGradients& g) {
  const int n = head.n, d = head.d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> p(static_cast<size_t>(n)), ds(static_cast<size_t>(n)), dy(static_cast<size_t>(d));  // (n) (n) (d)
  for (int i = 0; i < n; ++i) {
    maskedRowProbabilities(head, i, visible, p.data());
    for (int c = 0; c < d; ++c) dy[c] = dout[static_cast<size_t>(i) * d + c];
    for (int j = 0; j < n; ++j) {
      ds[j] = 0;
      if (p[j] == 0) continue;
      const size_t row = static_cast<size_t>(j) * d;
      ds[j] = dot(head.v + row, dy.data(), d);
      for (int c = 0; c < d; ++c) g.dv[row + c] += p[j] * dy[c];
    }
    softmaxBackward(p.data(), ds.data(), n);
    const float* qi = head.q + static_cast<size_t>(i) * d;
    for (int j = 0; j < n; ++j) {
      if (ds[j] == 0) continue;
      const size_t row = static_cast<size_t>(j) * d;
      for (int c = 0; c < d; ++c) {
        g.dq[static_cast<size_t>(i) * d + c] += scale * ds[j] * head.k[row + c];
        g.dk[row + c] += scale * ds[j] * qi[c];
      }
    }
  }
}

// Linformer: s_r = q_i . K'_r / sqrt d, p = softmax over the unmasked rows, out_i = sum_r p_r V'_r,
// K'_r = keys_r / keyDivisor(r) (LinformerSums). dq_i += scale sum_r ds_r K'_r; the running sums
// get dkeys_r = scale ds_r q_i / keyDivisor(r), dvalues_r = p_r dout_i / valueDivisor(r), and
// token j takes dk_j = sum_r E_rj Gkeys_r, dv_j = sum_r F_rj Gvalues_r over its suffix.
void linformerBackward(const HeadQkv& head, const AttentionVariantParams& params, const float* dout, HeadGradients& g) {
  const int n = head.n, d = head.d;
  const LinformerProjections proj = linformerProjections(params, n);
  const int k = proj.k;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  LinformerSums sums(head, proj);
  std::vector<double> gKeys(static_cast<size_t>(k) * d, 0.0), gValues(gKeys.size(), 0.0);  // (k, d) each
  std::vector<double> p(static_cast<size_t>(k)), ds(static_cast<size_t>(k));               // (k) each
  auto query = [&](int i) {
    sums.probabilities(i, p.data());
    const float* dy = dout + static_cast<size_t>(i) * d;
    for (int r = 0; r < k; ++r)  // dp_r = dout_i . V'_r (masked rows: 0)
      ds[r] = p[r] == 0 ? 0.0 : dot(dy, sums.values.data() + static_cast<size_t>(r) * d, d) / sums.valueDivisor(r);
    softmaxBackward(p.data(), ds.data(), k);
    const float* qi = head.q + static_cast<size_t>(i) * d;
    for (int r = 0; r < k; ++r) {
      if (p[r] == 0) continue;
      const double keyScale = scale / sums.keyDivisor(r), valueScale = p[r] / sums.valueDivisor(r);
      for (int c = 0; c < d; ++c) {
        const size_t at = static_cast<size_t>(r) * d + c;
        g.dq[static_cast<size_t>(i) * d + c] += ds[r] * keyScale * sums.keys[at];
        gKeys[at] += ds[r] * keyScale * qi[c];
        gValues[at] += valueScale * dy[c];
      }
    }
  };
  auto suffix = [&](int j, double sign) {
    for (int r = 0; r < k; ++r) {
      const size_t at = static_cast<size_t>(r) * proj.columns + j;
      const double e = sign * proj.E[at], f = sign * proj.F[at];
      for (int c = 0; c < d; ++c) {
        g.dk[static_cast<size_t>(j) * d + c] += e * gKeys[static_cast<size_t>(r) * d + c];
        g.dv[static_cast<size_t>(j) * d + c] += f * gValues[static_cast<size_t>(r) * d + c];
      }
    }
  };
  runningSumSweep(
      n, head.causal, [&](int j) { sums.add(j); }, query, suffix);
}

// Kernel attention on log features (kernelReference's RNN form, the same stabilisation: phi(q_i)
// over its row max, phi(k_j) over the global key max, both cancelling in the ratio):
// out_i = phi_i^T S / phi_i . z. Writes dlogQ, dlogK (n, f) = dL/dlog phi = dL/dphi * phi (the
// shifts cancel in it) and adds dv. Per query: dnum = dout_i / den, dden = -dout_i . out_i / den,
// dphi_i = S dnum + z dden, dS += phi_i dnum^T, dz += phi_i dden; token j: dphi(k_j) = GS v_j + Gz,
// dv_j = GS^T phi(k_j) over its suffix.
void kernelBackward(const HeadQkv& head, int f, const std::vector<double>& logQ, const std::vector<double>& logK, const float* dout,
                    std::vector<double>& dlogQ, std::vector<double>& dlogK, HeadGradients& g) {
  const int n = head.n, d = head.d;
  const double keyMax = *std::max_element(logK.begin(), logK.end());
  dlogQ.assign(logQ.size(), 0.0);
  dlogK.assign(logK.size(), 0.0);
  std::vector<double> S(static_cast<size_t>(f) * d, 0.0), z(static_cast<size_t>(f), 0.0), GS(S.size(), 0.0), Gz(z.size(), 0.0);
  std::vector<double> phi(static_cast<size_t>(f)), out(static_cast<size_t>(d)), dnum(static_cast<size_t>(d));  // (f) (d) (d)
  auto keyFeatures = [&](int j) {
    for (int r = 0; r < f; ++r) phi[r] = std::exp(logK[static_cast<size_t>(j) * f + r] - keyMax);
  };
  auto addToken = [&](int j) {
    keyFeatures(j);
    for (int r = 0; r < f; ++r) {
      z[r] += phi[r];
      for (int c = 0; c < d; ++c) S[static_cast<size_t>(r) * d + c] += phi[r] * head.v[static_cast<size_t>(j) * d + c];
    }
  };
  auto query = [&](int i) {
    const double* lq = logQ.data() + static_cast<size_t>(i) * f;
    const double qMax = *std::max_element(lq, lq + f);
    double den = 0;
    std::fill(out.begin(), out.end(), 0.0);
    for (int r = 0; r < f; ++r) {
      phi[r] = std::exp(lq[r] - qMax);
      den += phi[r] * z[r];
      for (int c = 0; c < d; ++c) out[c] += phi[r] * S[static_cast<size_t>(r) * d + c];
    }
    const float* dy = dout + static_cast<size_t>(i) * d;
    double dyOut = 0;
    for (int c = 0; c < d; ++c) {
      out[c] /= den;
      dnum[c] = dy[c] / den;
      dyOut += dy[c] * out[c];
    }
    const double dden = -dyOut / den;
    for (int r = 0; r < f; ++r) {
      double dphi = z[r] * dden;
      for (int c = 0; c < d; ++c) {
        dphi += S[static_cast<size_t>(r) * d + c] * dnum[c];
        GS[static_cast<size_t>(r) * d + c] += phi[r] * dnum[c];
      }
      Gz[r] += phi[r] * dden;
      dlogQ[static_cast<size_t>(i) * f + r] = dphi * phi[r];
    }
  };
  auto suffix = [&](int j, double sign) {
    keyFeatures(j);
    const float* vj = head.v + static_cast<size_t>(j) * d;
    for (int r = 0; r < f; ++r) {
      const double* gs = GS.data() + static_cast<size_t>(r) * d;
      dlogK[static_cast<size_t>(j) * f + r] += sign * (dot(vj, gs, d) + Gz[r]) * phi[r];
      for (int c = 0; c < d; ++c) g.dv[static_cast<size_t>(j) * d + c] += sign * gs[c] * phi[r];
    }
  };
  runningSumSweep(n, head.causal, addToken, query, suffix);
}

// Linear attention, log phi_c(x) = log(elu(x_c) + 1): d log phi_c / dx_c = 1 / (x_c + 1) for x_c > 0, else 1.
void linearChain(const float* x, const std::vector<double>& dlog, std::vector<double>& dx) {
  for (size_t at = 0; at < dx.size(); ++at) dx[at] += dlog[at] * (x[at] > 0 ? 1.0 / (x[at] + 1.0) : 1.0);
}

// Performer, log phi_r(x) = s w_r . x - s^2 |x|^2 / 2 - log(m) / 2 with s = d^(-1/4):
// d log phi_r / dx = s w_r - s^2 x, so dx = s sum_r dlog_r w_r - s^2 x sum_r dlog_r.
void performerChain(const HeadQkv& head, const AttentionVariantParams& params, const float* x, const std::vector<double>& dlog,
                    std::vector<double>& dx) {
  const int d = head.d, m = params.features;
  const std::vector<float> directions = performerDirections(params, d);  // (m, d)
  const double shrink = 1.0 / std::pow(static_cast<double>(d), 0.25);
  for (int t = 0; t < head.n; ++t) {
    const double* dl = dlog.data() + static_cast<size_t>(t) * m;
    double total = 0;
    for (int r = 0; r < m; ++r) {
      total += dl[r];
      for (int c = 0; c < d; ++c) dx[static_cast<size_t>(t) * d + c] += shrink * dl[r] * directions[static_cast<size_t>(r) * d + c];
    }
    for (int c = 0; c < d; ++c) dx[static_cast<size_t>(t) * d + c] -= shrink * shrink * x[static_cast<size_t>(t) * d + c] * total;
  }
}

void kernelVariantBackward(const HeadQkv& head, const AttentionVariantParams& params, const float* dout, HeadGradients& g) {
  std::vector<double> logQ, logK, dlogQ, dlogK;
  const int f = kernelLogFeatures(head, params, logQ, logK);
  kernelBackward(head, f, logQ, logK, dout, dlogQ, dlogK, g);
  if (params.variant == AttentionVariant::Linear) {
    linearChain(head.q, dlogQ, g.dq);
    linearChain(head.k, dlogK, g.dk);
  } else {
    performerChain(head, params, head.q, dlogQ, g.dq);
    performerChain(head, params, head.k, dlogK, g.dk);
  }
}

}  // namespace

std::string attentionVariantBackwardProblem(const AttentionVariantParams& params) {
  if (params.variant == AttentionVariant::Lsh)
    return "attention_variant lsh has no backward: train with exact, flash, window, linformer, linear or performer";
  if (params.variant == AttentionVariant::Linformer && params.linformerE != nullptr)
    return "linformer with learned E and F has no backward (it would not train E and F): train with the pool or gaussian projection";
  return "";
}

void attentionVariantBackward(const HeadQkv& head, const AttentionVariantParams& params, const float* dout, float* dq, float* dk, float* dv) {
  const std::string problem = attentionVariantBackwardProblem(params);
  if (!problem.empty()) throw Error(problem);
  checkVariantInputs(head, params);
  HeadGradients g(head);
  switch (params.variant) {
    case AttentionVariant::Exact:
    case AttentionVariant::Flash:
    case AttentionVariant::Window: {
      AttentionShape shape;  // the backend's visibility rule: causal, and the window's (as the forward)
      shape.causal = head.causal;
      shape.window = params.variant == AttentionVariant::Window ? params.window : 0;
      maskedBackward(
          head, [shape](int i, int j) { return shape.visible(i, j); }, dout, g);
      break;
    }
    case AttentionVariant::Linformer: linformerBackward(head, params, dout, g); break;
    case AttentionVariant::Linear:
    case AttentionVariant::Performer: kernelVariantBackward(head, params, dout, g); break;
    case AttentionVariant::Lsh: break;  // rejected above
  }
  g.addInto(dq, dk, dv);
}

}  // namespace tscope

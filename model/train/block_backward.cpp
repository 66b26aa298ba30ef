// The block backward (see block_backward.h), sublayer by sublayer in reverse forward order.
// MoE: the gradient reaches the router through the gates (softmax over the kept top-k logits, or
// the full softmax for expert choice, or the unrenormalised top-k probabilities of
// moe_normalize_top_k false) and through the load-balancing loss alpha * E * sum_i f_i * P_i (f_i
// held constant, as in Switch Transformer). Dropped assignments contribute nothing and get no
// gradient. The routing's gradients are computed on the host (the routing lives there): the
// output gradient and the expert outputs are read through host views, the results uploaded.
#include "model/train/block_backward.h"

#include <utility>

namespace tscope {

void zeroVector(Backend& backend, Floats& v, size_t n) {
  v.resize(backend, n);
  if (n) backend.zero(v.data(), n);
}

namespace {

// dlog (T, E) += the gradient of the gate logits of one sequence whose gates are a softmax over
// each token's k chosen logits (assignments in (token, rank) order); dgates per assignment.
void topKGatesBackward(const MoeRouting& routing, const std::vector<float>& dgates, float* dlog, int T, int E) {
  const int k = routing.topK;
  for (int t = 0; t < T; ++t) {
    double weighted = 0;
    for (int r = 0; r < k; ++r) {
      const size_t i = (size_t)t * k + r;
      weighted += (double)routing.assignments[i].gate * dgates[i];
    }
    for (int r = 0; r < k; ++r) {
      const size_t i = (size_t)t * k + r;
      const MoeAssignment& as = routing.assignments[i];
      dlog[(size_t)t * E + as.expert] += static_cast<float>(as.gate * (dgates[i] - weighted));
    }
  }
}

// The same where each gate is the full softmax probability S[t, e] (expert choice; token choice
// unrenormalised): dS accumulated, then back through the softmax.
void softmaxGatesBackward(const MoeRouting& routing, const std::vector<float>& dgates, float* dlog, int T, int E) {
  const float* probs = routing.routerProbs.data();
  std::vector<double> dprob((size_t)T * E, 0.0);
  for (size_t i = 0; i < routing.assignments.size(); ++i)
    dprob[(size_t)routing.assignments[i].token * E + routing.assignments[i].expert] += dgates[i];
  for (int t = 0; t < T; ++t) {
    double weighted = 0;
    for (int e = 0; e < E; ++e) weighted += probs[(size_t)t * E + e] * dprob[(size_t)t * E + e];
    for (int e = 0; e < E; ++e) dlog[(size_t)t * E + e] += static_cast<float>(probs[(size_t)t * E + e] * (dprob[(size_t)t * E + e] - weighted));
  }
}

// dlog (T, E) += the gradient of one sequence's share of the load-balancing loss, aux / B:
// d/dP_i = alpha E f_i / B, P_i = mean_t probs[t, i].
void auxLossBackward(const MoeRouting& routing, double alpha, float* dlog, int B, int T, int E) {
  const float* probs = routing.routerProbs.data();
  std::vector<double> dp(E);  // d aux / d probs[t, e], the same for every token t
  for (int e = 0; e < E; ++e) dp[e] = alpha * E * routing.fraction[e] / ((double)T * B);
  for (int t = 0; t < T; ++t) {
    const float* p = probs + (size_t)t * E;
    double weighted = 0;
    for (int e = 0; e < E; ++e) weighted += p[e] * dp[e];
    for (int e = 0; e < E; ++e) dlog[(size_t)t * E + e] += static_cast<float>(p[e] * (dp[e] - weighted));
  }
}

}  // namespace

BlockBackward::BlockBackward(const ModelConfig& config, const BlockForward& stack, Backend& forward, BackwardOps& backward)
    : config_(config), stack_(&stack), fw_(&forward), bw_(&backward) {}

void BlockBackward::norm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows) {
  const float eps = static_cast<float>(config_.layer_norm_epsilon);
  if (!config_.hasNorm()) fw_->add(din, dout, (size_t)rows * config_.n_embd);  // norm none: the identity
  else if (config_.norm == NormKind::RmsNorm) bw_->rmsNorm(din, dweight, dout, in, weight, rows, config_.n_embd, eps);
  else bw_->layerNorm(din, dweight, dbias, dout, in, weight, rows, config_.n_embd, eps);
}

void BlockBackward::layer(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, int B, const AttentionShape& shape,
                          const EncoderLink& encoder) {
  const int T = shape.T, R = B * T;
  const bool cross = w.hasCross();
  if (config_.hasFeedForward()) {
    const Floats& x = cross ? la.midX : la.mid;  // the feed-forward's residual input
    residualSublayer(w.ln2Weight, gw.ln2Weight, gw.ln2Bias, x.data(), la.normed2.data(), la.sum2.data(), R,
                     [&](const float* in, const float* dout, float* din) {
                       if (config_.isMoe()) mixtureOfExperts(w, gw, la.moe, in, dout, din, B, T);
                       else feedForward(w.mlp, gw.mlp, in, R, la.hidden, la.gate, la.act, dout, din);
                     });
  }
  if (cross)
    residualSublayer(w.lnxWeight, gw.lnxWeight, gw.lnxBias, la.mid.data(), la.normedX.data(), la.sumX.data(), R,
                     [&](const float* in, const float* dout, float* din) { crossAttention(w, gw, la, in, dout, din, B, T, encoder); });
  residualSublayer(w.ln1Weight, gw.ln1Weight, gw.ln1Bias, la.in.data(), la.normed1.data(), la.sum1.data(), R,
                   [&](const float* in, const float* dout, float* din) { attention(w, gw, la, in, dout, din, B, shape); });
}

template <typename Sublayer>
void BlockBackward::residualSublayer(const float* weight, float* dweight, float* dbias, const float* x, const float* normed, const float* sum, int R,
                                     Sublayer&& sublayer) {
  const size_t RC = (size_t)R * config_.n_embd;
  const float* dout = dx_.data();  // the gradient of the sublayer's output
  if (!config_.pre_norm) {
    zeroVector(*fw_, dsum_, RC);
    norm(dsum_.data(), dweight, dbias, dx_.data(), sum, weight, R);
    dout = dsum_.data();
  }
  if (config_.residual) dmid_.copyFrom(*fw_, dout, RC);  // the residual path
  else zeroVector(*fw_, dmid_, RC);                      // none: the input reaches the output through the sublayer only
  if (config_.pre_norm) {
    zeroVector(*fw_, dnormed_, RC);
    sublayer(normed, dout, dnormed_.data());
    norm(dmid_.data(), dweight, dbias, dnormed_.data(), x, weight, R);
  } else {
    sublayer(x, dout, dmid_.data());
  }
  std::swap(dx_, dmid_);
}

void BlockBackward::feedForward(const FeedForwardWeights& w, const FeedForwardWeights& gw, const float* in, int n, const Floats& hidden,
                                const Floats& gate, const Floats& act, const float* dout, float* din, int width) {
  const int C = config_.n_embd, F = width > 0 ? width : config_.dFF();
  const size_t nF = (size_t)n * F;
  zeroVector(*fw_, dact_, nF);
  bw_->matmul(dact_.data(), gw.projWeight, gw.projBias, dout, act.data(), w.projWeight, n, F, C);
  zeroVector(*fw_, dhidden_, nF);
  if (config_.activation == Activation::SwiGlu) {
    zeroVector(*fw_, dgate_, nF);
    bw_->swiglu(dgate_.data(), dhidden_.data(), dact_.data(), gate.data(), hidden.data(), nF);
    bw_->matmul(din, gw.gateWeight, gw.gateBias, dgate_.data(), in, w.gateWeight, n, C, F);
  } else {
    bw_->activation(dhidden_.data(), dact_.data(), hidden.data(), nF, config_.activation);
  }
  bw_->matmul(din, gw.fcWeight, gw.fcBias, dhidden_.data(), in, w.fcWeight, n, C, F);
}

// The routed experts and the shared expert are parallel branches of the forward: the experts'
// gradient is summed into din first, then the shared expert's; the router comes last, as it needs
// every gate's gradient.
void BlockBackward::mixtureOfExperts(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, const float* dout,
                                     float* din, int B, int T) {
  const float* doutHost = hostView(*fw_, dout, (size_t)B * T * config_.n_embd, doutCopy_);
  experts(w, gw, moe, doutHost, din);
  if (config_.hasSharedExpert()) sharedExpert(w, gw, moe, in, doutHost, din, B * T);
  router(w, gw, moe, in, din, B, T);
}

void BlockBackward::experts(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* doutHost, float* din) {
  const int C = config_.n_embd;
  dgates_.resize(moe.routing.size());
  for (size_t b = 0; b < moe.routing.size(); ++b) dgates_[b].assign(moe.routing[b].assignments.size(), 0.0f);
  for (int e = 0; e < config_.n_experts; ++e) {
    const ExpertActivations& ex = moe.experts[e];
    const int n = static_cast<int>(ex.rows.size());
    if (n == 0) continue;
    dExpertOutHost_.resize((size_t)n * C);
    const float* outHost = hostView(*fw_, ex.out.data(), (size_t)n * C, expertOutCopy_);
    // out row += gate * expert output: gate * dout into the expert, dot(dout, expert output) into the gate.
    for (int i = 0; i < n; ++i) {
      const float* drow = doutHost + (size_t)ex.rows[i] * C;
      const float* orow = outHost + (size_t)i * C;
      float* dorow = dExpertOutHost_.data() + (size_t)i * C;
      double dot = 0;
      for (int k = 0; k < C; ++k) {
        dorow[k] = ex.gates[i] * drow[k];
        dot += (double)drow[k] * orow[k];
      }
      dgates_[ex.sequence[i]][ex.assignment[i]] = static_cast<float>(dot);
    }
    dExpertOut_.resize(*fw_, (size_t)n * C);
    fw_->upload(dExpertOut_.data(), dExpertOutHost_.data(), (size_t)n * C);
    zeroVector(*fw_, dExpertIn_, (size_t)n * C);
    feedForward(w.experts[e], gw.experts[e], ex.in.data(), n, ex.hidden, ex.gate, ex.act, dExpertOut_.data(), dExpertIn_.data());
    const std::vector<float> ones(n, 1.0f);
    fw_->scatterAddRows(din, dExpertIn_.data(), ex.rows.data(), ones.data(), n, C);
  }
}

// dy = s * dout into the expert, ds = dout . y (on the host, where the gates are).
void BlockBackward::sharedExpert(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, const float* doutHost,
                                 float* din, int R) {
  const int C = config_.n_embd;
  const size_t RC = (size_t)R * C;
  const ExpertActivations& shared = moe.shared;
  const float* outHost = hostView(*fw_, shared.out.data(), RC, expertOutCopy_);
  dExpertOutHost_.resize(RC);
  std::vector<float> dlogit(R);
  for (int r = 0; r < R; ++r) {
    const float s = moe.sharedGates[r];
    const float* drow = doutHost + (size_t)r * C;
    const float* orow = outHost + (size_t)r * C;
    float* dorow = dExpertOutHost_.data() + (size_t)r * C;
    double dot = 0;
    for (int k = 0; k < C; ++k) {
      dorow[k] = s * drow[k];
      dot += (double)drow[k] * orow[k];
    }
    dlogit[r] = static_cast<float>(dot * s * (1.0 - s));
  }
  dExpertOut_.resize(*fw_, RC);
  fw_->upload(dExpertOut_.data(), dExpertOutHost_.data(), RC);
  feedForward(w.sharedExpert, gw.sharedExpert, in, R, shared.hidden, shared.gate, shared.act, dExpertOut_.data(), din,
              config_.moe_shared_expert_d_ff);
  dSharedGateLogit_.resize(*fw_, (size_t)R);
  fw_->upload(dSharedGateLogit_.data(), dlogit.data(), (size_t)R);
  bw_->matmul(din, gw.sharedExpertGate, nullptr, dSharedGateLogit_.data(), in, w.sharedExpertGate, R, config_.n_embd, 1);
}

void BlockBackward::router(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, float* din, int B, int T) {
  const int E = config_.n_experts, R = B * T;
  const MoeRoutingParams& routing = stack_->moeRouting();
  drouterHost_.assign((size_t)R * E, 0.0f);
  for (int b = 0; b < B; ++b) {
    float* dlog = drouterHost_.data() + (size_t)b * T * E;
    if (!routing.expertChoice && routing.normalizeTopK) topKGatesBackward(moe.routing[b], dgates_[b], dlog, T, E);
    else softmaxGatesBackward(moe.routing[b], dgates_[b], dlog, T, E);
    if (routing.auxLossAlpha > 0) auxLossBackward(moe.routing[b], routing.auxLossAlpha, dlog, B, T, E);
  }
  drouter_.resize(*fw_, (size_t)R * E);
  fw_->upload(drouter_.data(), drouterHost_.data(), (size_t)R * E);
  bw_->matmul(din, gw.routerWeight, nullptr, drouter_.data(), in, w.routerWeight, R, config_.n_embd, E);
}

// W_O, the attention of each sequence's queries over its S source rows (into the queries and into
// the keys | values), then the key/value projection (into the encoder's output) and the query's.
void BlockBackward::crossAttention(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, const float* in, const float* dout,
                                   float* din, int B, int T, const EncoderLink& encoder) {
  const int C = config_.n_embd, A = config_.attnDim(), H = config_.n_head, Hkv = config_.kvHeads(), D = config_.headDim();
  const int R = B * T, RS = B * encoder.S, KV2 = 2 * config_.kvDim();
  zeroVector(*fw_, dattn_, (size_t)R * A);
  bw_->matmul(dattn_.data(), gw.crossProjWeight, gw.crossProjBias, dout, la.crossAttn.data(), w.crossProjWeight, R, A, C);
  zeroVector(*fw_, dCrossQ_, (size_t)R * A);
  zeroVector(*fw_, dCrossKv_, (size_t)RS * KV2);
  bw_->crossAttention(dCrossQ_.data(), dCrossKv_.data(), dattn_.data(), la.crossQ.data(), la.crossKv.data(), T, encoder.S, H, Hkv, D, B);
  bw_->matmul(encoder.grad, gw.crossKvWeight, gw.crossKvBias, dCrossKv_.data(), encoder.out, w.crossKvWeight, RS, C, KV2);
  bw_->matmul(din, gw.crossQWeight, gw.crossQBias, dCrossQ_.data(), in, w.crossQWeight, R, C, A);
}

void BlockBackward::attention(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, const float* in, const float* dout,
                              float* din, int B, const AttentionShape& shape) {
  const int C = config_.n_embd, A = config_.attnDim(), QKV = config_.qkvDim(), R = B * shape.T;
  zeroVector(*fw_, dattn_, (size_t)R * A);
  bw_->matmul(dattn_.data(), gw.attnProjWeight, gw.attnProjBias, dout, la.attn.data(), w.attnProjWeight, R, A, C);
  zeroVector(*fw_, dqkv_, (size_t)R * QKV);
  // Flash's gradient is exact attention's: the backend computes it; the other variants have their own.
  if (const AttentionVariantParams* variant = stack_->ownVariant(); variant && variant->variant != AttentionVariant::Flash)
    variantAttention(dqkv_.data(), dattn_.data(), la.qkv.data(), shape, B, *variant);
  else bw_->attention(dqkv_.data(), dattn_.data(), la.qkv.data(), shape, B);
  const float* dprojection = config_.qk_norm ? qkNorm(w, gw, la.qkvRaw.data(), R) : dqkv_.data();  // of the qkv projection's output
  bw_->matmul(din, gw.qkvWeight, gw.qkvBias, dprojection, in, w.qkvWeight, R, C, QKV);
}

// Through each head's RMSNorm of q and k (D-wide rows, contiguous within a row of qkv, as in the
// forward); V's columns pass through unchanged.
const float* BlockBackward::qkNorm(const LayerWeights& w, const LayerWeights& gw, const float* qkvRaw, int R) {
  const int H = config_.n_head, Hkv = config_.kvHeads(), D = config_.headDim(), A = config_.attnDim(), KV = config_.kvDim();
  const int QKV = config_.qkvDim();
  const float eps = static_cast<float>(config_.layer_norm_epsilon);
  dqkvRaw_.copyFrom(*fw_, dqkv_);
  for (int r = 0; r < R; ++r) {
    const size_t at = (size_t)r * QKV;
    float* drow = dqkvRaw_.data() + at;
    const float* dnormedRow = dqkv_.data() + at;
    const float* rawRow = qkvRaw + at;
    fw_->zero(drow, (size_t)A + KV);
    bw_->rmsNorm(drow, gw.qNormWeight, dnormedRow, rawRow, w.qNormWeight, H, D, eps);
    bw_->rmsNorm(drow + A, gw.kNormWeight, dnormedRow + A, rawRow + A, w.kNormWeight, Hkv, D, eps);
  }
  return dqkvRaw_.data();
}

}  // namespace tscope

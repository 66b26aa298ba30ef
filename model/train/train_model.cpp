// The training pass (see train_model.h). The forward mirrors Transformer::forward op for op (so a
// trained model behaves the same at inference) but runs B sequences of T tokens as B*T rows and
// keeps each layer's activations; the backward walks the layers in reverse, calling BackwardOps.
// MoE: each sequence is routed on its own (as a prompt is at inference); the gradient reaches the
// router through the gates (softmax over the kept top-k logits, or the full softmax for expert
// choice) and through the load-balancing loss alpha * E * sum_i f_i * P_i (f_i held constant, as
// in Switch Transformer). Dropped assignments contribute nothing and get no gradient.
#include "model/train/train_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "model/core/error.h"
#include "model/nn/positional.h"

namespace tscope {

namespace {

// Activation storage in the forward backend's memory: a host array on the CPU backends (exactly
// the arrays, and so the bits, the CPU path always had) or a device Buffer that only grows.
class Floats {
 public:
  float* data() { return onHost_ ? host_.data() : device_.data(); }
  const float* data() const { return onHost_ ? host_.data() : device_.data(); }
  size_t size() const { return size_; }
  void resize(Backend& fw, size_t n) {
    onHost_ = fw.isHost();
    if (onHost_) host_.resize(n);
    else if (device_.size() < n) device_ = fw.allocate(n);
    size_ = n;
  }
  // this = other (resized to other's size)
  void copyFrom(Backend& fw, const Floats& other) { copyFrom(fw, other.data(), other.size()); }
  void copyFrom(Backend& fw, const float* src, size_t n) {
    resize(fw, n);
    if (n) fw.copy(data(), src, n);
  }

 private:
  bool onHost_ = true;
  AlignedFloats host_;
  Buffer device_;
  size_t size_ = 0;
};

void zeroVector(Backend& fw, Floats& v, size_t n) {
  v.resize(fw, n);
  if (n) fw.zero(v.data(), n);
}

// `n` floats of backend memory readable on the host: the memory itself on a host backend, else a
// download into `copy`.
const float* hostView(Backend& fw, const float* data, size_t n, std::vector<float>& copy) {
  if (fw.isHost()) return data;
  copy.resize(n);
  if (n) fw.download(copy.data(), data, n);
  return copy.data();
}

}  // namespace

// One expert's share of a MoE layer: the rows it computed and what the backward needs.
struct ExpertActivations {
  std::vector<int> rows;        // (n) global rows (b*T + t) of the kept assignments
  std::vector<float> gates;     // (n) (host: scatterAddRows takes host gates)
  std::vector<int> sequence;    // (n) which sequence's routing each row came from
  std::vector<int> assignment;  // (n) index into that routing's assignments (for the gate gradient)
  Floats in;        // (n, C) gathered inputs
  Floats hidden;    // (n, F) pre-activation (x Wfc + bfc)
  Floats gate;      // (n, F) SwiGLU gate pre-activation
  Floats act;       // (n, F) activated hidden (input of c_proj)
  Floats out;       // (n, C) expert output before the gate
};

struct LayerActivations {
  Floats in;       // (R, C) residual entering the layer
  Floats normed1;  // (R, C) ln_1(in) (pre-norm)
  Floats qkv;      // (R, QKV) as the attention left it (RoPE rotated)
  Floats attn;     // (R, C) concatenated heads
  Floats sum1;     // (R, C) post-norm: in + attention (input of ln_1)
  Floats mid;      // (R, C) residual after the attention sublayer
  Floats normed2;  // (R, C) ln_2(mid) (pre-norm)
  Floats hidden;   // (R, F) dense: pre-activation
  Floats gate;     // (R, F) dense SwiGLU gate
  Floats act;      // (R, F) dense: activated
  Floats sum2;     // (R, C) post-norm: mid + feed-forward (input of ln_2)
  // MoE
  Floats routerLogits;          // (R, E)
  std::vector<float> routerLogitsHost;  // (R, E) the same on the host, for the routing (device backends)
  std::vector<MoeRouting> routing;          // (B) one routing per sequence
  std::vector<ExpertActivations> experts;   // (E)
};

struct TrainModel::Activations {
  std::vector<LayerActivations> layers;
  Floats final;    // (R, C) residual after the last layer
  Floats normedF;  // (R, C) ln_f(final) (pre-norm)
  Floats logits;   // (R, V) then dlogits
  Floats kCache, vCache;  // (T, Hkv D) per-sequence scratch for the forward attention
  Floats ffOut;    // (R, C)
  // backward scratch
  Floats x;         // (R, C) the residual stream of the forward
  Floats dx, dmid, dnormed, dattn, dqkv, dhidden, dgate, dact, dsum, dff, drouter, dExpertOut, dExpertIn;
  std::vector<float> drouterHost, dExpertOutHost, dffCopy, expertOutCopy;  // host side of the MoE backward
};

TrainModel::TrainModel(const ModelConfig& config, Device& device)
    : config_(config), forward_(&device.forward()), backward_(&device.backward()), acts_(std::make_unique<Activations>()) {
  if (auto msg = validateConfig(config_); !msg.empty()) throw Error(msg);
  Backend& forward = *forward_;
  if (config_.position_encoding == PositionEncoding::Sinusoidal) {
    sinusoids_ = sinusoidalEncoding(config_.n_positions, config_.n_embd, config_.position_base);
    if (!forward.isHost()) {
      deviceSinusoids_ = forward.allocate(sinusoids_.size());
      forward.upload(deviceSinusoids_.data(), sinusoids_.data(), sinusoids_.size());
    }
  }
  if (config_.position_encoding == PositionEncoding::Alibi) alibiSlopes_ = alibiSlopes(config_.n_head);
  if (config_.isMoe()) moeParams_ = moeRoutingParams(config_);
}

TrainModel::~TrainModel() = default;

void TrainModel::checkBatch(const BatchView& batch) const {
  if (batch.batch < 1 || batch.steps < 1) throw Error("training batch must have at least one sequence of one token");
  if (batch.steps > config_.n_positions)
    throw Error("sequence length " + std::to_string(batch.steps) + " is longer than the context (n_positions " +
                std::to_string(config_.n_positions) + ")");
  if (!batch.inputs || !batch.targets) throw Error("training batch has no inputs or targets");
  const size_t n = (size_t)batch.batch * batch.steps;
  for (size_t i = 0; i < n; ++i) {
    for (int id : {batch.inputs[i], batch.targets[i]})
      if (id < 0 || id >= config_.vocab_size)
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
  }
}

LossReport TrainModel::loss(const Weights& weights, const BatchView& batch) {
  if (forward_->isHost()) return run(ParamView::of(weights), nullptr, batch);
  if (deviceWeights_.size() != weights.totalFloats()) deviceWeights_ = forward_->allocate(weights.totalFloats());
  forward_->upload(deviceWeights_.data(), weights.arena(), weights.totalFloats());
  return run(ParamView::at(weights, deviceWeights_.data()), nullptr, batch);
}

LossReport TrainModel::lossAndGradients(const Weights& weights, Weights& grads, const BatchView& batch) {
  if (grads.totalFloats() != weights.totalFloats()) throw Error("gradient buffer does not match the model's parameters");
  if (forward_->isHost()) {
    const ParamView gradView = ParamView::of(grads);
    return run(ParamView::of(weights), &gradView, batch);
  }
  const size_t n = weights.totalFloats();
  if (deviceWeights_.size() != n) deviceWeights_ = forward_->allocate(n);
  if (deviceGrads_.size() != n) deviceGrads_ = forward_->allocate(n);
  forward_->upload(deviceWeights_.data(), weights.arena(), n);
  const ParamView gradView = ParamView::at(grads, deviceGrads_.data());
  LossReport report = run(ParamView::at(weights, deviceWeights_.data()), &gradView, batch);
  forward_->download(grads.arena(), deviceGrads_.data(), n);
  return report;
}

LossReport TrainModel::loss(const ParamView& weights, const BatchView& batch) { return run(weights, nullptr, batch); }

LossReport TrainModel::lossAndGradients(const ParamView& weights, const ParamView& grads, const BatchView& batch) {
  if (grads.totalFloats != weights.totalFloats) throw Error("gradient buffer does not match the model's parameters");
  return run(weights, &grads, batch);
}

LossReport TrainModel::run(const ParamView& weights, const ParamView* grads, const BatchView& batch) {
  checkBatch(batch);
  const ModelConfig& c = config_;
  const int B = batch.batch, T = batch.steps, R = B * T;
  const int C = c.n_embd, F = c.dFF(), V = c.vocab_size, QKV = c.qkvDim(), L = c.n_layer, E = c.n_experts;
  const float eps = static_cast<float>(c.layer_norm_epsilon);
  const bool swiglu = c.activation == Activation::SwiGlu;
  const size_t RC = (size_t)R * C;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  a.layers.resize(L);

  auto norm = [&](float* out, const float* in, const float* weight, const float* bias) {
    if (c.norm == NormKind::RmsNorm) fw.rmsNorm(out, in, weight, R, C, eps);
    else fw.layerNorm(out, in, weight, bias, R, C, eps);
  };
  auto normBackward = [&](float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight) {
    if (c.norm == NormKind::RmsNorm) backward_->rmsNorm(din, dweight, dout, in, weight, R, C, eps);
    else backward_->layerNorm(din, dweight, dbias, dout, in, weight, R, C, eps);
  };

  AttentionShape shape{T, 0, c.n_head, c.headDim(), T};
  shape.nKvHead = c.kvHeads();
  shape.causal = c.causal;
  shape.window = c.attention_window;
  shape.ropeBase = c.position_encoding == PositionEncoding::Rope ? c.position_base : 0.0;
  shape.alibiSlopes = alibiSlopes_.empty() ? nullptr : alibiSlopes_.data();
  a.kCache.resize(fw, (size_t)T * c.kvDim());
  a.vCache.resize(fw, (size_t)T * c.kvDim());

  const float* sinusoids = fw.isHost() ? sinusoids_.data() : deviceSinusoids_.data();
  const float* positions = c.hasLearnedPositions() ? weights.wpe : sinusoids_.empty() ? nullptr : sinusoids;

  // Feed-forward of n rows: in (n, C) -> out (n, C), keeping hidden/gate/act.
  auto feedForward = [&](const FeedForwardWeights& w, const float* in, int n, Floats& hidden, Floats& gate,
                         Floats& act, float* out) {
    hidden.resize(fw, (size_t)n * F);
    act.resize(fw, (size_t)n * F);
    fw.matmul(hidden.data(), in, w.fcWeight, w.fcBias, n, C, F);
    if (swiglu) {
      gate.resize(fw, (size_t)n * F);
      fw.matmul(gate.data(), in, w.gateWeight, w.gateBias, n, C, F);
      fw.copy(act.data(), hidden.data(), (size_t)n * F);
      fw.swiglu(act.data(), gate.data(), (size_t)n * F);
    } else {
      fw.copy(act.data(), hidden.data(), (size_t)n * F);
      fw.activate(act.data(), (size_t)n * F, c.activation);
    }
    fw.matmul(out, act.data(), w.projWeight, w.projBias, n, F, C);
  };

  // ---- forward ----------------------------------------------------------------------------------
  LossReport report;
  Floats& x = a.x;
  x.resize(fw, RC);
  for (int b = 0; b < B; ++b) fw.embed(x.data() + (size_t)b * T * C, batch.inputs + (size_t)b * T, weights.wte, positions, T, C, 0);
  a.ffOut.resize(fw, RC);
  if (c.isMoe()) report.expertLoad.assign((size_t)L * E, 0);
  double auxLoss = 0;
  for (int l = 0; l < L; ++l) {
    const LayerWeights& w = weights.layers[l];
    LayerActivations& la = a.layers[l];
    la.in.copyFrom(fw, x);
    const float* attnIn = x.data();
    if (c.pre_norm) {
      la.normed1.resize(fw, RC);
      norm(la.normed1.data(), x.data(), w.ln1Weight, w.ln1Bias);
      attnIn = la.normed1.data();
    }
    la.qkv.resize(fw, (size_t)R * QKV);
    la.attn.resize(fw, RC);
    fw.matmul(la.qkv.data(), attnIn, w.qkvWeight, w.qkvBias, R, C, QKV);
    for (int b = 0; b < B; ++b)
      fw.attention(la.attn.data() + (size_t)b * T * C, nullptr, nullptr, la.qkv.data() + (size_t)b * T * QKV, a.kCache.data(),
                   a.vCache.data(), shape);
    fw.matmul(a.ffOut.data(), la.attn.data(), w.attnProjWeight, w.attnProjBias, R, C, C);
    fw.add(x.data(), a.ffOut.data(), RC);
    if (!c.pre_norm) {
      la.sum1.copyFrom(fw, x);
      norm(x.data(), la.sum1.data(), w.ln1Weight, w.ln1Bias);
    }
    la.mid.copyFrom(fw, x);
    if (!c.hasFeedForward()) continue;
    const float* ffIn = x.data();
    if (c.pre_norm) {
      la.normed2.resize(fw, RC);
      norm(la.normed2.data(), x.data(), w.ln2Weight, w.ln2Bias);
      ffIn = la.normed2.data();
    }
    if (c.isMoe()) {
      la.routerLogits.resize(fw, (size_t)R * E);
      fw.matmul(la.routerLogits.data(), ffIn, w.routerWeight, nullptr, R, C, E);
      const float* routerLogits = hostView(fw, la.routerLogits.data(), (size_t)R * E, la.routerLogitsHost);
      la.routing.resize(B);
      la.experts.resize(E);
      for (auto& ex : la.experts) {
        ex.rows.clear();
        ex.gates.clear();
        ex.assignment.clear();
        ex.sequence.clear();
      }
      for (int b = 0; b < B; ++b) {
        std::vector<float> logits(routerLogits + (size_t)b * T * E, routerLogits + (size_t)(b + 1) * T * E);
        la.routing[b] = routeTokens(logits, T, moeParams_);
        const MoeRouting& routing = la.routing[b];
        auxLoss += routing.auxLoss / B;
        for (size_t i = 0; i < routing.assignments.size(); ++i) {
          const MoeAssignment& as = routing.assignments[i];
          if (as.dropped) continue;
          ExpertActivations& ex = la.experts[as.expert];
          ex.rows.push_back(b * T + as.token);
          ex.gates.push_back(as.gate);
          ex.sequence.push_back(b);
          ex.assignment.push_back(static_cast<int>(i));
        }
      }
      fw.zero(a.ffOut.data(), RC);
      for (int e = 0; e < E; ++e) {
        ExpertActivations& ex = la.experts[e];
        const int n = static_cast<int>(ex.rows.size());
        report.expertLoad[(size_t)l * E + e] += n;
        if (n == 0) continue;
        ex.in.resize(fw, (size_t)n * C);
        ex.out.resize(fw, (size_t)n * C);
        fw.gatherRows(ex.in.data(), ffIn, ex.rows.data(), n, C);
        feedForward(w.experts[e], ex.in.data(), n, ex.hidden, ex.gate, ex.act, ex.out.data());
        fw.scatterAddRows(a.ffOut.data(), ex.out.data(), ex.rows.data(), ex.gates.data(), n, C);
      }
    } else {
      feedForward(w.mlp, ffIn, R, la.hidden, la.gate, la.act, a.ffOut.data());
    }
    fw.add(x.data(), a.ffOut.data(), RC);
    if (!c.pre_norm) {
      la.sum2.copyFrom(fw, x);
      norm(x.data(), la.sum2.data(), w.ln2Weight, w.ln2Bias);
    }
  }
  a.final.copyFrom(fw, x);
  const float* unembedIn = a.final.data();
  if (c.hasFinalNorm()) {
    a.normedF.resize(fw, RC);
    norm(a.normedF.data(), a.final.data(), weights.lnfWeight, weights.lnfBias);
    unembedIn = a.normedF.data();
  }
  a.logits.resize(fw, (size_t)R * V);
  fw.matmulTransposed(a.logits.data(), unembedIn, weights.unembedding(), R, C, V);

  int scored = 0;
  for (int i = 0; i < R; ++i) scored += !batch.scored || batch.scored[i];
  if (scored == 0) throw Error("training batch has no scored target");
  const double lossSum =
      backward_->crossEntropy(a.logits.data(), a.logits.data(), batch.targets, batch.scored, R, V, 1.0f / static_cast<float>(scored));
  report.loss = lossSum / scored;
  report.auxLoss = auxLoss;
  report.scoredTokens = scored;
  if (!std::isfinite(report.loss)) throw Error("training loss is not finite (the run diverged: lower the learning rate)");
  if (!grads) return report;

  // ---- backward ---------------------------------------------------------------------------------
  const ParamView& g = *grads;
  fw.zero(g.arena, g.totalFloats);
  const float* dlogits = a.logits.data();
  float* dUnembedding = weights.lmHead ? g.lmHead : g.wte;
  zeroVector(fw, a.dx, RC);  // gradient of the residual stream (currently: after the last layer)
  if (c.hasFinalNorm()) {
    zeroVector(fw, a.dnormed, RC);
    backward_->matmulTransposed(a.dnormed.data(), dUnembedding, dlogits, a.normedF.data(), weights.unembedding(), R, C, V);
    normBackward(a.dx.data(), g.lnfWeight, g.lnfBias, a.dnormed.data(), a.final.data(), weights.lnfWeight);
  } else {
    backward_->matmulTransposed(a.dx.data(), dUnembedding, dlogits, a.final.data(), weights.unembedding(), R, C, V);
  }

  // Backward of a feed-forward of n rows: dout (n, C) -> din (n, C) +=.
  auto feedForwardBackward = [&](const FeedForwardWeights& w, const FeedForwardWeights& gw, const float* in, int n, const Floats& hidden,
                                 const Floats& gate, const Floats& act, const float* dout, float* din) {
    const size_t nF = (size_t)n * F;
    zeroVector(fw, a.dact, nF);
    backward_->matmul(a.dact.data(), gw.projWeight, gw.projBias, dout, act.data(), w.projWeight, n, F, C);
    zeroVector(fw, a.dhidden, nF);
    if (swiglu) {
      zeroVector(fw, a.dgate, nF);
      backward_->swiglu(a.dgate.data(), a.dhidden.data(), a.dact.data(), gate.data(), hidden.data(), nF);
      backward_->matmul(din, gw.gateWeight, gw.gateBias, a.dgate.data(), in, w.gateWeight, n, C, F);
    } else {
      backward_->activation(a.dhidden.data(), a.dact.data(), hidden.data(), nF, c.activation);
    }
    backward_->matmul(din, gw.fcWeight, gw.fcBias, a.dhidden.data(), in, w.fcWeight, n, C, F);
  };

  for (int l = L - 1; l >= 0; --l) {
    const LayerWeights& w = weights.layers[l];
    const LayerWeights& gw = g.layers[l];
    LayerActivations& la = a.layers[l];
    // a.dx: gradient of the residual after this layer. Feed-forward sublayer first.
    if (c.hasFeedForward()) {
      // dff: gradient of the sublayer's output; dmid: of its residual input.
      const float* dff = a.dx.data();
      if (!c.pre_norm) {
        zeroVector(fw, a.dsum, RC);  // x = ln_2(sum2): d sum2
        normBackward(a.dsum.data(), gw.ln2Weight, gw.ln2Bias, a.dx.data(), la.sum2.data(), w.ln2Weight);
        dff = a.dsum.data();
      }
      a.dmid.copyFrom(fw, dff, RC);  // the residual path
      const float* ffIn = c.pre_norm ? la.normed2.data() : la.mid.data();
      float* dffIn = a.dmid.data();
      if (c.pre_norm) {
        zeroVector(fw, a.dnormed, RC);
        dffIn = a.dnormed.data();
      }
      if (c.isMoe()) {
        // The routing's gradients are computed on the host (the routing lives there): dff and the
        // expert outputs are read through host views, dExpertOut and drouter are uploaded.
        a.drouterHost.assign((size_t)R * E, 0.0f);
        const float* dffHost = hostView(fw, dff, RC, a.dffCopy);
        // Gradient of each kept assignment's gate: dot(dff[row], expert output).
        std::vector<std::vector<float>> dgates(B);
        for (int b = 0; b < B; ++b) dgates[b].assign(la.routing[b].assignments.size(), 0.0f);
        for (int e = 0; e < E; ++e) {
          ExpertActivations& ex = la.experts[e];
          const int n = static_cast<int>(ex.rows.size());
          if (n == 0) continue;
          a.dExpertOutHost.resize((size_t)n * C);
          const float* outHost = hostView(fw, ex.out.data(), (size_t)n * C, a.expertOutCopy);
          for (int i = 0; i < n; ++i) {
            const float* drow = dffHost + (size_t)ex.rows[i] * C;
            const float* orow = outHost + (size_t)i * C;
            float* dorow = a.dExpertOutHost.data() + (size_t)i * C;
            double dot = 0;
            for (int k = 0; k < C; ++k) {
              dorow[k] = ex.gates[i] * drow[k];
              dot += (double)drow[k] * orow[k];
            }
            dgates[ex.sequence[i]][ex.assignment[i]] = static_cast<float>(dot);
          }
          a.dExpertOut.resize(fw, (size_t)n * C);
          fw.upload(a.dExpertOut.data(), a.dExpertOutHost.data(), (size_t)n * C);
          zeroVector(fw, a.dExpertIn, (size_t)n * C);
          feedForwardBackward(w.experts[e], gw.experts[e], ex.in.data(), n, ex.hidden, ex.gate, ex.act, a.dExpertOut.data(),
                              a.dExpertIn.data());
          const std::vector<float> ones(n, 1.0f);
          fw.scatterAddRows(dffIn, a.dExpertIn.data(), ex.rows.data(), ones.data(), n, C);
        }
        // Router logits: through the gates and through the load-balancing loss.
        for (int b = 0; b < B; ++b) {
          const MoeRouting& routing = la.routing[b];
          float* dlog = a.drouterHost.data() + (size_t)b * T * E;
          const float* probs = routing.routerProbs.data();
          if (!moeParams_.expertChoice) {
            // Gates of token t: softmax over its k chosen logits; assignments are in (token, rank) order.
            const int k = routing.topK;
            for (int t = 0; t < T; ++t) {
              double weighted = 0;
              for (int r = 0; r < k; ++r) {
                const size_t i = (size_t)t * k + r;
                weighted += (double)routing.assignments[i].gate * dgates[b][i];
              }
              for (int r = 0; r < k; ++r) {
                const size_t i = (size_t)t * k + r;
                const MoeAssignment& as = routing.assignments[i];
                dlog[(size_t)t * E + as.expert] += static_cast<float>(as.gate * (dgates[b][i] - weighted));
              }
            }
          } else {
            // Gate = full softmax probability S[t, e]: accumulate dS, then back through the softmax below.
            std::vector<double> dprob((size_t)T * E, 0.0);
            for (size_t i = 0; i < routing.assignments.size(); ++i)
              dprob[(size_t)routing.assignments[i].token * E + routing.assignments[i].expert] += dgates[b][i];
            for (int t = 0; t < T; ++t) {
              double weighted = 0;
              for (int e = 0; e < E; ++e) weighted += probs[(size_t)t * E + e] * dprob[(size_t)t * E + e];
              for (int e = 0; e < E; ++e)
                dlog[(size_t)t * E + e] += static_cast<float>(probs[(size_t)t * E + e] * (dprob[(size_t)t * E + e] - weighted));
            }
          }
          // Aux loss / B: d/dP_i = alpha E f_i / B, P_i = mean_t probs[t, i].
          if (moeParams_.auxLossAlpha > 0) {
            std::vector<double> dp(E);  // d aux / d probs[t, e], the same for every token t
            for (int e = 0; e < E; ++e) dp[e] = moeParams_.auxLossAlpha * E * routing.fraction[e] / ((double)T * B);
            for (int t = 0; t < T; ++t) {
              const float* p = probs + (size_t)t * E;
              double weighted = 0;
              for (int e = 0; e < E; ++e) weighted += p[e] * dp[e];
              for (int e = 0; e < E; ++e) dlog[(size_t)t * E + e] += static_cast<float>(p[e] * (dp[e] - weighted));
            }
          }
        }
        a.drouter.resize(fw, (size_t)R * E);
        fw.upload(a.drouter.data(), a.drouterHost.data(), (size_t)R * E);
        backward_->matmul(dffIn, gw.routerWeight, nullptr, a.drouter.data(), ffIn, w.routerWeight, R, C, E);
      } else {
        feedForwardBackward(w.mlp, gw.mlp, ffIn, R, la.hidden, la.gate, la.act, dff, dffIn);
      }
      if (c.pre_norm) normBackward(a.dmid.data(), gw.ln2Weight, gw.ln2Bias, a.dnormed.data(), la.mid.data(), w.ln2Weight);
      std::swap(a.dx, a.dmid);  // a.dx: gradient of the residual after the attention sublayer
    }
    // Attention sublayer.
    const float* dsub = a.dx.data();
    if (!c.pre_norm) {
      zeroVector(fw, a.dsum, RC);
      normBackward(a.dsum.data(), gw.ln1Weight, gw.ln1Bias, a.dx.data(), la.sum1.data(), w.ln1Weight);
      dsub = a.dsum.data();
    }
    a.dmid.copyFrom(fw, dsub, RC);  // residual path: gradient of the layer input
    zeroVector(fw, a.dattn, RC);
    backward_->matmul(a.dattn.data(), gw.attnProjWeight, gw.attnProjBias, dsub, la.attn.data(), w.attnProjWeight, R, C, C);
    zeroVector(fw, a.dqkv, (size_t)R * QKV);
    backward_->attention(a.dqkv.data(), a.dattn.data(), la.qkv.data(), shape, B);
    const float* attnIn = c.pre_norm ? la.normed1.data() : la.in.data();
    if (c.pre_norm) {
      zeroVector(fw, a.dnormed, RC);
      backward_->matmul(a.dnormed.data(), gw.qkvWeight, gw.qkvBias, a.dqkv.data(), attnIn, w.qkvWeight, R, C, QKV);
      normBackward(a.dmid.data(), gw.ln1Weight, gw.ln1Bias, a.dnormed.data(), la.in.data(), w.ln1Weight);
    } else {
      backward_->matmul(a.dmid.data(), gw.qkvWeight, gw.qkvBias, a.dqkv.data(), attnIn, w.qkvWeight, R, C, QKV);
    }
    std::swap(a.dx, a.dmid);
  }
  backward_->embed(g.wte, c.hasLearnedPositions() ? g.wpe : nullptr, a.dx.data(), batch.inputs, R, T, C);
  return report;
}

}  // namespace tscope

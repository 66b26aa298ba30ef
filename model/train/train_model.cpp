// The training pass (see train_model.h). The forward is the block forward inference runs
// (model/nn/block.h) over B sequences of T tokens as B*T rows, keeping each layer's activations;
// the backward walks the layers in reverse, calling BackwardOps.
// MoE: each sequence is routed on its own (as a prompt is at inference); the gradient reaches the
// router through the gates (softmax over the kept top-k logits, or the full softmax for expert
// choice, or the unrenormalised top-k probabilities of moe_normalize_top_k false) and through the
// load-balancing loss alpha * E * sum_i f_i * P_i (f_i held constant, as in Switch Transformer).
// Dropped assignments contribute nothing and get no gradient. A shared expert's output s * y, with
// s = sigmoid(x . g), sends s * dout into the expert and (dout . y) s (1 - s) into x and g.
#include "model/train/train_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/positional.h"
#include "model/train/train_activations.h"

namespace tscope {

namespace {
void zeroVector(Backend& fw, Floats& v, size_t n) {
  v.resize(fw, n);
  if (n) fw.zero(v.data(), n);
}
}  // namespace

TrainModel::TrainModel(const ModelConfig& config, Device& device)
    : config_(config), forward_(&device.forward()), backward_(&device.backward()), block_(config, device.forward()),
      acts_(std::make_unique<Activations>()) {
  if (auto msg = validateConfig(config_); !msg.empty()) throw Error(msg);
  if (config_.isEncoderDecoder()) {
    if (!forward_->isHost())
      throw Error("encoder-decoder models train on the CPU for now (the cross-attention backward has no " + forward_->name() + " kernel)");
    encoderBlock_.emplace(encoderStackConfig(config_), device.forward());
  }
  if (const AttentionVariantParams* variant = block_.ownVariant())
    if (std::string problem = attentionVariantBackwardProblem(*variant); !problem.empty()) throw Error(problem);
}

TrainModel::~TrainModel() = default;

void TrainModel::checkBatch(const BatchView& batch) const {
  if (batch.batch < 1 || batch.steps < 1) throw Error("training batch must have at least one sequence of one token");
  if (batch.steps > config_.n_positions)
    throw Error("sequence length " + std::to_string(batch.steps) + " is longer than the context (n_positions " +
                std::to_string(config_.n_positions) + ")");
  if (!batch.inputs || !batch.targets) throw Error("training batch has no inputs or targets");
  auto checkId = [&](int id) {
    if (id < 0 || id >= config_.vocab_size)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
  };
  const size_t n = (size_t)batch.batch * batch.steps;
  for (size_t i = 0; i < n; ++i) {
    checkId(batch.inputs[i]);
    checkId(batch.targets[i]);
  }
  if (!config_.isEncoderDecoder()) return;
  if (!batch.sources || batch.sourceSteps < 1) throw Error("an encoder-decoder model trains on sources and targets: the batch has no source");
  if (batch.sourceSteps > config_.n_positions)
    throw Error("source length " + std::to_string(batch.sourceSteps) + " is longer than the context (n_positions " +
                std::to_string(config_.n_positions) + ")");
  for (size_t i = 0; i < (size_t)batch.batch * batch.sourceSteps; ++i) checkId(batch.sources[i]);
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
  // T, R, RC and shape describe the stack being run: the decoder's, then (encoder-decoder backward) the encoder's.
  const int B = batch.batch;
  int T = batch.steps, R = B * T;
  const int C = c.n_embd, A = c.attnDim(), F = c.dFF(), V = c.vocab_size, QKV = c.qkvDim(), L = c.n_layer, E = c.n_experts;
  const float eps = static_cast<float>(c.layer_norm_epsilon);
  const bool swiglu = c.activation == Activation::SwiGlu;
  size_t RC = (size_t)R * C;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  a.layers.resize(L);

  // (rows R of the stack being run)
  auto normBackward = [&](float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight) {
    if (c.norm == NormKind::RmsNorm) backward_->rmsNorm(din, dweight, dout, in, weight, R, C, eps);
    else backward_->layerNorm(din, dweight, dbias, dout, in, weight, R, C, eps);
  };

  // Each sequence attends over a scratch K/V store of its T rows (pos0 = 0).
  AttentionShape shape = block_.attentionShape(T, 0, T);
  a.kCache.resize(fw, (size_t)T * c.kvDim());
  a.vCache.resize(fw, (size_t)T * c.kvDim());

  // ---- forward: the block forward of inference, keeping every activation the backward needs ------
  LossReport report;
  Floats& x = a.x;
  x.resize(fw, RC);
  block_.embed(x.data(), batch.inputs, weights.wte, weights.wpe, B, T, 0);
  if (c.isMoe()) report.expertLoad.assign((size_t)L * E, 0);
  double auxLoss = 0;
  // Every activation of one layer over `rows` rows kept in la (the encoder's and the decoder's alike).
  auto keepAll = [&](LayerActivations& la, size_t rows) {
    const size_t rowsC = rows * C;
    LayerTensors t;
    t.in = la.in.sized(fw, rowsC);
    t.normed1 = (c.pre_norm ? la.normed1 : a.normScratch).sized(fw, rowsC);
    t.qkv = la.qkv.sized(fw, rows * QKV);
    t.qkvRaw = c.qk_norm ? la.qkvRaw.sized(fw, rows * QKV) : nullptr;
    t.attn = la.attn.sized(fw, rows * A);
    t.out = a.ffOut.sized(fw, rowsC);
    t.sum1 = c.pre_norm ? nullptr : la.sum1.sized(fw, rowsC);
    t.mid = la.mid.sized(fw, rowsC);
    t.normed2 = (c.pre_norm && c.hasFeedForward() ? la.normed2 : a.normScratch).sized(fw, rowsC);
    t.sum2 = c.pre_norm || !c.hasFeedForward() ? nullptr : la.sum2.sized(fw, rowsC);
    t.keepActivated = true;
    if (c.hasFeedForward() && !c.isMoe()) {
      t.hidden = la.hidden.sized(fw, rows * F);
      t.gate = c.activation == Activation::SwiGlu ? la.gate.sized(fw, rows * F) : nullptr;
      t.act = la.act.sized(fw, rows * F);
    }
    t.moe = &la.moe;
    return t;
  };

  // Encoder-decoder: the encoder over the B sources of S rows first, its output for every decoder layer's keys and values.
  const bool encoderDecoder = c.isEncoderDecoder();
  const int S = encoderDecoder ? batch.sourceSteps : 0, RS = B * S, KV2 = 2 * c.kvDim();
  const float* encoderOut = nullptr;  // (B*S, C)
  AttentionShape encoderShape;
  if (encoderDecoder) {
    BlockForward& eb = *encoderBlock_;
    const int Le = c.n_encoder_layer;
    encoderShape = eb.attentionShape(S, 0, S);
    a.encoderKCache.resize(fw, (size_t)S * c.kvDim());
    a.encoderVCache.resize(fw, (size_t)S * c.kvDim());
    a.encoderLayers.resize(Le);
    float* ex = a.encoderX.sized(fw, (size_t)RS * C);
    eb.embed(ex, batch.sources, weights.wte, weights.encWpe, B, S, 0);
    bool encoderNormed = false;
    for (int l = 0; l < Le; ++l) {
      NextNorm next;
      if (c.pre_norm) {
        const bool last = l + 1 == Le;
        next = {last ? weights.encLnfWeight : weights.encoderLayers[l + 1].ln1Weight,
                last ? weights.encLnfBias : weights.encoderLayers[l + 1].ln1Bias,
                (last ? a.encoderNormedF : a.encoderLayers[l + 1].normed1).sized(fw, (size_t)RS * C)};
      }
      LayerActivations& la = a.encoderLayers[l];
      encoderNormed = eb.layer(constLayer(weights.encoderLayers[l]), next, B, encoderShape, a.encoderKCache.data(), a.encoderVCache.data(), ex,
                               encoderNormed, keepAll(la, RS));
      if (c.isMoe())
        for (const MoeRouting& routing : la.moe.routing) auxLoss += routing.auxLoss / B;
    }
    a.encoderFinal.copyFrom(fw, ex, (size_t)RS * C);
    encoderOut = eb.unembeddingInput(a.encoderFinal.data(), c.pre_norm ? a.encoderNormedF.sized(fw, (size_t)RS * C) : nullptr, encoderNormed,
                                     weights.encLnfWeight, weights.encLnfBias, RS);
  }

  bool normed = false;  // the layer's normed1 already holds ln_1 of its input
  for (int l = 0; l < L; ++l) {
    LayerActivations& la = a.layers[l];
    LayerTensors t = keepAll(la, R);
    if (encoderDecoder) {
      block_.crossKeysValues(constLayer(weights.layers[l]), encoderOut, RS, la.crossKv.sized(fw, (size_t)RS * KV2));
      t.crossKv = la.crossKv.data();
      t.crossS = S;
      t.normedX = (c.pre_norm ? la.normedX : a.normScratch).sized(fw, RC);
      t.crossQ = la.crossQ.sized(fw, (size_t)R * A);
      t.crossAttn = la.crossAttn.sized(fw, (size_t)R * A);
      t.sumX = c.pre_norm ? nullptr : la.sumX.sized(fw, RC);
      t.midX = la.midX.sized(fw, RC);
    }
    if (l == captureLayer_) {
      t.probs = a.probs.sized(fw, (size_t)c.n_head * T * T);
      t.scores = a.scores.sized(fw, (size_t)c.n_head * T * T);
    }
    // Pre-norm: the next layer's ln_1 (or the final norm) is fused into this layer's last residual add.
    NextNorm next;
    if (c.pre_norm) {
      const bool last = l + 1 == L;
      next = {last ? weights.lnfWeight : weights.layers[l + 1].ln1Weight, last ? weights.lnfBias : weights.layers[l + 1].ln1Bias,
              (last ? a.normedF : a.layers[l + 1].normed1).sized(fw, RC)};
    }
    normed = block_.layer(constLayer(weights.layers[l]), next, B, shape, a.kCache.data(), a.vCache.data(), x.data(), normed, t);
    if (c.isMoe()) {
      for (const MoeRouting& routing : la.moe.routing) auxLoss += routing.auxLoss / B;
      for (int e = 0; e < E; ++e) report.expertLoad[(size_t)l * E + e] += static_cast<int>(la.moe.experts[e].rows.size());
    }
  }
  if (captureLayer_ >= 0 && captureLayer_ < L) {
    captured_.resize((size_t)c.n_head * T * T);
    fw.download(captured_.data(), a.probs.data(), captured_.size());
  }
  a.final.copyFrom(fw, x);
  float* normedF = c.hasFinalNorm() ? a.normedF.sized(fw, RC) : nullptr;
  const float* unembedIn = block_.unembeddingInput(a.final.data(), normedF, normed, weights.lnfWeight, weights.lnfBias, R);
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
  // width: the feed-forward's F (0 = d_ff; the shared expert's is moe_shared_expert_d_ff).
  auto feedForwardBackward = [&](const FeedForwardWeights& w, const FeedForwardWeights& gw, const float* in, int n, const Floats& hidden,
                                 const Floats& gate, const Floats& act, const float* dout, float* din, int width = 0) {
    const int ffWidth = width > 0 ? width : F;
    const size_t nF = (size_t)n * ffWidth;
    zeroVector(fw, a.dact, nF);
    backward_->matmul(a.dact.data(), gw.projWeight, gw.projBias, dout, act.data(), w.projWeight, n, ffWidth, C);
    zeroVector(fw, a.dhidden, nF);
    if (swiglu) {
      zeroVector(fw, a.dgate, nF);
      backward_->swiglu(a.dgate.data(), a.dhidden.data(), a.dact.data(), gate.data(), hidden.data(), nF);
      backward_->matmul(din, gw.gateWeight, gw.gateBias, a.dgate.data(), in, w.gateWeight, n, C, ffWidth);
    } else {
      backward_->activation(a.dhidden.data(), a.dact.data(), hidden.data(), nF, c.activation);
    }
    backward_->matmul(din, gw.fcWeight, gw.fcBias, a.dhidden.data(), in, w.fcWeight, n, C, ffWidth);
  };

  // A MoE layer's shared expert, out += s * y per row with s = sigmoid(in . g): dy = s * dout into the
  // expert, ds = dout . y (on the host, where the gates are), dlogit = ds s (1 - s) into g and din.
  auto sharedExpertBackward = [&](const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in,
                                  const float* dffHost, float* din) {
    const ExpertActivations& shared = moe.shared;
    const float* outHost = hostView(fw, shared.out.data(), RC, a.expertOutCopy);
    a.dExpertOutHost.resize(RC);
    std::vector<float> dlogit(R);
    for (int r = 0; r < R; ++r) {
      const float s = moe.sharedGates[r];
      const float* drow = dffHost + (size_t)r * C;
      const float* orow = outHost + (size_t)r * C;
      float* dorow = a.dExpertOutHost.data() + (size_t)r * C;
      double dot = 0;
      for (int k = 0; k < C; ++k) {
        dorow[k] = s * drow[k];
        dot += (double)drow[k] * orow[k];
      }
      dlogit[r] = static_cast<float>(dot * s * (1.0 - s));
    }
    a.dExpertOut.resize(fw, RC);
    fw.upload(a.dExpertOut.data(), a.dExpertOutHost.data(), RC);
    feedForwardBackward(w.sharedExpert, gw.sharedExpert, in, R, shared.hidden, shared.gate, shared.act, a.dExpertOut.data(), din,
                        c.moe_shared_expert_d_ff);
    a.dSharedGateLogit.resize(fw, (size_t)R);
    fw.upload(a.dSharedGateLogit.data(), dlogit.data(), (size_t)R);
    backward_->matmul(din, gw.sharedExpertGate, nullptr, a.dSharedGateLogit.data(), in, w.sharedExpertGate, R, C, 1);
  };

  if (encoderDecoder) zeroVector(fw, a.dEncoderOut, (size_t)RS * C);
  // One layer's backward over the stack being run (T, R, shape): a.dx holds the gradient of the
  // residual after the layer and leaves holding that of the residual before it.
  auto layerBackward = [&](const LayerWeights& w, const LayerWeights& gw, LayerActivations& la, const BlockForward& stack) {
    const bool cross = w.hasCross();
    const Floats& ffResidual = cross ? la.midX : la.mid;  // the feed-forward sublayer's residual input
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
      const float* ffIn = c.pre_norm ? la.normed2.data() : ffResidual.data();
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
        for (int b = 0; b < B; ++b) dgates[b].assign(la.moe.routing[b].assignments.size(), 0.0f);
        for (int e = 0; e < E; ++e) {
          ExpertActivations& ex = la.moe.experts[e];
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
        if (c.hasSharedExpert()) sharedExpertBackward(w, gw, la.moe, ffIn, dffHost, dffIn);
        // Router logits: through the gates and through the load-balancing loss.
        for (int b = 0; b < B; ++b) {
          const MoeRouting& routing = la.moe.routing[b];
          float* dlog = a.drouterHost.data() + (size_t)b * T * E;
          const float* probs = routing.routerProbs.data();
          if (!stack.moeRouting().expertChoice && stack.moeRouting().normalizeTopK) {
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
            // Gate = full softmax probability S[t, e] (expert choice; token choice unrenormalised):
            // accumulate dS, then back through the softmax below.
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
          if (stack.moeRouting().auxLossAlpha > 0) {
            std::vector<double> dp(E);  // d aux / d probs[t, e], the same for every token t
            for (int e = 0; e < E; ++e) dp[e] = stack.moeRouting().auxLossAlpha * E * routing.fraction[e] / ((double)T * B);
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
      if (c.pre_norm) normBackward(a.dmid.data(), gw.ln2Weight, gw.ln2Bias, a.dnormed.data(), ffResidual.data(), w.ln2Weight);
      std::swap(a.dx, a.dmid);  // a.dx: gradient of the residual after the attention sublayer(s)
    }
    if (cross) {
      // Cross-attention sublayer: into its queries (and on to the residual) and into the encoder's output.
      const int H = c.n_head, Hkv = c.kvHeads(), D = c.headDim();
      const float* dsub = a.dx.data();
      if (!c.pre_norm) {
        zeroVector(fw, a.dsum, RC);
        normBackward(a.dsum.data(), gw.lnxWeight, gw.lnxBias, a.dx.data(), la.sumX.data(), w.lnxWeight);
        dsub = a.dsum.data();
      }
      a.dmid.copyFrom(fw, dsub, RC);  // residual path
      zeroVector(fw, a.dattn, (size_t)R * A);
      backward_->matmul(a.dattn.data(), gw.crossProjWeight, gw.crossProjBias, dsub, la.crossAttn.data(), w.crossProjWeight, R, A, C);
      zeroVector(fw, a.dCrossQ, (size_t)R * A);
      zeroVector(fw, a.dCrossKv, (size_t)RS * KV2);
      backward_->crossAttention(a.dCrossQ.data(), a.dCrossKv.data(), a.dattn.data(), la.crossQ.data(), la.crossKv.data(), T, S, H, Hkv, D, B);
      backward_->matmul(a.dEncoderOut.data(), gw.crossKvWeight, gw.crossKvBias, a.dCrossKv.data(), encoderOut, w.crossKvWeight, RS, C, KV2);
      if (c.pre_norm) {
        zeroVector(fw, a.dnormed, RC);
        backward_->matmul(a.dnormed.data(), gw.crossQWeight, gw.crossQBias, a.dCrossQ.data(), la.normedX.data(), w.crossQWeight, R, C, A);
        normBackward(a.dmid.data(), gw.lnxWeight, gw.lnxBias, a.dnormed.data(), la.mid.data(), w.lnxWeight);
      } else {
        backward_->matmul(a.dmid.data(), gw.crossQWeight, gw.crossQBias, a.dCrossQ.data(), la.mid.data(), w.crossQWeight, R, C, A);
      }
      std::swap(a.dx, a.dmid);  // a.dx: gradient of the residual after the self-attention sublayer
    }
    // Attention sublayer.
    const float* dsub = a.dx.data();
    if (!c.pre_norm) {
      zeroVector(fw, a.dsum, RC);
      normBackward(a.dsum.data(), gw.ln1Weight, gw.ln1Bias, a.dx.data(), la.sum1.data(), w.ln1Weight);
      dsub = a.dsum.data();
    }
    a.dmid.copyFrom(fw, dsub, RC);  // residual path: gradient of the layer input
    zeroVector(fw, a.dattn, (size_t)R * A);
    backward_->matmul(a.dattn.data(), gw.attnProjWeight, gw.attnProjBias, dsub, la.attn.data(), w.attnProjWeight, R, A, C);
    zeroVector(fw, a.dqkv, (size_t)R * QKV);
    // Flash's gradient is exact attention's: the backend computes it; the other variants have their own.
    if (const AttentionVariantParams* variant = stack.ownVariant(); variant && variant->variant != AttentionVariant::Flash)
      variantAttentionBackward(fw, a.dqkv.data(), a.dattn.data(), la.qkv.data(), shape, B, *variant, a.dqkvHost, a.dqkvStaged);
    else
      backward_->attention(a.dqkv.data(), a.dattn.data(), la.qkv.data(), shape, B);
    const float* dprojection = a.dqkv.data();  // gradient of the qkv projection's output
    if (c.qk_norm) {
      // Through each head's RMSNorm of q and k (D-wide rows, contiguous within a row of qkv, as
      // in the forward); V's columns pass through unchanged.
      const int H = c.n_head, Hkv = c.kvHeads(), D = c.headDim(), KV = c.kvDim();
      a.dqkvRaw.copyFrom(fw, a.dqkv);
      for (int r = 0; r < R; ++r) {
        const size_t at = (size_t)r * QKV;
        float* drow = a.dqkvRaw.data() + at;
        const float* dnormedRow = a.dqkv.data() + at;
        const float* rawRow = la.qkvRaw.data() + at;
        fw.zero(drow, (size_t)A + KV);
        backward_->rmsNorm(drow, gw.qNormWeight, dnormedRow, rawRow, w.qNormWeight, H, D, eps);
        backward_->rmsNorm(drow + A, gw.kNormWeight, dnormedRow + A, rawRow + A, w.kNormWeight, Hkv, D, eps);
      }
      dprojection = a.dqkvRaw.data();
    }
    const float* attnIn = c.pre_norm ? la.normed1.data() : la.in.data();
    if (c.pre_norm) {
      zeroVector(fw, a.dnormed, RC);
      backward_->matmul(a.dnormed.data(), gw.qkvWeight, gw.qkvBias, dprojection, attnIn, w.qkvWeight, R, C, QKV);
      normBackward(a.dmid.data(), gw.ln1Weight, gw.ln1Bias, a.dnormed.data(), la.in.data(), w.ln1Weight);
    } else {
      backward_->matmul(a.dmid.data(), gw.qkvWeight, gw.qkvBias, dprojection, attnIn, w.qkvWeight, R, C, QKV);
    }
    std::swap(a.dx, a.dmid);
  };
  for (int l = L - 1; l >= 0; --l) layerBackward(weights.layers[l], g.layers[l], a.layers[l], block_);
  backward_->embed(g.wte, c.hasLearnedPositions() ? g.wpe : nullptr, a.dx.data(), batch.inputs, R, T, C);
  if (!encoderDecoder) return report;

  // The encoder: the gradient of its output (from every decoder layer's keys and values) back
  // through its final norm, its layers (the same layer backward over B sequences of S rows) and
  // its embedding.
  T = S;
  R = RS;
  RC = (size_t)R * C;
  shape = encoderShape;
  zeroVector(fw, a.dx, RC);
  if (c.pre_norm) normBackward(a.dx.data(), g.encLnfWeight, g.encLnfBias, a.dEncoderOut.data(), a.encoderFinal.data(), weights.encLnfWeight);
  else fw.add(a.dx.data(), a.dEncoderOut.data(), RC);
  for (int l = c.n_encoder_layer - 1; l >= 0; --l) layerBackward(weights.encoderLayers[l], g.encoderLayers[l], a.encoderLayers[l], *encoderBlock_);
  backward_->embed(g.wte, c.hasLearnedPositions() ? g.encWpe : nullptr, a.dx.data(), batch.sources, R, T, C);
  return report;
}

}  // namespace tscope

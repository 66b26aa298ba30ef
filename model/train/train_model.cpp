// The training pass (see train_model.h). The forward is the block forward inference runs
// (model/nn/block.h) over B sequences of T tokens as B*T rows, keeping each layer's activations;
// the backward runs the unembedding's in reverse, then BlockBackward (block_backward.h) over the
// layers in reverse, then the embedding's (the decoder's, then an encoder-decoder's encoder).
// MoE: each sequence is routed on its own (as a prompt is at inference).
#include "model/train/train_model.h"

#include <cmath>
#include <string>

#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "model/train/train_activations.h"

namespace tscope {

TrainModel::TrainModel(const ModelConfig& config, Device& device)
    : config_(config),
      forward_(&device.forward()),
      backward_(&device.backward()),
      block_(config, device.forward()),
      blockBackward_(config, block_, device.forward(), device.backward()),
      acts_(std::make_unique<Activations>()) {
  if (auto msg = validateConfig(config_); !msg.empty()) throw Error(msg);
  if (config_.isEncoderDecoder()) {
    if (!forward_->isHost())
      throw Error("encoder-decoder models train on the CPU for now (the cross-attention backward has no " + forward_->name() + " kernel)");
    encoderBlock_.emplace(encoderStackConfig(config_), device.forward());
    encoderBackward_.emplace(encoderStackConfig(config_), *encoderBlock_, device.forward(), device.backward());
  }
  if (const AttentionVariantParams* variant = block_.ownVariant())
    if (std::string problem = attentionVariantBackwardProblem(*variant); !problem.empty()) throw Error(problem);
}

TrainModel::~TrainModel() = default;

void TrainModel::checkBatch(const BatchView& batch) const {
  if (batch.batch < 1 || batch.steps < 1) throw Error("training batch must have at least one sequence of one token");
  if (batch.steps > config_.n_positions)
    throw Error("sequence length " + std::to_string(batch.steps) + " is longer than the context (n_positions " + std::to_string(config_.n_positions) +
                ")");
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
  if (config_.isImage()) {
    if (!batch.images) throw Error("an image model trains on images: the batch has none");
    if (batch.steps != config_.n_positions) throw Error("an image model's sequences are [CLS] and every patch: T must be n_positions");
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
  const int B = batch.batch, T = batch.steps, S = batch.sourceSteps, C = c.n_embd;
  Activations& a = *acts_;

  // ---- forward: the block forward of inference, keeping every activation the backward needs ------
  LossReport report;
  const float* encoderOut = c.isEncoderDecoder() ? encode(weights, batch, report) : nullptr;  // (B*S, C)
  decode(weights, batch, encoderOut, report);
  crossEntropy(batch, report, grads == nullptr);
  if (!grads) return report;

  // ---- backward: the forward's mirror, each layer by BlockBackward in reverse ------------------
  const ParamView& g = *grads;
  forward_->zero(g.arena, g.totalFloats);
  unembeddingBackward(weights, g, B * T);
  EncoderLink encoder;  // decoder layers sum the encoder output's gradient into a.dEncoderOut
  if (encoderOut) {
    zeroVector(*forward_, a.dEncoderOut, (size_t)B * S * C);
    encoder = {encoderOut, a.dEncoderOut.data(), S};
  }
  const AttentionShape shape = block_.attentionShape(T, 0, T);
  for (int l = c.n_layer - 1; l >= 0; --l) blockBackward_.layer(weights.layers[l], g.layers[l], a.layers[l], B, shape, encoder);
  embeddingBackward(weights, g, batch);
  if (!encoderOut) return report;

  // The encoder: the gradient of its output back through its final norm, its layers (over B
  // sequences of S rows) and its embedding.
  BlockBackward& eb = *encoderBackward_;
  const size_t RSC = (size_t)B * S * C;
  Floats& dx = eb.residual();
  zeroVector(*forward_, dx, RSC);
  if (c.pre_norm) eb.norm(dx.data(), g.encLnfWeight, g.encLnfBias, a.dEncoderOut.data(), a.encoderFinal.data(), weights.encLnfWeight, B * S);
  else forward_->add(dx.data(), a.dEncoderOut.data(), RSC);
  const AttentionShape encoderShape = encoderBlock_->attentionShape(S, 0, S);
  for (int l = c.n_encoder_layer - 1; l >= 0; --l) eb.layer(weights.encoderLayers[l], g.encoderLayers[l], a.encoderLayers[l], B, encoderShape);
  backward_->embed(g.wte, c.hasLearnedPositions() ? g.encWpe : nullptr, dx.data(), batch.sources, B * S, S, C);
  return report;
}

LayerTensors TrainModel::keepAll(LayerActivations& la, size_t rows) {
  const ModelConfig& c = config_;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  const size_t rowsC = rows * c.n_embd, rowsF = rows * c.dFF(), rowsQkv = rows * c.qkvDim();
  LayerTensors t;
  t.in = la.in.sized(fw, rowsC);
  t.normed1 = (c.pre_norm ? la.normed1 : a.normScratch).sized(fw, rowsC);
  t.qkv = la.qkv.sized(fw, rowsQkv);
  t.qkvRaw = c.qk_norm ? la.qkvRaw.sized(fw, rowsQkv) : nullptr;
  t.attn = la.attn.sized(fw, rows * c.attnDim());
  t.out = a.ffOut.sized(fw, rowsC);
  t.sum1 = c.pre_norm ? nullptr : la.sum1.sized(fw, rowsC);
  t.mid = la.mid.sized(fw, rowsC);
  t.normed2 = (c.pre_norm && c.hasFeedForward() ? la.normed2 : a.normScratch).sized(fw, rowsC);
  t.sum2 = c.pre_norm || !c.hasFeedForward() ? nullptr : la.sum2.sized(fw, rowsC);
  t.keepActivated = true;
  if (c.hasFeedForward() && !c.isMoe()) {
    t.hidden = la.hidden.sized(fw, rowsF);
    t.gate = c.activation == Activation::SwiGlu ? la.gate.sized(fw, rowsF) : nullptr;
    t.act = la.act.sized(fw, rowsF);
  }
  t.moe = &la.moe;
  return t;
}

const float* TrainModel::encode(const ParamView& weights, const BatchView& batch, LossReport& report) {
  const ModelConfig& c = config_;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  BlockForward& eb = *encoderBlock_;
  const int B = batch.batch, S = batch.sourceSteps, RS = B * S, Le = c.n_encoder_layer;
  const size_t RSC = (size_t)RS * c.n_embd;
  const AttentionShape shape = eb.attentionShape(S, 0, S);
  a.encoderKCache.resize(fw, (size_t)S * c.kvDim());
  a.encoderVCache.resize(fw, (size_t)S * c.kvDim());
  a.encoderLayers.resize(Le);
  float* ex = a.encoderX.sized(fw, RSC);
  eb.embed(ex, batch.sources, weights.wte, weights.encWpe, B, S, 0);
  bool normed = false;
  for (int l = 0; l < Le; ++l) {
    NextNorm next;
    if (c.pre_norm) {
      const bool last = l + 1 == Le;
      next = {last ? weights.encLnfWeight : weights.encoderLayers[l + 1].ln1Weight, last ? weights.encLnfBias : weights.encoderLayers[l + 1].ln1Bias,
              (last ? a.encoderNormedF : a.encoderLayers[l + 1].normed1).sized(fw, RSC)};
    }
    LayerActivations& la = a.encoderLayers[l];
    normed =
        eb.layer(constLayer(weights.encoderLayers[l]), next, B, shape, a.encoderKCache.data(), a.encoderVCache.data(), ex, normed, keepAll(la, RS));
    if (c.isMoe())
      for (const MoeRouting& routing : la.moe.routing) report.auxLoss += routing.auxLoss / B;
  }
  a.encoderFinal.copyFrom(fw, ex, RSC);
  return eb.unembeddingInput(a.encoderFinal.data(), c.pre_norm ? a.encoderNormedF.sized(fw, RSC) : nullptr, normed, weights.encLnfWeight,
                             weights.encLnfBias, RS);
}

void TrainModel::decode(const ParamView& weights, const BatchView& batch, const float* encoderOut, LossReport& report) {
  const ModelConfig& c = config_;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  const int B = batch.batch, T = batch.steps, R = B * T, L = c.n_layer, E = c.n_experts, S = batch.sourceSteps;
  const size_t RC = (size_t)R * c.n_embd;
  // Each sequence attends over a scratch K/V store of its T rows (pos0 = 0).
  const AttentionShape shape = block_.attentionShape(T, 0, T);
  a.kCache.resize(fw, (size_t)T * c.kvDim());
  a.vCache.resize(fw, (size_t)T * c.kvDim());
  a.layers.resize(L);
  Floats& x = a.x;
  x.resize(fw, RC);
  block_.embed(x.data(), batch.inputs, weights.wte, weights.wpe, B, T, 0);
  if (c.hasTokenTypes()) block_.addTokenTypes(x.data(), batch.inputs, weights.wtt, a.normScratch.sized(fw, RC), B, T);
  if (c.isImage()) {
    const size_t K = c.patchDim(), imageFloats = c.imageFloats();
    std::vector<float> rows;
    rows.reserve((size_t)R * K);
    for (int b = 0; b < B; ++b) {
      const std::vector<float> one = imagePatchRows(c, batch.images + b * imageFloats, imageFloats);
      rows.insert(rows.end(), one.begin(), one.end());
    }
    block_.addPatches(x.data(), rows.data(), weights.patchWeight, a.patchIn.sized(fw, R * K), a.normScratch.sized(fw, RC), R);
  }
  if (c.embedding_norm) {
    a.embeddedRaw.copyFrom(fw, x.data(), RC);
    block_.embeddingNorm(x.data(), a.normScratch.sized(fw, RC), weights.lnEmbWeight, weights.lnEmbBias, R);
  }
  if (c.isMoe()) report.expertLoad.assign((size_t)L * E, 0);
  bool normed = false;  // the layer's normed1 already holds ln_1 of its input
  for (int l = 0; l < L; ++l) {
    LayerActivations& la = a.layers[l];
    LayerTensors t = keepAll(la, R);
    if (encoderOut) {
      block_.crossKeysValues(constLayer(weights.layers[l]), encoderOut, B * S, la.crossKv.sized(fw, (size_t)B * S * 2 * c.kvDim()));
      t.crossKv = la.crossKv.data();
      t.crossS = S;
      t.normedX = (c.pre_norm ? la.normedX : a.normScratch).sized(fw, RC);
      t.crossQ = la.crossQ.sized(fw, (size_t)R * c.attnDim());
      t.crossAttn = la.crossAttn.sized(fw, (size_t)R * c.attnDim());
      t.sumX = c.pre_norm ? nullptr : la.sumX.sized(fw, RC);
      t.midX = la.midX.sized(fw, RC);
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
      for (const MoeRouting& routing : la.moe.routing) report.auxLoss += routing.auxLoss / B;
      for (int e = 0; e < E; ++e) report.expertLoad[(size_t)l * E + e] += static_cast<int>(la.moe.experts[e].rows.size());
    }
  }
  a.final.copyFrom(fw, x);
  // The final norm and (mlm_head) BERT's MLM head, its steps kept for the backward.
  float* normedF = c.hasFinalNorm() ? a.normedF.sized(fw, RC) : nullptr;
  const OutputHead head = OutputHead::of(weights);
  HeadActivations keep;
  if (c.mlm_head) keep = {a.headPre.sized(fw, RC), a.headAct.sized(fw, RC), a.headOut.sized(fw, RC)};
  const float* unembedIn =
      block_.unembeddingInput(a.final.data(), normedF, normed, weights.lnfWeight, weights.lnfBias, R, head, nullptr, c.mlm_head ? &keep : nullptr);
  a.logits.resize(fw, (size_t)R * c.vocab_size);
  block_.logits(a.logits.data(), unembedIn, weights.unembedding(), {}, head, R);
}

int TrainModel::countArgmaxHits(const BatchView& batch) {
  const int R = batch.batch * batch.steps, V = config_.vocab_size;
  std::vector<float> row(V);
  int hits = 0;
  for (int i = 0; i < R; ++i) {
    if (batch.scored && !batch.scored[i]) continue;
    forward_->download(row.data(), acts_->logits.data() + (size_t)i * V, V);
    int best = 0;
    for (int v = 1; v < V; ++v)
      if (row[v] > row[best]) best = v;
    hits += best == batch.targets[i];
  }
  return hits;
}

void TrainModel::crossEntropy(const BatchView& batch, LossReport& report, bool evaluating) {
  Activations& a = *acts_;
  const int R = batch.batch * batch.steps;
  int scored = 0;
  for (int i = 0; i < R; ++i) scored += !batch.scored || batch.scored[i];
  if (scored == 0) throw Error("training batch has no scored target");
  if (evaluating && (config_.masked_lm || config_.isImage()))
    report.correctTokens = countArgmaxHits(batch);  // before the logits become their gradient
  const double lossSum = backward_->crossEntropy(a.logits.data(), a.logits.data(), batch.targets, batch.scored, R, config_.vocab_size,
                                                 1.0f / static_cast<float>(scored));
  report.loss = lossSum / scored;
  report.scoredTokens = scored;
  if (!std::isfinite(report.loss)) throw Error("training loss is not finite (the run diverged: lower the learning rate)");
}

// From the gradient of the embeddings' output (blockBackward_.residual()) back through the
// embedding norm (embedding_norm) to the token, position and token type tables.
void TrainModel::embeddingBackward(const ParamView& weights, const ParamView& g, const BatchView& batch) {
  const ModelConfig& c = config_;
  const int B = batch.batch, T = batch.steps, R = B * T, C = c.n_embd;
  Activations& a = *acts_;
  const float* dEmbedded = blockBackward_.residual().data();
  if (c.embedding_norm) {
    float* dRaw = a.dHeadA.sized(*forward_, (size_t)R * C);
    forward_->zero(dRaw, (size_t)R * C);
    blockBackward_.norm(dRaw, g.lnEmbWeight, g.lnEmbBias, dEmbedded, a.embeddedRaw.data(), weights.lnEmbWeight, R);
    dEmbedded = dRaw;
  }
  backward_->embed(g.wte, c.hasLearnedPositions() ? g.wpe : nullptr, dEmbedded, batch.inputs, R, T, C);
  if (c.isImage())  // patch.weight's gradient: the patch rows against the embeddings' gradient
    backward_->matmul(nullptr, g.patchWeight, nullptr, dEmbedded, a.patchIn.data(), weights.patchWeight, R, c.patchDim(), C);
  if (c.hasTokenTypes()) {  // the type table is an embedding looked up by the type ids
    const std::vector<int> types = block_.tokenTypesOf(batch.inputs, B, T);
    backward_->embed(g.wtt, nullptr, dEmbedded, types.data(), R, T, C);
  }
}

// mlm_head: from the logits' gradient back through the head (the output bias, the tied
// unembedding, the head's norm, activation and dense layer) to that of the head's input, in dIn.
void TrainModel::headBackward(const ParamView& weights, const ParamView& g, int R, float* dIn) {
  const int C = config_.n_embd, V = config_.vocab_size;
  const size_t RC = (size_t)R * C;
  Backend& fw = *forward_;
  Activations& a = *acts_;
  const float* dlogits = a.logits.data();
  float* dOut = a.dHeadA.sized(fw, RC);
  float* dAct = a.dHeadB.sized(fw, RC);
  fw.zero(dOut, RC);
  backward_->matmulTransposed(dOut, weights.lmHead ? g.lmHead : g.wte, dlogits, a.headOut.data(), weights.unembedding(), R, C, V);
  outputBiasBackward(g.mlmBias, R);
  fw.zero(dAct, RC);
  blockBackward_.norm(dAct, g.mlmLnWeight, g.mlmLnBias, dOut, a.headAct.data(), weights.mlmLnWeight, R);
  float* dPre = dOut;
  fw.zero(dPre, RC);
  backward_->activation(dPre, dAct, a.headPre.data(), RC, config_.activation);
  const float* headIn = config_.hasFinalNorm() ? a.normedF.data() : a.final.data();
  fw.zero(dIn, RC);
  backward_->matmul(dIn, g.mlmDenseWeight, g.mlmDenseBias, dPre, headIn, weights.mlmDenseWeight, R, C, C);
}

void TrainModel::outputBiasBackward(float* dbias, int R) {
  Backend& fw = *forward_;
  Activations& a = *acts_;
  // logits = ones (R, 1) . w (1, V) + bias, so the bias's gradient sums the rows of dlogits.
  if (a.ones.size() != (size_t)R) {
    a.ones.resize(fw, R);
    const std::vector<float> ones(R, 1.0f);
    fw.upload(a.ones.data(), ones.data(), R);
  }
  float* unused = a.biasScratch.sized(fw, config_.vocab_size);
  backward_->matmul(nullptr, unused, dbias, a.logits.data(), a.ones.data(), unused, R, 1, config_.vocab_size);
}

void TrainModel::unembeddingBackward(const ParamView& weights, const ParamView& g, int R) {
  const int C = config_.n_embd, V = config_.vocab_size;
  const size_t RC = (size_t)R * C;
  Activations& a = *acts_;
  const float* dlogits = a.logits.data();
  float* dUnembedding = weights.lmHead ? g.lmHead : g.wte;
  Floats& dx = blockBackward_.residual();
  zeroVector(*forward_, dx, RC);
  if (config_.isImage()) outputBiasBackward(g.lmHeadBias, R);
  if (config_.mlm_head) {
    float* dIn = a.dnormedF.sized(*forward_, RC);
    headBackward(weights, g, R, dIn);
    if (config_.hasFinalNorm()) blockBackward_.norm(dx.data(), g.lnfWeight, g.lnfBias, dIn, a.final.data(), weights.lnfWeight, R);
    else forward_->add(dx.data(), dIn, RC);
  } else if (config_.hasFinalNorm()) {
    zeroVector(*forward_, a.dnormedF, RC);
    backward_->matmulTransposed(a.dnormedF.data(), dUnembedding, dlogits, a.normedF.data(), weights.unembedding(), R, C, V);
    blockBackward_.norm(dx.data(), g.lnfWeight, g.lnfBias, a.dnormedF.data(), a.final.data(), weights.lnfWeight, R);
  } else {
    backward_->matmulTransposed(dx.data(), dUnembedding, dlogits, a.final.data(), weights.unembedding(), R, C, V);
  }
}

}  // namespace tscope

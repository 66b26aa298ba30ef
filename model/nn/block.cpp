// The block forward (see block.h): attention per sequence over its own K/V store, the residual add
// with the next sublayer's norm fused into it (Backend::addNorm: CUDA fuses it, the CPU default is
// add then norm), a dense GELU/ReLU/SwiGLU MLP or a mixture of experts routed on the host per
// sequence and dispatched with gatherRows / scatterAddRows. The dense path allocates nothing.
// qk_norm RMSNorms each head's q and k in the qkv buffer before the attention op rotates them.
#include "model/nn/block.h"

#include <cmath>

#include "model/core/error.h"
#include "model/nn/positional.h"

namespace tscope {

void Floats::resize(Backend& backend, size_t n) {
  onHost_ = backend.isHost();
  if (onHost_) host_.resize(n);
  else if (device_.size() < n) device_ = backend.allocate(n);
  size_ = n;
}

void Floats::copyFrom(Backend& backend, const float* src, size_t n) {
  resize(backend, n);
  if (n) backend.copy(data(), src, n);
}

ConstLayerWeights constLayer(const LayerWeights& w) {
  auto constFf = [](const FeedForwardWeights& f) {
    return ConstFeedForwardWeights{f.fcWeight, f.fcBias, f.gateWeight, f.gateBias, f.projWeight, f.projBias, f.fcPacked, f.gatePacked, f.projPacked};
  };
  ConstLayerWeights c{w.ln1Weight,
                      w.ln1Bias,
                      w.qkvWeight,
                      w.qkvBias,
                      w.qNormWeight,
                      w.kNormWeight,
                      w.attnProjWeight,
                      w.attnProjBias,
                      w.ln2Weight,
                      w.ln2Bias,
                      constFf(w.mlp),
                      w.routerWeight,
                      {},
                      w.qkvPacked,
                      w.attnProjPacked,
                      w.routerPacked,
                      constFf(w.sharedExpert),
                      w.sharedExpertGate};
  c.lnxWeight = w.lnxWeight;
  c.lnxBias = w.lnxBias;
  c.crossQWeight = w.crossQWeight;
  c.crossQBias = w.crossQBias;
  c.crossKvWeight = w.crossKvWeight;
  c.crossKvBias = w.crossKvBias;
  c.crossProjWeight = w.crossProjWeight;
  c.crossProjBias = w.crossProjBias;
  c.experts.reserve(w.experts.size());
  for (const auto& e : w.experts) c.experts.push_back(constFf(e));
  return c;
}

const float* hostView(Backend& backend, const float* data, size_t n, std::vector<float>& copy) {
  if (backend.isHost()) return data;
  copy.resize(n);
  if (n) backend.download(copy.data(), data, n);
  return copy.data();
}

BlockForward::BlockForward(const ModelConfig& config, Backend& backend) : config_(config), backend_(&backend) {
  if (config_.position_encoding == PositionEncoding::Alibi) alibiSlopes_ = alibiSlopes(config_.n_head);
  if (config_.position_encoding == PositionEncoding::Rope && config_.hasRopeScaling()) ropeFrequencies_ = ropeInverseFrequencies(config_);
  if (config_.isMoe()) moeParams_ = moeRoutingParams(config_);
  if (config_.position_encoding == PositionEncoding::Sinusoidal) {
    const auto table = fixedPositionTable(config_);  // 2-D sin-cos for an image model
    sinusoids_ = backend.allocate(table.size());
    backend.upload(sinusoids_.data(), table.data(), table.size());
  }
  if (config_.hasVariantAttention()) ownVariant_ = config_.attentionVariantAsRun();
}

const float* BlockForward::positionTable(const float* wpe) const {
  if (whatIfs_.has(WhatIfKind::NoPositions)) return nullptr;
  if (config_.hasLearnedPositions()) return wpe;
  return sinusoids_.size() ? sinusoids_.data() : nullptr;
}

void BlockForward::embed(float* x, const int* hostTokens, const float* wte, const float* wpe, int B, int T, int pos0, const PackedMatrix& wtePacked) {
  const int C = config_.n_embd;
  const float* positions = positionTable(wpe);
  for (int b = 0; b < B; ++b) {
    float* out = x + (size_t)b * T * C;
    const int* tokens = hostTokens + (size_t)b * T;
    if (wtePacked) backend_->embedPacked(out, tokens, wtePacked, positions, T, pos0);
    else backend_->embed(out, tokens, wte, positions, T, C, pos0);
  }
}

std::vector<int> BlockForward::tokenTypesOf(const int* hostTokens, int B, int T) const {
  std::vector<int> types;
  types.reserve((size_t)B * T);
  for (int b = 0; b < B; ++b) {
    const std::vector<int> sequence = tokenTypes(config_, hostTokens + (size_t)b * T, T);
    types.insert(types.end(), sequence.begin(), sequence.end());
  }
  return types;
}

void BlockForward::addTokenTypes(float* x, const int* hostTokens, const float* wtt, float* scratch, int B, int T) {
  const int C = config_.n_embd;
  const std::vector<int> types = tokenTypesOf(hostTokens, B, T);
  backend_->gatherRows(scratch, wtt, types.data(), B * T, C);
  backend_->add(x, scratch, (size_t)B * T * C);
}

void BlockForward::addPatches(float* x, const float* hostPatchRows, const float* patch, float* scratchIn, float* scratchOut, int rows) {
  const int K = config_.patchDim(), C = config_.n_embd;
  backend_->upload(scratchIn, hostPatchRows, (size_t)rows * K);
  backend_->matmul(scratchOut, scratchIn, patch, nullptr, rows, K, C);
  backend_->add(x, scratchOut, (size_t)rows * C);
}

void BlockForward::linear(float* out, const float* in, const float* weight, const PackedMatrix& half, const float* bias, int rows, int K, int N) {
  if (half) backend_->matmulPacked(out, in, half, bias, rows);
  else backend_->matmul(out, in, weight, bias, rows, K, N);
}

AttentionShape BlockForward::attentionShape(int T, int pos0, int cacheRows) const {
  AttentionShape shape{T, pos0, config_.n_head, config_.headDim(), cacheRows};
  shape.nKvHead = config_.kvHeads();
  shape.causal = config_.causal;
  shape.window = config_.slidingWindow();
  shape.ropeBase = config_.position_encoding == PositionEncoding::Rope ? config_.position_base : 0.0;
  shape.ropeFrequencies = ropeFrequencies_.empty() ? nullptr : ropeFrequencies_.data();
  shape.alibiSlopes = alibiSlopes_.empty() ? nullptr : alibiSlopes_.data();
  if (!whatIfs_.empty()) {
    if (whatIfs_.has(WhatIfKind::NoCausalMask)) shape.causal = false;
    if (whatIfs_.has(WhatIfKind::NoPositions)) {
      shape.ropeBase = 0;
      shape.ropeFrequencies = nullptr;
      shape.alibiSlopes = nullptr;
    }
    if (whatIfs_.has(WhatIfKind::NoScale)) shape.scoreScale = 1.0;
  }
  return shape;
}

void BlockForward::norm(float* out, const float* in, const float* weight, const float* bias, int rows) {
  const float eps = static_cast<float>(config_.layer_norm_epsilon);
  if (!config_.hasNorm()) {
    if (out != in) backend_->copy(out, in, (size_t)rows * config_.n_embd);
  } else if (config_.norm == NormKind::RmsNorm) backend_->rmsNorm(out, in, weight, rows, config_.n_embd, eps);
  else backend_->layerNorm(out, in, weight, bias, rows, config_.n_embd, eps);
}

void BlockForward::embeddingNorm(float* x, float* scratch, const float* weight, const float* bias, int rows) {
  norm(scratch, x, weight, bias, rows);
  backend_->copy(x, scratch, (size_t)rows * config_.n_embd);
}

const float* BlockForward::unembeddingInput(const float* x, float* out, bool normed, const float* weight, const float* bias, int rows,
                                            const OutputHead& head, float* headScratch, const HeadActivations* keep) {
  const float* in = x;
  if (config_.hasFinalNorm() && !whatIfs_.has(WhatIfKind::SkipFinalNorm)) {
    if (!normed) norm(out, x, weight, bias, rows);
    in = out;
  }
  if (!config_.mlm_head) return in;
  // BERT's BertPredictionHeadTransform: dense, the activation (hidden_act), LayerNorm.
  const int C = config_.n_embd;
  if (keep) {  // the same head, its steps kept for the backward
    const size_t n = (size_t)rows * C;
    backend_->matmul(keep->pre, in, head.denseWeight, head.denseBias, rows, C, C);
    backend_->copy(keep->act, keep->pre, n);
    backend_->activate(keep->act, n, config_.activation);
    norm(keep->out, keep->act, head.normWeight, head.normBias, rows);
    return keep->out;
  }
  if (!head.denseWeight || !headScratch) throw Error("mlm_head: the head's weights and scratch are missing");
  backend_->matmulActivate(headScratch, in, head.denseWeight, head.denseBias, rows, C, C, config_.activation);
  norm(out, headScratch, head.normWeight, head.normBias, rows);
  return out;
}

void BlockForward::logits(float* out, const float* in, const float* unembedding, const PackedMatrix& half, const OutputHead& head, int rows) {
  const int C = config_.n_embd, V = config_.vocab_size;
  if (half) backend_->matmulPacked(out, in, half, nullptr, rows);
  else backend_->matmulTransposed(out, in, unembedding, rows, C, V);
  if (!head.bias) return;
  for (int r = 0; r < rows; ++r) backend_->add(out + (size_t)r * V, head.bias, V);
}

void BlockForward::qkNorm(float* qkv, const ConstLayerWeights& w, int rows) {
  const float eps = static_cast<float>(config_.layer_norm_epsilon);
  backend_->headRmsNorm(qkv, w.qNormWeight, w.kNormWeight, rows, config_.n_head, config_.kvHeads(), config_.headDim(), config_.qkvDim(), eps);
}

// The residual add after a sublayer. Pre-norm: x += y, and when a norm of x comes next one fused
// addNorm also leaves it in next.out (returns true). Post-norm: x = norm(x + y) with the
// sublayer's own norm (postWeight) through normScratch; keepSum keeps x + y.
bool BlockForward::residualAdd(float* x, const float* y, int R, const NextNorm& next, const float* postWeight, const float* postBias,
                               float* normScratch, float* keepSum) {
  const int C = config_.n_embd;
  const size_t RC = (size_t)R * C;
  const float eps = static_cast<float>(config_.layer_norm_epsilon);
  if (!config_.pre_norm) {
    backend_->addNorm(x, y, normScratch, postWeight, postBias, R, C, eps, config_.norm);
    if (keepSum) backend_->copy(keepSum, x, RC);
    backend_->copy(x, normScratch, RC);
    return false;
  }
  if (next.weight) {
    backend_->addNorm(x, y, next.out, next.weight, next.bias, R, C, eps, config_.norm);
    return true;
  }
  backend_->add(x, y, RC);
  return false;
}

// out (rows, C) = proj(act(in Wfc + bfc)) or, for SwiGLU, proj(silu(in Wgate + bgate) * (in Wfc + bfc)).
// With act (kept), hidden keeps the pre-activation; else it is activated in place (fused matmul).
void BlockForward::feedForward(const ConstFeedForwardWeights& w, const float* in, int rows, float* hidden, float* gate, float* act, float* out,
                               int width) {
  const int C = config_.n_embd, F = width > 0 ? width : config_.dFF();
  const size_t n = (size_t)rows * F;
  float* activated = act ? act : hidden;
  if (config_.activation == Activation::SwiGlu) {
    linear(hidden, in, w.fcWeight, w.fcPacked, w.fcBias, rows, C, F);
    linear(gate, in, w.gateWeight, w.gatePacked, w.gateBias, rows, C, F);
    if (act) backend_->copy(act, hidden, n);
    backend_->swiglu(activated, gate, n);
  } else if (act || w.fcPacked) {
    linear(hidden, in, w.fcWeight, w.fcPacked, w.fcBias, rows, C, F);
    if (act) backend_->copy(act, hidden, n);
    backend_->activate(activated, n, config_.activation);
  } else {
    backend_->matmulActivate(hidden, in, w.fcWeight, w.fcBias, rows, C, F, config_.activation);
  }
  linear(out, activated, w.projWeight, w.projPacked, w.projBias, rows, F, C);
}

// out (R, C) = sum over each row's kept assignments of gate * expert(in row). Each of the B
// sequences of T rows is routed on its own from the (R, E) router logits. With a shared expert,
// every row also adds sigmoid(in row . shared_expert_gate) * shared_expert(in row).
void BlockForward::mixtureOfExperts(const ConstLayerWeights& w, const float* in, float* out, int B, int T, bool keepActivated, MoeActivations& m) {
  const int C = config_.n_embd, E = config_.n_experts, F = config_.dFF(), R = B * T;
  const bool swiglu = config_.activation == Activation::SwiGlu;
  float* routerLogits = m.routerLogits.sized(*backend_, (size_t)R * E);
  linear(routerLogits, in, w.routerWeight, w.routerPacked, nullptr, R, C, E);
  const float* hostLogits = hostView(*backend_, routerLogits, (size_t)R * E, m.routerLogitsHost);
  m.routing.resize(B);
  m.experts.resize(E);
  for (auto& ex : m.experts) {
    ex.rows.clear();
    ex.gates.clear();
    ex.sequence.clear();
    ex.assignment.clear();
  }
  for (int b = 0; b < B; ++b) {
    m.sequenceLogits.assign(hostLogits + (size_t)b * T * E, hostLogits + (size_t)(b + 1) * T * E);
    m.routing[b] = routeTokens(m.sequenceLogits, T, moeParams_);
    const MoeRouting& routing = m.routing[b];
    for (size_t i = 0; i < routing.assignments.size(); ++i) {
      const MoeAssignment& as = routing.assignments[i];
      if (as.dropped) continue;
      ExpertActivations& ex = m.experts[as.expert];
      ex.rows.push_back(b * T + as.token);
      ex.gates.push_back(as.gate);
      ex.sequence.push_back(b);
      ex.assignment.push_back(static_cast<int>(i));
    }
  }
  backend_->zero(out, (size_t)R * C);
  for (ExpertActivations& ex : m.experts) {
    const int n = static_cast<int>(ex.rows.size());
    if (n == 0) continue;
    const size_t e = &ex - m.experts.data();
    float* expertIn = ex.in.sized(*backend_, (size_t)n * C);
    float* expertOut = ex.out.sized(*backend_, (size_t)n * C);
    backend_->gatherRows(expertIn, in, ex.rows.data(), n, C);
    const size_t nF = (size_t)n * F;
    feedForward(w.experts[e], expertIn, n, ex.hidden.sized(*backend_, nF), swiglu ? ex.gate.sized(*backend_, nF) : nullptr,
                keepActivated ? ex.act.sized(*backend_, nF) : nullptr, expertOut);
    backend_->scatterAddRows(out, expertOut, ex.rows.data(), ex.gates.data(), n, C);
  }
  if (config_.hasSharedExpert()) sharedExpert(w, in, out, R, keepActivated, m);
}

// out (R, C) += sigmoid(in . gate) * sharedExpert(in), row by row (the gates go through the host,
// as the routed experts' do, so scatterAddRows scales and adds the rows).
void BlockForward::sharedExpert(const ConstLayerWeights& w, const float* in, float* out, int R, bool keepActivated, MoeActivations& m) {
  const int C = config_.n_embd, S = config_.moe_shared_expert_d_ff;
  ExpertActivations& sh = m.shared;
  float* gateLogit = m.sharedGateLogit.sized(*backend_, (size_t)R);
  backend_->matmul(gateLogit, in, w.sharedExpertGate, nullptr, R, C, 1);
  const float* hostLogit = hostView(*backend_, gateLogit, (size_t)R, m.sharedGateLogitHost);
  m.sharedGates.resize(R);
  for (int r = 0; r < R; ++r) m.sharedGates[r] = static_cast<float>(1.0 / (1.0 + std::exp(-(double)hostLogit[r])));
  sh.rows.resize(R);
  for (int r = 0; r < R; ++r) sh.rows[r] = r;
  const size_t RS = (size_t)R * S;
  float* sharedOut = sh.out.sized(*backend_, (size_t)R * C);
  feedForward(w.sharedExpert, in, R, sh.hidden.sized(*backend_, RS),
              config_.activation == Activation::SwiGlu ? sh.gate.sized(*backend_, RS) : nullptr,
              keepActivated ? sh.act.sized(*backend_, RS) : nullptr, sharedOut, S);
  backend_->scatterAddRows(out, sharedOut, sh.rows.data(), m.sharedGates.data(), R, C);
}

void BlockForward::variantAttention(float* attn, const float* qkv, const float* keys, const float* values, const AttentionShape& shape,
                                    const AttentionVariantParams& params, float* probs) {
  const int T = shape.T, pos0 = shape.pos0, n = shape.keys(), H = shape.nHead, D = shape.headDim, QKV = shape.qkvDim(), KV = shape.kvDim(),
            group = H / shape.kvHeads();
  if (const std::string problem = attentionVariantProblem(params, n); !problem.empty()) throw Error(problem);
  std::vector<float> hostQkv((size_t)T * QKV), hostK((size_t)n * KV), hostV((size_t)n * KV), hostProbs;
  backend_->download(hostQkv.data(), qkv, hostQkv.size());
  backend_->download(hostK.data(), keys, hostK.size());
  backend_->download(hostV.data(), values, hostV.size());
  if (probs) {
    hostProbs.resize((size_t)H * T * n);
    backend_->download(hostProbs.data(), probs, hostProbs.size());
  }
  // Query rows before pos0 are zeros: a causal variant's row p reads only keys <= p and its own query.
  std::vector<float> q((size_t)n * D, 0.0f), k(q.size()), v(q.size()), out(q.size());
  const int A = config_.attnDim();
  editRows(attn, T, A, [&](float* rows) {
    for (int h = 0; h < H; ++h) {
      const int kv = (h / group) * D;
      for (int t = 0; t < T; ++t) std::copy_n(hostQkv.data() + (size_t)t * QKV + h * D, D, q.data() + (size_t)(pos0 + t) * D);
      for (int j = 0; j < n; ++j) {
        std::copy_n(hostK.data() + (size_t)j * KV + kv, D, k.data() + (size_t)j * D);
        std::copy_n(hostV.data() + (size_t)j * KV + kv, D, v.data() + (size_t)j * D);
      }
      const HeadQkv head{q.data(), k.data(), v.data(), n, D, shape.causal};
      attentionVariantFast(head, params, out.data());
      for (int t = 0; t < T; ++t) std::copy_n(out.data() + (size_t)(pos0 + t) * D, D, rows + (size_t)t * A + h * D);
      if (probs) {
        const VariantResult result = attentionVariantReference(head, params);
        std::copy_n(result.map.data() + (size_t)pos0 * n, (size_t)T * n, hostProbs.data() + (size_t)h * T * n);
      }
    }
  });
  if (probs) backend_->upload(probs, hostProbs.data(), hostProbs.size());
}

template <typename Edit>
void BlockForward::editRows(float* rows, int R, int width, Edit&& edit) {
  const size_t n = (size_t)R * width;
  if (backend_->isHost()) {
    edit(rows);
    return;
  }
  editHost_.resize(n);
  backend_->download(editHost_.data(), rows, n);
  edit(editHost_.data());
  backend_->upload(rows, editHost_.data(), n);
}

void BlockForward::crossKeysValues(const ConstLayerWeights& w, const float* encoderOut, int rows, float* kv) {
  backend_->matmul(kv, encoderOut, w.crossKvWeight, w.crossKvBias, rows, config_.n_embd, 2 * config_.kvDim());
}

void BlockForward::attentionOnly(float* out, float* probs, float* scores, float* qkv, float* keys, float* values, int T, int layer) {
  const AttentionShape shape = attentionShape(T, 0, T);
  backend_->attention(out, probs, scores, qkv, keys, values, shape);
  if (ownVariant_) variantAttention(out, qkv, keys, values, shape, *ownVariant_, probs);
  if (whatIfAt(WhatIfKind::UniformAttention, layer)) uniformAttention(out, probs, scores, values, shape);
}

bool BlockForward::layer(const ConstLayerWeights& w, const NextNorm& next, int B, const AttentionShape& shape, float* keys, float* values, float* x,
                         bool normed, const LayerTensors& t) {
  const int C = config_.n_embd, A = config_.attnDim(), T = shape.T, R = B * T, QKV = config_.qkvDim();
  const size_t RC = (size_t)R * C;
  if (t.in) backend_->copy(t.in, x, RC);
  // Attention sublayer. Pre-norm: x = x + attn(norm(x)); post-norm: x = norm(x + attn(x)).
  const float* attnIn = x;
  if (config_.pre_norm) {
    if (!normed) norm(t.normed1, x, w.ln1Weight, w.ln1Bias, R);
    attnIn = t.normed1;
  }
  linear(t.qkv, attnIn, w.qkvWeight, w.qkvPacked, w.qkvBias, R, C, QKV);
  if (config_.qk_norm) {
    if (t.qkvRaw) backend_->copy(t.qkvRaw, t.qkv, (size_t)R * QKV);
    qkNorm(t.qkv, w, R);
  }
  if (t.qkvKept) backend_->copy(t.qkvKept, t.qkv, (size_t)R * QKV);
  const AttentionVariantParams* variant = t.attentionVariant ? t.attentionVariant : ownVariant_ ? &*ownVariant_ : nullptr;
  for (int b = 0; b < B; ++b) {
    // The backend's attention writes this sequence's K/V rows (and RoPE-rotates q and k); a variant
    // then replaces its output.
    backend_->attention(t.attn + (size_t)b * T * A, b == 0 ? t.probs : nullptr, b == 0 ? t.scores : nullptr, t.qkv + (size_t)b * T * QKV, keys,
                        values, shape);
    if (variant)
      variantAttention(t.attn + (size_t)b * T * A, t.qkv + (size_t)b * T * QKV, keys, values, shape, *variant,
                       b == 0 && !t.attentionVariant ? t.probs : nullptr);
    if (whatIfAt(WhatIfKind::UniformAttention, t.layerIndex))
      uniformAttention(t.attn + (size_t)b * T * A, b == 0 ? t.probs : nullptr, b == 0 ? t.scores : nullptr, values, shape);
  }
  const Interventions* edits = t.interventions;
  if (edits && edits->touchesHeads(t.layerIndex)) {
    if (B != 1) throw Error("interventions apply to one sequence at a time");
    editRows(t.attn, R, A, [&](float* rows) { edits->applyToHeads(t.layerIndex, false, rows, T, shape.pos0, A, config_.headDim()); });
  }
  linear(t.out, t.attn, w.attnProjWeight, w.attnProjPacked, w.attnProjBias, R, A, C);
  if (t.attnProjected) backend_->copy(t.attnProjected, t.out, RC);
  const NextNorm beforeFeedForward = config_.hasFeedForward() ? NextNorm{w.ln2Weight, w.ln2Bias, t.normed2} : next;
  const bool cross = w.hasCross();
  // Each sublayer replaces x instead of adding to it: a model without residuals, or the what-if.
  const bool skipResidual = !config_.residual || whatIfAt(WhatIfKind::SkipResidual, t.layerIndex);
  if (skipResidual) backend_->zero(x, RC);
  const NextNorm afterAttention = cross ? NextNorm{w.lnxWeight, w.lnxBias, t.normedX} : beforeFeedForward;
  normed = residualAdd(x, t.out, R, afterAttention, w.ln1Weight, w.ln1Bias, t.normed1, t.sum1);
  if (t.mid) backend_->copy(t.mid, x, RC);
  if (cross) {
    // Cross-attention sublayer: queries from the decoder, keys and values from the encoder.
    if (!t.crossKv || t.crossS < 1) throw Error("an encoder-decoder model's decoder reads the encoder's output: encode a source first");
    const int H = config_.n_head, Hkv = config_.kvHeads(), D = config_.headDim(), S = t.crossS;
    const float* crossIn = x;
    if (config_.pre_norm) {
      if (!normed) norm(t.normedX, x, w.lnxWeight, w.lnxBias, R);
      crossIn = t.normedX;
    }
    backend_->matmul(t.crossQ, crossIn, w.crossQWeight, w.crossQBias, R, C, A);
    for (int b = 0; b < B; ++b)
      backend_->crossAttention(t.crossAttn + (size_t)b * T * A, b == 0 ? t.crossProbs : nullptr, t.crossQ + (size_t)b * T * A,
                               t.crossKv + (size_t)b * S * 2 * config_.kvDim(), T, S, H, Hkv, D);
    if (edits && edits->touchesHeads(t.layerIndex, true)) {
      if (B != 1) throw Error("interventions apply to one sequence at a time");
      editRows(t.crossAttn, R, A, [&](float* rows) { edits->applyToHeads(t.layerIndex, true, rows, T, shape.pos0, A, D); });
    }
    backend_->matmul(t.out, t.crossAttn, w.crossProjWeight, w.crossProjBias, R, A, C);
    if (skipResidual) backend_->zero(x, RC);
    normed = residualAdd(x, t.out, R, beforeFeedForward, w.lnxWeight, w.lnxBias, t.normedX, t.sumX);
    if (t.midX) backend_->copy(t.midX, x, RC);
  }
  if (!config_.hasFeedForward()) return normed;
  // Feed-forward sublayer (dense MLP or mixture of experts), in the same pre/post form.
  const float* ffIn = x;
  if (config_.pre_norm) {
    if (!normed) norm(t.normed2, x, w.ln2Weight, w.ln2Bias, R);
    ffIn = t.normed2;
  }
  if (config_.isMoe()) mixtureOfExperts(w, ffIn, t.out, B, T, t.keepActivated, *t.moe);
  else feedForward(w.mlp, ffIn, R, t.hidden, t.gate, t.keepActivated ? t.act : nullptr, t.out);
  if (edits && edits->touchesMlp(t.layerIndex)) {
    if (B != 1) throw Error("interventions apply to one sequence at a time");
    editRows(t.out, R, C, [&](float* rows) { edits->applyToMlp(t.layerIndex, rows, T, shape.pos0, C); });
  }
  if (whatIfAt(WhatIfKind::SkipMlp, t.layerIndex)) backend_->zero(t.out, RC);
  if (skipResidual) backend_->zero(x, RC);
  return residualAdd(x, t.out, R, next, w.ln2Weight, w.ln2Bias, t.normed2, t.sum2);
}

}  // namespace tscope

// Inference around the block forward (block.h): embedding, trace capture (attention maps,
// residuals, logit lens, MoE routing) for the layers the caller asks for, the unembedding. The
// logit lens of every captured layer goes through the unembedding together with the final
// logits: one pass over it, not one per layer. The dense per-token decode path allocates nothing once the scratch buffers have grown to
// the largest T seen; MoE routing runs on the host over (T, E) router logits.
#include "model/nn/transformer.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "model/core/error.h"
#include "model/nn/trace_views.h"

namespace tscope {

Transformer::Transformer(const Weights& weights, Backend& backend) : config_(weights.config()), backend_(&backend), block_(config_, backend) {
  // On the host the forward reads the weights where they are (the owned arena or the mapped file).
  // A device gets one copy in its memory; the host pages are left to the page cache: mapped file
  // pages are clean, so the kernel drops them under memory pressure without writing anything.
  // Weights held as 16-bit halves stay halves on the host (the backends' matmulPacked); a device
  // gets them as float32.
  ModelParams<const float> params = weights;
  if (!backend.isHost()) {
    ownedWeights_ = backend.allocate(weights.totalFloats());
    std::vector<float> converted;
    for (size_t i = 0; i < weights.layout().size(); ++i) {
      const ParamSpec& spec = weights.layout()[i];
      backend.upload(ownedWeights_.data() + spec.offset, floatLayout(weights.tensor(i), weights.packed(i), converted), spec.numel());
    }
    params = weights.placedAt<const float>(ownedWeights_.data());
  }
  wte_ = params.wte;
  wtePacked_ = params.wtePacked;
  unembedding_ = params.unembedding();
  unembeddingPacked_ = params.unembeddingPacked();
  lnfWeight_ = params.lnfWeight;
  lnfBias_ = params.lnfBias;
  lnEmbWeight_ = params.lnEmbWeight;
  lnEmbBias_ = params.lnEmbBias;
  head_ = OutputHead::of(params);
  layers_ = params.layers;
  positions_ = block_.positionTable(params.wpe);
  tokenTypeTable_ = params.wtt;
  patchWeight_ = params.patchWeight;
  if (config_.isEncoderDecoder()) {
    encoderBlock_.emplace(encoderStackConfig(config_), backend);
    encoderLayers_ = params.encoderLayers;
    encoderPositions_ = encoderBlock_->positionTable(params.encWpe);
    encoderLnfWeight_ = params.encLnfWeight;
    encoderLnfBias_ = params.encLnfBias;
    crossKv_.resize(config_.n_layer);
  }
}

void Transformer::encode(std::span<const int> source, EncoderTrace* trace) {
  const auto started = std::chrono::steady_clock::now();
  if (!config_.isEncoderDecoder()) throw Error("this model has no encoder (n_encoder_layer is 0): it reads a prompt, not a source");
  const int S = static_cast<int>(source.size()), H = config_.n_head, KV = config_.kvDim();
  const int Le = config_.n_encoder_layer, V = config_.vocab_size;
  if (S == 0) throw Error("the source is empty: an encoder-decoder model needs at least one source token");
  if (S > config_.n_positions)
    throw Error("the source is " + std::to_string(S) + " tokens but the encoder holds at most " + std::to_string(config_.n_positions));
  for (int id : source)
    if (id < 0 || id >= V) throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  encodedLength_ = 0;  // nothing valid until the end
  ensureScratch(S);
  if (encoderKeys_.size() < (size_t)S * KV) {
    encoderKeys_ = backend_->allocate((size_t)S * KV);
    encoderValues_ = backend_->allocate((size_t)S * KV);
  }
  if (trace) {
    *trace = EncoderTrace{S, Le, H, std::vector<int>(source.begin(), source.end()), {}, {}, 0};
    trace->attn.resize((size_t)Le * H * S * S);
    if (config_.isMoe()) trace->moe.resize(Le);
    if (attnProbs_.size() < (size_t)H * S * S) attnProbs_ = backend_->allocate((size_t)H * S * S);
  }
  BlockForward& block = *encoderBlock_;
  float* x = residual_.data();
  block.embed(x, source.data(), wte_, encoderPositions_, 1, S, 0, wtePacked_);
  const AttentionShape shape = block.attentionShape(S, 0, S);
  LayerTensors t = sharedScratch();
  t.probs = trace ? attnProbs_.data() : nullptr;
  bool normed = false;
  for (int l = 0; l < Le; ++l) {
    const ConstLayerWeights* next = l + 1 < Le ? &encoderLayers_[l + 1] : nullptr;
    const NextNorm nextNorm{next ? next->ln1Weight : encoderLnfWeight_, next ? next->ln1Bias : encoderLnfBias_, normed_.data()};
    normed = block.layer(encoderLayers_[l], nextNorm, 1, shape, encoderKeys_.data(), encoderValues_.data(), x, normed, t);
    if (trace) {
      backend_->download(trace->attn.data() + (size_t)l * H * S * S, attnProbs_.data(), (size_t)H * S * S);
      if (config_.isMoe()) trace->moe[l] = std::move(moe_.routing[0]);
    }
    if (layerCallback_ && !layerCallback_(l + 1, Le + config_.n_layer)) throw Cancelled();
  }
  // The encoder's output (its final norm, pre-norm models), then every decoder layer's keys | values of it.
  const float* encoderOut = block.unembeddingInput(x, normed_.data(), normed, encoderLnfWeight_, encoderLnfBias_, S);
  for (int l = 0; l < config_.n_layer; ++l) {
    if (crossKv_[l].size() < (size_t)S * 2 * KV) crossKv_[l] = backend_->allocate((size_t)S * 2 * KV);
    block_.crossKeysValues(layers_[l], encoderOut, S, crossKv_[l].data());
  }
  encodedLength_ = S;
  if (trace) trace->encodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

// Every layer (of either stack) writes the same scratch; normed_ is each sublayer's (pre-)norm.
LayerTensors Transformer::sharedScratch() {
  LayerTensors t;
  t.normed1 = t.normed2 = normed_.data();
  t.qkv = qkv_.data();
  t.attn = attnOut_.data();
  t.out = projected_.data();
  t.hidden = hidden_.data();
  t.gate = gate_.data();
  t.moe = &moe_;
  return t;
}

// A decoder layer's cross-attention inputs and scratch (encoder-decoder models).
void Transformer::setCrossTensors(LayerTensors& t, int layer, bool captureProbs) {
  if (!config_.isEncoderDecoder()) return;
  if (encodedLength_ == 0) throw Error("an encoder-decoder model needs a source: encode one before running the decoder");
  t.crossKv = crossKv_[layer].data();
  t.crossS = encodedLength_;
  t.normedX = normed_.data();
  t.crossQ = crossQ_.data();
  t.crossAttn = crossAttn_.data();
  t.crossProbs = captureProbs ? crossProbs_.data() : nullptr;
}

void Transformer::setMoeRouting(const MoeRoutingParams& params) {
  if (!config_.isMoe()) throw Error("this model has no mixture-of-experts layers");
  if (params.experts != config_.n_experts) throw Error("the number of experts is fixed by the weights (n_experts)");
  if (params.topK < 1 || params.topK > params.experts)
    throw Error("moe_top_k (" + std::to_string(params.topK) + ") must be between 1 and n_experts (" + std::to_string(params.experts) + ")");
  if (params.expertChoice && !(params.capacityFactor > 0)) throw Error("moe_capacity_factor must be positive for expert_choice routing");
  block_.setMoeRouting(params);
}

void Transformer::ensureScratch(int T) {
  if (T <= scratchT_) return;
  const size_t C = config_.n_embd, A = config_.attnDim(), F = config_.dFF(), V = config_.vocab_size;
  residual_ = backend_->allocate(T * C);
  normed_ = backend_->allocate(T * C);
  qkv_ = backend_->allocate(T * config_.qkvDim());
  attnOut_ = backend_->allocate(T * A);
  projected_ = backend_->allocate(T * C);
  hidden_ = backend_->allocate(T * F);
  if (config_.activation == Activation::SwiGlu) gate_ = backend_->allocate(T * F);
  if (config_.mlm_head && headScratch_.size() < T * C) headScratch_ = backend_->allocate(T * C);
  if (config_.isImage()) patchIn_ = backend_->allocate(T * (size_t)config_.patchDim());
  if (config_.isEncoderDecoder()) {
    crossQ_ = backend_->allocate(T * A);
    crossAttn_ = backend_->allocate(T * A);
  }
  // unembed() goes through the rows in chunks of logitsRows_: as many as the prompt has, but at
  // most kUnembedChunkBytes of logits (a 4096-token prompt over Qwen's 151936 tokens would
  // otherwise hold 2.5 GB for the one row an edit reads).
  logitsRows_ = std::max(kFewUnembedRows, std::min<int>(T, static_cast<int>(kUnembedChunkBytes / (V * sizeof(float)))));
  logitsBuf_ = backend_->allocate((size_t)logitsRows_ * V);
  scratchT_ = T;
  ++scratchGeneration_;
}

namespace {

double l2norm(const float* x, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (double)x[i] * x[i];
  return std::sqrt(sum);
}

}  // namespace

void Transformer::setWhatIfs(WhatIfs whatIfs) {
  for (const WhatIf& w : whatIfs.items)
    if (std::string problem = whatIfProblem(w, config_); !problem.empty()) throw Error("what-if " + problem);
  whatIfs_ = std::move(whatIfs);
  block_.setWhatIfs(whatIfs_);  // the block applies them all: its position table, attention shape, layers and unembedding input
}

AttentionShape Transformer::attentionShape(int T, int pos0, const KVCache& cache) const { return block_.attentionShape(T, pos0, cache.capacity()); }

void Transformer::recordNorms(Trace* trace, int slot, int T) {
  if (!trace) return;
  const int C = config_.n_embd;
  hostResidual_.resize((size_t)T * C);
  backend_->download(hostResidual_.data(), residual_.data(), (size_t)T * C);
  for (int t = 0; t < T; ++t) trace->residNorm[(size_t)slot * T + t] = static_cast<float>(l2norm(hostResidual_.data() + (size_t)t * C, C));
}

// hostDst (R, width) = the captured rows captureRows_ of src (T, width) in backend memory.
void Transformer::downloadRows(float* hostDst, const float* src, size_t width) {
  const size_t R = captureRows_.size();
  if (R > 0 && (size_t)captureRows_.back() - captureRows_.front() + 1 == R) {  // one contiguous run
    backend_->download(hostDst, src + (size_t)captureRows_.front() * width, R * width);
    return;
  }
  for (size_t i = 0; i < R; ++i) backend_->download(hostDst + i * width, src + (size_t)captureRows_[i] * width, width);
}

// The internals of layer `layer` (trace.internalLayers) from the scratch its forward left, at the
// captured rows (trace.rowPositions); k and v of every key.
void Transformer::captureInternals(Trace& trace, int layer, KVCache& cache) {
  const int ii = trace.internalIndex(layer);
  const int C = config_.n_embd, H = config_.n_head, D = config_.headDim(), Hkv = config_.kvHeads(), F = config_.dFF();
  const int QKV = config_.qkvDim(), Tk = trace.Tk, KV = Hkv * D, R = trace.R();
  const size_t RC = (size_t)R * C, RA = (size_t)R * H * D;
  // q (H, R, D) from the query columns of qkv (T, QKV), as the attention left them (qk_norm normed, rotated).
  hostRows_.resize(std::max((size_t)R * QKV, (size_t)Tk * KV));
  downloadRows(hostRows_.data(), qkv_.data(), QKV);
  float* q = trace.q.data() + ii * RA;
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < R; ++r) std::copy_n(hostRows_.data() + (size_t)r * QKV + h * D, D, q + ((size_t)h * R + r) * D);
  // k, v (Hkv, Tk, D) from the cache rows (Tk, Hkv D).
  for (int which = 0; which < 2; ++which) {
    backend_->download(hostRows_.data(), which ? cache.values(layer) : cache.keys(layer), (size_t)Tk * KV);
    float* out = (which ? trace.v : trace.k).data() + (size_t)ii * Hkv * Tk * D;
    for (int h = 0; h < Hkv; ++h)
      for (int j = 0; j < Tk; ++j) std::copy_n(hostRows_.data() + (size_t)j * KV + h * D, D, out + ((size_t)h * Tk + j) * D);
  }
  downloadRows(trace.attnOut.data() + ii * RC, attnProjected_.data(), C);
  // The norms' inputs: pre-norm x and mid; post-norm x + attention and mid + MLP.
  for (int n = 0; n < (config_.hasFeedForward() ? 2 : 1); ++n) {
    const Buffer& input = config_.pre_norm ? (n ? residMid_ : residIn_) : (n ? sum2_ : sum1_);
    hostResidual_.resize(RC);
    downloadRows(hostResidual_.data(), input.data(), C);
    const size_t at = ((size_t)ii * 2 + n) * R;
    for (int r = 0; r < R; ++r) {
      const NormStatistics stats = normStatistics(hostResidual_.data() + (size_t)r * C, C, config_);
      trace.normMean[at + r] = static_cast<float>(stats.mean);
      trace.normRstd[at + r] = static_cast<float>(stats.rstd);
    }
  }
  if (!trace.mlpPre.empty()) {
    const size_t RF = (size_t)R * F;
    downloadRows(trace.mlpPre.data() + ii * RF, hidden_.data(), F);
    downloadRows(trace.mlpPost.data() + ii * RF, activated_.data(), F);
    if (!trace.mlpGate.empty()) downloadRows(trace.mlpGate.data() + ii * RF, gate_.data(), F);
  }
}

// The blocks over the T new rows in residual_ (embedded already), keeping what the trace asks for.
// Returns true when normed_ then holds the final norm of every row (pre-norm models: fused into
// the last residual add).
bool Transformer::runBlocks(int T, const AttentionShape& shape, KVCache& cache, Trace* trace, const TraceOptions& options,
                            const LayerCallback* callback) {
  const int C = config_.n_embd, H = config_.n_head;
  const size_t activations = (size_t)T * C;
  float* x = residual_.data();
  LayerTensors t = sharedScratch();
  t.interventions = interventions_.empty() ? nullptr : &interventions_;
  const bool denseMlp = config_.hasFeedForward() && !config_.isMoe();
  bool normed = false;  // normed_ holds the pre-norm of x for the next sublayer
  for (int l = 0; l < config_.n_layer; ++l) {
    // After this layer comes the next layer's ln1, or the final norm (pre-norm models).
    const ConstLayerWeights* next = l + 1 < config_.n_layer ? &layers_[l + 1] : nullptr;
    const NextNorm nextNorm{next ? next->ln1Weight : lnfWeight_, next ? next->ln1Bias : lnfBias_, normed_.data()};
    const int li = trace ? trace->capturedIndex(l).value_or(-1) : -1;
    const int ii = trace ? trace->inputIndex(l).value_or(-1) : -1;  // the maps left out: their attention inputs
    const bool captureAttn = li >= 0 && options.attention, captureResid = li >= 0 && options.residuals;
    t.qkvKept = ii >= 0 ? qkvKept_.data() : nullptr;
    t.probs = captureAttn ? attnProbs_.data() : nullptr;
    t.scores = captureAttn ? attnScores_.data() : nullptr;
    const bool internals = trace && trace->internalIndex(l) >= 0;
    t.mid = captureResid || (internals && config_.pre_norm) ? residMid_.data() : nullptr;
    t.in = internals && config_.pre_norm ? residIn_.data() : nullptr;
    t.sum1 = internals && !config_.pre_norm ? sum1_.data() : nullptr;
    t.sum2 = internals && !config_.pre_norm ? sum2_.data() : nullptr;
    t.attnProjected = internals ? attnProjected_.data() : nullptr;
    t.keepActivated = internals && denseMlp;
    t.act = t.keepActivated ? activated_.data() : nullptr;
    t.layerIndex = l;
    t.attentionVariant = variant_ && (variantLayer_ < 0 || variantLayer_ == l) ? &*variant_ : nullptr;
    setCrossTensors(t, l, captureAttn);
    normed = block_.layer(layers_[l], nextNorm, 1, shape, cache.keys(l), cache.values(l), x, normed, t);
    if (captureAttn) {
      const size_t mapFloats = (size_t)H * T * shape.keys();
      backend_->download(trace->attn.data() + li * mapFloats, attnProbs_.data(), mapFloats);
      backend_->download(trace->scores.data() + li * mapFloats, attnScores_.data(), mapFloats);
      if (t.crossProbs) {
        const size_t crossFloats = (size_t)H * T * encodedLength_;
        backend_->download(trace->cross.data() + li * crossFloats, crossProbs_.data(), crossFloats);
      }
    }
    if (ii >= 0) backend_->download(trace->attnInputs.data() + (size_t)ii * T * trace->QKV, qkvKept_.data(), (size_t)T * trace->QKV);
    if (captureResid) {
      backend_->download(trace->residAfterAttn.data() + (size_t)li * T * C, residMid_.data(), activations);
      backend_->download(trace->residAfterMlp.data() + (size_t)li * T * C, x, activations);
    }
    if (trace && !trace->headMix.empty()) {
      const size_t rows = (size_t)trace->R() * C, headRows = (size_t)trace->R() * config_.attnDim();
      downloadRows(trace->headMix.data() + l * headRows, attnOut_.data(), config_.attnDim());
      if (!trace->crossMix.empty()) downloadRows(trace->crossMix.data() + l * headRows, crossAttn_.data(), config_.attnDim());
      if (config_.hasFeedForward()) downloadRows(trace->mlpOut.data() + l * rows, projected_.data(), C);
    }
    if (internals) captureInternals(*trace, l, cache);
    if (trace && config_.isMoe()) {
      trace->moe[l] = std::move(moe_.routing[0]);
      if (config_.hasSharedExpert()) trace->moe[l].sharedExpertGates = moe_.sharedGates;  // (T): one sequence
    }
    recordNorms(trace, l + 1, T);
    if (trace && trace->lensK > 0) stageLensRows(*trace, l, x, T);
    if (callback && *callback && !(*callback)(l + 1, config_.n_layer)) throw Cancelled();
  }
  return normed;
}

// Sizes `trace` for a forward of T new tokens after pos0 cached ones, and the scratch its capture needs.
void Transformer::prepareTrace(Trace& trace, const TraceOptions& options, int T, int pos0, bool allPositions, const AttentionShape& shape) {
  const int C = config_.n_embd, H = config_.n_head, V = config_.vocab_size, L = config_.n_layer;
  const int D = config_.headDim(), Hkv = config_.kvHeads(), F = config_.dFF();
  trace = Trace{};
  trace.T = T;
  trace.Tk = pos0 + T;
  trace.pos0 = pos0;
  trace.L = L;
  trace.H = H;
  trace.C = C;
  trace.A = config_.attnDim();
  trace.V = V;
  trace.D = D;
  trace.Hkv = Hkv;
  trace.F = F;
  trace.S = config_.isEncoderDecoder() ? encodedLength_ : 0;
  planCapture(trace, options, config_);
  const size_t Lc = trace.layers.size(), mapFloats = (size_t)H * T * shape.keys(), TC = (size_t)T * C;
  auto grow = [this](Buffer& b, size_t n) {
    if (b.size() < n) b = backend_->allocate(n);
  };
  if (options.attention && Lc) {
    trace.attn.resize(Lc * mapFloats);
    trace.scores.resize(Lc * mapFloats);
    grow(attnProbs_, mapFloats);
    grow(attnScores_, mapFloats);
    if (config_.isEncoderDecoder()) {
      trace.cross.resize(Lc * H * T * encodedLength_);
      grow(crossProbs_, (size_t)H * T * encodedLength_);
    }
  }
  if (options.residuals) {
    grow(residMid_, TC);
    trace.residAfterAttn.resize(Lc * TC);
    trace.residAfterMlp.resize(Lc * TC);
  }
  trace.residNorm.resize((size_t)(L + 1) * T);
  trace.QKV = config_.qkvDim();
  if (const size_t Li = trace.inputLayers.size()) {
    trace.attnInputs.resize(Li * T * trace.QKV);
    grow(qkvKept_, (size_t)T * trace.QKV);
  }
  if (options.logitLensTopK > 0) {
    trace.lensK = std::min(options.logitLensTopK, V);
    if (options.logitLensLastOnly) trace.lensPositions = {T - 1};
    else {
      trace.lensPositions.resize(T);
      std::iota(trace.lensPositions.begin(), trace.lensPositions.end(), 0);
    }
    const size_t P = trace.lensPositions.size();
    trace.lensIds.resize(L * P * trace.lensK);
    trace.lensProbs.resize(L * P * trace.lensK);
    const size_t unembedRows = L * P + (allPositions ? T : 1);
    grow(lensIn_, unembedRows * C);
  }
  trace.moe.resize(L);
  for (int layer : options.internalLayers)
    if (layer >= 0 && layer < L) trace.internalLayers.push_back(layer);
  std::sort(trace.internalLayers.begin(), trace.internalLayers.end());
  trace.internalLayers.erase(std::unique(trace.internalLayers.begin(), trace.internalLayers.end()), trace.internalLayers.end());
  // The rows the components and internals keep: the asked positions this forward computes.
  captureRows_.clear();
  if (options.components || !trace.internalLayers.empty()) {
    if (options.componentRows.empty()) {
      captureRows_.resize(T);
      std::iota(captureRows_.begin(), captureRows_.end(), 0);
    } else {
      for (int position : options.componentRows)
        if (position >= pos0 && position < pos0 + T) captureRows_.push_back(position - pos0);
      std::sort(captureRows_.begin(), captureRows_.end());
      captureRows_.erase(std::unique(captureRows_.begin(), captureRows_.end()), captureRows_.end());
    }
    for (int t : captureRows_) trace.rowPositions.push_back(pos0 + t);
  }
  const size_t R = captureRows_.size(), RC = R * C, RA = R * trace.A;
  if (options.components) {
    trace.embedded.resize(RC);
    trace.headMix.resize(L * RA);
    if (config_.isEncoderDecoder()) trace.crossMix.resize(L * RA);
    trace.mlpOut.assign(L * RC, 0.0f);
    trace.finalResid.resize(RC);
  }
  if (const size_t Li = trace.internalLayers.size()) {
    trace.q.resize(Li * RA);
    trace.k.resize(Li * Hkv * trace.Tk * D);
    trace.v.resize(trace.k.size());
    trace.attnOut.resize(Li * RC);
    trace.normMean.assign(Li * 2 * R, 0.0f);
    trace.normRstd.assign(Li * 2 * R, 0.0f);
    grow(residIn_, TC);
    grow(residMid_, TC);
    grow(attnProjected_, TC);
    if (!config_.pre_norm) {
      grow(sum1_, TC);
      grow(sum2_, TC);
    }
    if (config_.hasFeedForward() && !config_.isMoe()) {
      trace.mlpPre.resize(Li * R * F);
      trace.mlpPost.resize(Li * R * F);
      if (config_.activation == Activation::SwiGlu) trace.mlpGate.resize(Li * R * F);
      grow(activated_, (size_t)T * F);
    }
  }
}

void Transformer::forward(std::span<const int> tokens, KVCache& cache, std::vector<float>& logits, bool allPositions, Trace* trace,
                          const TraceOptions& options) {
  if (config_.isImage()) throw Error("this is an image model: it reads an image, not text (open a text model, or give it an image)");
  run(tokens, nullptr, cache, logits, allPositions, trace, options);
}

void Transformer::run(std::span<const int> tokens, const float* patchRows, KVCache& cache, std::vector<float>& logits, bool allPositions,
                      Trace* trace, const TraceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const int T = static_cast<int>(tokens.size());
  const int C = config_.n_embd, V = config_.vocab_size;
  const int pos0 = cache.length();
  if (T == 0) throw Error("forward: no tokens");
  if (pos0 + T > cache.capacity())
    throw Error("the input is " + std::to_string(pos0 + T) + " tokens but the context holds at most " + std::to_string(cache.capacity()));
  for (int id : tokens)
    if (id < 0 || id >= V) throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  ensureScratch(T);
  const AttentionShape shape = attentionShape(T, pos0, cache);

  if (trace) {
    prepareTrace(*trace, options, T, pos0, allPositions, shape);
    trace->tokens.assign(tokens.begin(), tokens.end());
  }

  float* x = residual_.data();
  block_.embed(x, tokens.data(), wte_, positions_, 1, T, pos0, wtePacked_);
  if (config_.hasTokenTypes()) {
    if (pos0 != 0) throw Error("token types are counted from position 0: a model with token types runs the whole sequence in one forward");
    block_.addTokenTypes(x, tokens.data(), tokenTypeTable_, normed_.data(), 1, T);
  }
  if (patchRows) {
    if (pos0 != 0) throw Error("an image runs whole, from position 0");
    block_.addPatches(x, patchRows, patchWeight_, patchIn_.data(), normed_.data(), T);
  }
  if (config_.embedding_norm) block_.embeddingNorm(x, normed_.data(), lnEmbWeight_, lnEmbBias_, T);
  recordNorms(trace, 0, T);
  if (trace && !trace->embedded.empty()) downloadRows(trace->embedded.data(), x, C);
  const bool finalNormed = runBlocks(T, shape, cache, trace, options, &layerCallback_);
  if (trace && !trace->finalResid.empty()) downloadRows(trace->finalResid.data(), x, C);
  cache.advance(T);
  if (trace)
    for (const auto& routing : trace->moe) trace->moeAuxLoss += routing.auxLoss;

  // Final norm (pre-norm models; usually fused into the last residual add), the MLM head (mlm_head
  // models) and the unembedding.
  const int firstRow = allPositions ? 0 : T - 1, rows = T - firstRow;
  const float* finalIn = block_.unembeddingInput(x + (size_t)firstRow * C, normed_.data() + (size_t)firstRow * C, finalNormed, lnfWeight_, lnfBias_,
                                                 rows, head_, headScratch_.data());
  unembed(trace, finalIn, rows, logits);
  if (trace) {
    trace->logits = logits;
    trace->forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  }
}

}  // namespace tscope

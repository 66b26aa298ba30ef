// The forward pass over the Backend ops, plus trace capture (attention maps, residuals, logit
// lens) for the layers the caller asks for. The per-token decode path allocates nothing once the
// scratch buffers have grown to the largest T seen.
#include "model/transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "model/error.h"

namespace tscope {

int Trace::capturedIndex(int layer) const {
  auto it = std::find(layers.begin(), layers.end(), layer);
  return it == layers.end() ? -1 : static_cast<int>(it - layers.begin());
}

Transformer::Transformer(const Weights& weights, Backend& backend) : config_(weights.config()), backend_(&backend) {
  const float* base = weights.arena();
  float* target = const_cast<float*>(base);
  if (!backend.isHost()) {
    ownedWeights_ = backend.allocate(weights.totalFloats());
    backend.upload(ownedWeights_.data(), base, weights.totalFloats());
    target = ownedWeights_.data();
  }
  auto relocate = [&](const float* p) { return target + (p - base); };
  wte_ = relocate(weights.wte);
  wpe_ = relocate(weights.wpe);
  lnfWeight_ = relocate(weights.lnfWeight);
  lnfBias_ = relocate(weights.lnfBias);
  for (const auto& w : weights.layers) {
    LayerWeights r;
    r.ln1Weight = relocate(w.ln1Weight);
    r.ln1Bias = relocate(w.ln1Bias);
    r.qkvWeight = relocate(w.qkvWeight);
    r.qkvBias = relocate(w.qkvBias);
    r.attnProjWeight = relocate(w.attnProjWeight);
    r.attnProjBias = relocate(w.attnProjBias);
    r.ln2Weight = relocate(w.ln2Weight);
    r.ln2Bias = relocate(w.ln2Bias);
    r.fcWeight = relocate(w.fcWeight);
    r.fcBias = relocate(w.fcBias);
    r.fcProjWeight = relocate(w.fcProjWeight);
    r.fcProjBias = relocate(w.fcProjBias);
    layers_.push_back(r);
  }
}

void Transformer::ensureScratch(int T) {
  if (T <= scratchT_) return;
  const size_t C = config_.n_embd, F = config_.dFF(), V = config_.vocab_size;
  residual_ = backend_->allocate(T * C);
  normed_ = backend_->allocate(T * C);
  qkv_ = backend_->allocate(T * 3 * C);
  attnOut_ = backend_->allocate(T * C);
  projected_ = backend_->allocate(T * C);
  hidden_ = backend_->allocate(T * F);
  logitsBuf_ = backend_->allocate(T * V);
  scratchT_ = T;
}

namespace {

// Which layers to capture, within the memory cap.
void planCapture(Trace& trace, const TraceOptions& options, const ModelConfig& config) {
  std::vector<int> wanted = options.layers;
  if (wanted.empty()) {
    wanted.resize(config.n_layer);
    std::iota(wanted.begin(), wanted.end(), 0);
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const size_t P = options.logitLensTopK > 0 ? (options.logitLensLastOnly ? 1 : trace.T) : 0;
  const size_t perLayer = (options.attention ? 2 * sizeof(float) * (size_t)trace.H * trace.T * trace.Tk : 0) +
                          (options.residuals ? 2 * sizeof(float) * (size_t)trace.T * trace.C : 0) +
                          P * options.logitLensTopK * (sizeof(int) + sizeof(float));
  size_t used = 0;
  for (int layer : wanted) {
    if (layer < 0 || layer >= config.n_layer) continue;
    if (perLayer > 0 && used + perLayer > options.memoryCapBytes) {
      trace.truncated = true;
      trace.note = "trace memory cap of " + std::to_string(options.memoryCapBytes >> 20) + " MiB reached: captured " +
                   std::to_string(trace.layers.size()) + " of " + std::to_string(wanted.size()) + " layers";
      break;
    }
    used += perLayer;
    trace.layers.push_back(layer);
  }
}

double l2norm(const float* x, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (double)x[i] * x[i];
  return std::sqrt(sum);
}

}  // namespace

void Transformer::forward(std::span<const int> tokens, KVCache& cache, std::vector<float>& logits, bool allPositions,
                          Trace* trace, const TraceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const int T = static_cast<int>(tokens.size());
  const int C = config_.n_embd, H = config_.n_head, D = config_.headDim(), F = config_.dFF(), V = config_.vocab_size;
  const int pos0 = cache.length();
  if (T == 0) throw Error("forward: no tokens");
  if (pos0 + T > cache.capacity())
    throw Error("the input is " + std::to_string(pos0 + T) + " tokens but the context holds at most " + std::to_string(cache.capacity()));
  for (int id : tokens)
    if (id < 0 || id >= V) throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  ensureScratch(T);
  const AttentionShape shape{T, pos0, H, D, cache.capacity()};

  if (trace) {
    *trace = Trace{};
    trace->T = T;
    trace->Tk = pos0 + T;
    trace->pos0 = pos0;
    trace->L = config_.n_layer;
    trace->H = H;
    trace->C = C;
    trace->V = V;
    trace->tokens.assign(tokens.begin(), tokens.end());
    planCapture(*trace, options, config_);
    const size_t Lc = trace->layers.size(), mapFloats = (size_t)H * T * shape.keys();
    if (options.attention && Lc) {
      trace->attn.resize(Lc * mapFloats);
      trace->scores.resize(Lc * mapFloats);
      if (attnProbs_.size() < mapFloats) {
        attnProbs_ = backend_->allocate(mapFloats);
        attnScores_ = backend_->allocate(mapFloats);
      }
    }
    if (options.residuals) {
      trace->residAfterAttn.resize(Lc * T * C);
      trace->residAfterMlp.resize(Lc * T * C);
    }
    trace->residNorm.resize((size_t)(config_.n_layer + 1) * T);
    if (options.logitLensTopK > 0 && Lc) {
      trace->lensK = std::min(options.logitLensTopK, V);
      if (options.logitLensLastOnly) trace->lensPositions = {T - 1};
      else {
        trace->lensPositions.resize(T);
        std::iota(trace->lensPositions.begin(), trace->lensPositions.end(), 0);
      }
      const size_t P = trace->lensPositions.size();
      trace->lensIds.resize(Lc * P * trace->lensK);
      trace->lensProbs.resize(Lc * P * trace->lensK);
    }
  }
  std::vector<float> hostResidual;  // trace only: residual norms on host
  auto recordNorms = [&](int slot) {
    if (!trace) return;
    hostResidual.resize((size_t)T * C);
    backend_->download(hostResidual.data(), residual_.data(), (size_t)T * C);
    for (int t = 0; t < T; ++t) trace->residNorm[(size_t)slot * T + t] = static_cast<float>(l2norm(hostResidual.data() + (size_t)t * C, C));
  };

  float* x = residual_.data();
  backend_->embed(x, tokens.data(), wte_, wpe_, T, C, pos0);
  recordNorms(0);
  for (int l = 0; l < config_.n_layer; ++l) {
    const LayerWeights& w = layers_[l];
    const int li = trace ? trace->capturedIndex(l) : -1;
    const bool captureAttn = li >= 0 && options.attention;
    // Attention sublayer: x = x + proj(attn(ln_1(x)))
    backend_->layerNorm(normed_.data(), x, w.ln1Weight, w.ln1Bias, T, C, config_.layer_norm_epsilon);
    backend_->matmul(qkv_.data(), normed_.data(), w.qkvWeight, w.qkvBias, T, C, 3 * C);
    backend_->attention(attnOut_.data(), captureAttn ? attnProbs_.data() : nullptr, captureAttn ? attnScores_.data() : nullptr,
                        qkv_.data(), cache.keys(l), cache.values(l), shape);
    backend_->matmul(projected_.data(), attnOut_.data(), w.attnProjWeight, w.attnProjBias, T, C, C);
    backend_->add(x, projected_.data(), (size_t)T * C);
    if (captureAttn) {
      const size_t mapFloats = (size_t)H * T * shape.keys();
      backend_->download(trace->attn.data() + li * mapFloats, attnProbs_.data(), mapFloats);
      backend_->download(trace->scores.data() + li * mapFloats, attnScores_.data(), mapFloats);
    }
    if (li >= 0 && options.residuals) backend_->download(trace->residAfterAttn.data() + (size_t)li * T * C, x, (size_t)T * C);
    // MLP sublayer: x = x + proj(gelu(fc(ln_2(x))))
    backend_->layerNorm(normed_.data(), x, w.ln2Weight, w.ln2Bias, T, C, config_.layer_norm_epsilon);
    backend_->matmul(hidden_.data(), normed_.data(), w.fcWeight, w.fcBias, T, C, F);
    backend_->gelu(hidden_.data(), (size_t)T * F);
    backend_->matmul(projected_.data(), hidden_.data(), w.fcProjWeight, w.fcProjBias, T, F, C);
    backend_->add(x, projected_.data(), (size_t)T * C);
    if (li >= 0 && options.residuals) backend_->download(trace->residAfterMlp.data() + (size_t)li * T * C, x, (size_t)T * C);
    recordNorms(l + 1);
    if (li >= 0 && trace->lensK > 0) captureLens(*trace, li, x, T, options);
  }
  cache.advance(T);

  // Final LayerNorm and the tied unembedding.
  const int firstRow = allPositions ? 0 : T - 1, rows = T - firstRow;
  backend_->layerNorm(normed_.data(), x + (size_t)firstRow * C, lnfWeight_, lnfBias_, rows, C, config_.layer_norm_epsilon);
  backend_->matmulTransposed(logitsBuf_.data(), normed_.data(), wte_, rows, C, V);
  logits.resize((size_t)rows * V);
  backend_->download(logits.data(), logitsBuf_.data(), (size_t)rows * V);
  if (trace) {
    trace->logits = logits;
    trace->forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  }
}

// Logit lens: what the model would predict if it stopped after this layer,
// softmax(ln_f(resid) . wte^T), reduced to the top K tokens per position.
void Transformer::captureLens(Trace& trace, int layerIndex, const float* resid, int T, const TraceOptions&) {
  const int C = config_.n_embd, V = config_.vocab_size, K = trace.lensK;
  const int P = static_cast<int>(trace.lensPositions.size());
  const int firstRow = P == T ? 0 : T - 1;  // all positions, or the last one only
  backend_->layerNorm(normed_.data(), resid + (size_t)firstRow * C, lnfWeight_, lnfBias_, P, C, config_.layer_norm_epsilon);
  backend_->matmulTransposed(logitsBuf_.data(), normed_.data(), wte_, P, C, V);
  hostRow_.resize((size_t)P * V);
  backend_->download(hostRow_.data(), logitsBuf_.data(), (size_t)P * V);
  std::vector<int> order(V);
  for (int p = 0; p < P; ++p) {
    const float* row = hostRow_.data() + (size_t)p * V;
    const float maxLogit = *std::max_element(row, row + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp((double)row[v] - maxLogit);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(), [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (int k = 0; k < K; ++k) {
      const size_t at = ((size_t)layerIndex * P + p) * K + k;
      trace.lensIds[at] = order[k];
      trace.lensProbs[at] = static_cast<float>(std::exp((double)row[order[k]] - maxLogit) / sum);
    }
  }
}

std::vector<float> Transformer::logitsFor(std::span<const int> tokens, Trace* trace, const TraceOptions& traceOptions) {
  KVCache cache(*backend_, config_, std::max<int>(1, std::min<int>(config_.n_positions, std::max<int>(1, (int)tokens.size()))));
  std::vector<float> logits;
  forward(tokens, cache, logits, true, trace, traceOptions);
  return logits;
}

}  // namespace tscope

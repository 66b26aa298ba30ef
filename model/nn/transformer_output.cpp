// The Transformer's output side (transformer.h): the logit lens staged by the blocks and the
// unembedding of it together with the final rows, their top-K reduction, a layer's attention maps
// computed alone from a trace's kept attention inputs, and logitsFor. Split from transformer.cpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/nn/transformer.h"

namespace tscope {

// Logit lens: what the model would predict if it stopped after this layer,
// softmax(unembed(final_norm(resid))) (through the MLM head too, mlm_head models), reduced to the top K tokens per position. The blocks only
// stage every layer's normed rows at the lens positions in lensIn_ (L, P, C); unembed()
// multiplies them by the unembedding together with the final rows.
void Transformer::stageLensRows(const Trace& trace, int layerIndex, const float* resid, int T) {
  const int C = config_.n_embd;
  const int P = static_cast<int>(trace.lensPositions.size());
  const int firstRow = P == T ? 0 : T - 1;  // all positions, or the last one only
  const float* lensIn = resid + (size_t)firstRow * C;
  float* staged = lensIn_.data() + (size_t)layerIndex * P * C;
  // The final norm and the MLM head as the final rows get them (BlockForward::unembeddingInput).
  if (block_.unembeddingInput(lensIn, staged, false, lnfWeight_, lnfBias_, P, head_, headScratch_.data()) != staged)
    backend_->copy(staged, lensIn, (size_t)P * C);
}

// logits (rows, V) = finalIn (rows, C) . unembedding^T, and with a logit lens in the trace, the
// lens of every layer from the same product: the staged lens rows (L P, C) and the final
// rows go through the unembedding together, in chunks of logitsRows_ rows. For the few rows of an
// edit (a lens at the last position of a few layers, one logits row) that is one pass over the
// (V, C) unembedding instead of one per layer plus one: the product of few rows is bound
// by reading the weights.
void Transformer::unembed(Trace* trace, const float* finalIn, int rows, std::vector<float>& logits) {
  const int C = config_.n_embd, V = config_.vocab_size;
  const int lensRows = trace && trace->lensK > 0 ? static_cast<int>((size_t)trace->L * trace->lensPositions.size()) : 0;
  const float* source = finalIn;
  if (lensRows > 0) {
    backend_->copy(lensIn_.data() + (size_t)lensRows * C, finalIn, (size_t)rows * C);
    source = lensIn_.data();
  }
  logits.resize((size_t)rows * V);
  const int total = lensRows + rows;
  for (int first = 0; first < total; first += logitsRows_) {
    const int count = std::min(logitsRows_, total - first), end = first + count;
    block_.logits(logitsBuf_.data(), source + (size_t)first * C, unembedding_, unembeddingPacked_, head_, count);
    if (first < lensRows) {  // lens rows [first, min(end, lensRows))
      const int lensCount = std::min(end, lensRows) - first;
      hostRow_.resize((size_t)lensCount * V);
      backend_->download(hostRow_.data(), logitsBuf_.data(), (size_t)lensCount * V);
      for (int r = 0; r < lensCount; ++r) lensTopK(*trace, first + r, hostRow_.data() + (size_t)r * V);
    }
    if (end > lensRows) {  // final rows [max(first, lensRows), end)
      const int from = std::max(first, lensRows);
      backend_->download(logits.data() + (size_t)(from - lensRows) * V, logitsBuf_.data() + (size_t)(from - first) * V, (size_t)(end - from) * V);
    }
  }
}

// The lens row `lensRow` (= layer index * P + position index) from its logits (V): the top K ids,
// highest first with ties to the lower id, and their softmax probabilities.
void Transformer::lensTopK(Trace& trace, int lensRow, const float* row) {
  const int V = config_.vocab_size, K = trace.lensK;
  const Eigen::Map<const Eigen::ArrayXf> logits(row, V);
  // The shared SoftmaxNorm with the sum by Eigen's vectorised float exp: V can be 50k, per lens row.
  const float maxLogit = logits.maxCoeff();
  const SoftmaxNorm norm{maxLogit, (logits - maxLogit).exp().cast<double>().sum()};
  lensOrder_.resize(V);
  std::iota(lensOrder_.begin(), lensOrder_.end(), 0);
  // Ties go to the lower id. partial_sort's heap selection (one compare per id for most ids) measured
  // ~10x faster than nth_element and a sort of K for K = 5 at V = 50k, with the same output.
  std::partial_sort(lensOrder_.begin(), lensOrder_.begin() + K, lensOrder_.end(),
                    [row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  for (int k = 0; k < K; ++k) {
    const size_t at = (size_t)lensRow * K + k;
    trace.lensIds[at] = lensOrder_[k];
    trace.lensProbs[at] = static_cast<float>(norm.probability(row[lensOrder_[k]]));
  }
}

void Transformer::layerMaps(const Trace& trace, int layer, std::vector<float>& probs, std::vector<float>& scores) {
  const std::optional<int> index = trace.inputIndex(layer);
  if (!index) throw Error("layer " + std::to_string(layer) + ": the trace keeps no attention inputs for it");
  if (trace.pos0 != 0 || trace.Tk != trace.T) throw Error("layer maps: the trace must cover the whole sequence");
  const int T = trace.T, QKV = config_.qkvDim(), KV = config_.kvDim(), H = config_.n_head;
  if (trace.QKV != QKV || trace.attnInputs.size() < (size_t)(*index + 1) * T * QKV) throw Error("layer maps: a trace of another model");
  const size_t mapFloats = (size_t)H * T * T;
  Buffer qkv = backend_->allocate((size_t)T * QKV), keys = backend_->allocate((size_t)T * KV), values = backend_->allocate((size_t)T * KV);
  Buffer out = backend_->allocate((size_t)T * config_.attnDim()), p = backend_->allocate(mapFloats), s = backend_->allocate(mapFloats);
  backend_->upload(qkv.data(), trace.attnInputs.data() + (size_t)*index * T * QKV, (size_t)T * QKV);
  block_.attentionOnly(out.data(), p.data(), s.data(), qkv.data(), keys.data(), values.data(), T, layer);
  probs.resize(mapFloats);
  scores.resize(mapFloats);
  backend_->download(probs.data(), p.data(), mapFloats);
  backend_->download(scores.data(), s.data(), mapFloats);
}

void Transformer::forwardImage(std::span<const float> pixels, KVCache& cache, std::vector<float>& logits, Trace* trace,
                               const TraceOptions& traceOptions) {
  if (!config_.isImage()) throw Error("this is a text model: it reads tokens, not an image (open an image model such as digits-vit)");
  if (cache.length() != 0) throw Error("an image runs whole: forwardImage needs an empty cache");
  const std::vector<float> rows = imagePatchRows(config_, pixels.data(), pixels.size());
  const std::vector<int> ids = imageTokenIds(config_);
  run(ids, rows.data(), cache, logits, true, trace, traceOptions);
}

std::vector<float> Transformer::classLogits(std::span<const float> pixels, Trace* trace, const TraceOptions& traceOptions) {
  KVCache cache(*backend_, config_, config_.n_positions);
  std::vector<float> logits;
  forwardImage(pixels, cache, logits, trace, traceOptions);
  logits.resize(config_.vocab_size);
  return logits;
}

std::vector<float> Transformer::logitsFor(std::span<const int> tokens, Trace* trace, const TraceOptions& traceOptions) {
  KVCache cache(*backend_, config_, std::clamp<int>(static_cast<int>(tokens.size()), 1, config_.n_positions));
  std::vector<float> logits;
  forward(tokens, cache, logits, true, trace, traceOptions);
  return logits;
}

}  // namespace tscope

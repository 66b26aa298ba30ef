// Trace bookkeeping: the capture plan under the memory cap, and AttentionRows, the prompt's
// attention maps as shared immutable row pieces (an edit appends rows without copying the rest).
#include "model/nn/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

#include "model/core/error.h"
#include "model/core/units.h"

namespace tscope {

std::optional<int> Trace::capturedIndex(int layer) const {
  auto it = std::find(layers.begin(), layers.end(), layer);
  if (it == layers.end()) return std::nullopt;
  return static_cast<int>(it - layers.begin());
}

std::optional<int> Trace::inputIndex(int layer) const {
  auto it = std::find(inputLayers.begin(), inputLayers.end(), layer);
  if (it == inputLayers.end()) return std::nullopt;
  return static_cast<int>(it - inputLayers.begin());
}

size_t layerMapBytes(int H, int T, int Tk) { return 2 * sizeof(float) * (size_t)H * T * Tk; }

int Trace::internalIndex(int layer) const {
  auto it = std::find(internalLayers.begin(), internalLayers.end(), layer);
  return it == internalLayers.end() ? -1 : static_cast<int>(it - internalLayers.begin());
}

int Trace::rowIndex(int position) const {
  auto it = std::lower_bound(rowPositions.begin(), rowPositions.end(), position);
  return it == rowPositions.end() || *it != position ? -1 : static_cast<int>(it - rowPositions.begin());
}

int Trace::rowOf(int t) const {
  const int r = rowIndex(pos0 + t);
  if (r < 0) throw Error("the trace keeps no components or internals at position " + std::to_string(pos0 + t) + " (TraceOptions::componentRows)");
  return r;
}

std::vector<RowArray> rowArrays(const Trace& t) {
  const size_t L = t.L, Li = t.internalLayers.size(), C = t.C, A = t.A;
  return {{&Trace::embedded, 1, C},           {&Trace::headMix, L, A},
          {&Trace::crossMix, L, A},           {&Trace::mlpOut, L, C},
          {&Trace::finalResid, 1, C},         {&Trace::q, Li * t.H, (size_t)t.D},
          {&Trace::attnOut, Li, C},           {&Trace::normMean, Li * 2, 1},
          {&Trace::normRstd, Li * 2, 1},      {&Trace::mlpPre, Li, (size_t)t.F},
          {&Trace::mlpGate, Li, (size_t)t.F}, {&Trace::mlpPost, Li, (size_t)t.F}};
}

// Which layers to capture, within the memory cap: the focus layer, its neighbours, then the rest.
void planCapture(Trace& trace, const TraceOptions& options, const ModelConfig& config) {
  std::vector<int> wanted = options.layers;
  if (wanted.empty()) {
    wanted.resize(config.n_layer);
    std::iota(wanted.begin(), wanted.end(), 0);
  }
  std::erase_if(wanted, [&](int layer) { return layer < 0 || layer >= config.n_layer; });
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const size_t mapBytes = options.attention ? layerMapBytes(trace.H, trace.T, trace.Tk) : 0;
  const size_t perLayer = mapBytes + (options.residuals ? 2 * sizeof(float) * (size_t)trace.T * trace.C : 0);
  std::vector<int> order = wanted;
  if (options.focusLayer >= 0)
    std::stable_sort(order.begin(), order.end(), [f = options.focusLayer](int a, int b) { return std::abs(a - f) < std::abs(b - f); });
  size_t used = 0;
  for (int layer : order) {
    if (perLayer > 0 && used + perLayer > options.memoryCapBytes) break;
    used += perLayer;
    trace.layers.push_back(layer);
  }
  std::sort(trace.layers.begin(), trace.layers.end());
  if (trace.layers.size() < wanted.size()) {
    trace.truncated = true;
    trace.note = "map memory cap of " + formatBytes(options.memoryCapBytes) + ": maps of " + std::to_string(trace.layers.size()) + " of " +
                 std::to_string(wanted.size()) + " layers held at " + std::to_string(trace.T) + " tokens (all would take " +
                 formatBytes(perLayer * wanted.size()) + ")";
  }
  if (!options.attention) return;
  if (!options.inputLayers.empty()) {
    for (int layer : options.inputLayers)
      if (layer >= 0 && layer < config.n_layer && !trace.capturedIndex(layer)) trace.inputLayers.push_back(layer);
  } else if (trace.truncated && mapBytes <= options.memoryCapBytes) {
    for (int layer : wanted)
      if (!trace.capturedIndex(layer)) trace.inputLayers.push_back(layer);
  }
  std::sort(trace.inputLayers.begin(), trace.inputLayers.end());
  trace.inputLayers.erase(std::unique(trace.inputLayers.begin(), trace.inputLayers.end()), trace.inputLayers.end());
}

void AttentionRows::append(Trace& forwardTrace) {
  const Trace& t = forwardTrace;
  const int Lc = static_cast<int>(t.layers.size());
  if (t.attn.empty()) throw Error("attention rows: the trace holds no attention maps");
  if (t.pos0 != rows()) throw Error("attention rows: rows from " + std::to_string(t.pos0) + " cannot follow " + std::to_string(rows()));
  if (!pieces_.empty() && (Lc != Lc_ || t.H != H_)) throw Error("attention rows: a piece with other layers or heads");
  Lc_ = Lc;
  H_ = t.H;
  Piece piece;
  piece.firstRow = t.pos0;
  piece.rows = piece.storedRows = t.T;
  piece.keys = t.Tk;
  piece.attn = std::make_shared<const std::vector<float>>(std::move(forwardTrace.attn));
  piece.scores = std::make_shared<const std::vector<float>>(std::move(forwardTrace.scores));
  forwardTrace.attn.clear();
  forwardTrace.scores.clear();
  pieces_.push_back(std::move(piece));
  if (pieces_.size() > kMaxPieces) compact();
}

void AttentionRows::keepRows(int rowCount) {
  if (rowCount < 0 || rowCount > rows()) throw Error("attention rows: cannot keep " + std::to_string(rowCount) + " rows");
  while (!pieces_.empty() && pieces_.back().firstRow >= rowCount) pieces_.pop_back();
  if (!pieces_.empty()) pieces_.back().rows = rowCount - pieces_.back().firstRow;
}

void AttentionRows::map(int layerIndex, int head, bool scores, float* out) const {
  const size_t T = rows();
  const float masked = scores ? -std::numeric_limits<float>::infinity() : 0.0f;
  for (const Piece& p : pieces_) {
    const float* source = (scores ? p.scores : p.attn)->data() + ((size_t)layerIndex * H_ + head) * p.storedRows * p.keys;
    const size_t keys = std::min<size_t>(p.keys, T);  // a cut piece has keys past the kept rows (masked)
    for (int r = 0; r < p.rows; ++r) {
      float* row = out + (p.firstRow + r) * T;
      std::copy_n(source + (size_t)r * p.keys, keys, row);
      std::fill(row + keys, row + T, masked);
    }
  }
}

std::vector<float> AttentionRows::map(int layerIndex, int head, bool scores) const {
  std::vector<float> out((size_t)rows() * rows());
  map(layerIndex, head, scores, out.data());
  return out;
}

void AttentionRows::flattenInto(Trace& trace) const {
  const size_t mapFloats = (size_t)rows() * rows();
  trace.attn.assign(Lc_ * H_ * mapFloats, 0.0f);
  trace.scores.assign(Lc_ * H_ * mapFloats, 0.0f);
  for (int l = 0; l < Lc_; ++l)
    for (int h = 0; h < H_; ++h) {
      map(l, h, false, trace.attn.data() + ((size_t)l * H_ + h) * mapFloats);
      map(l, h, true, trace.scores.data() + ((size_t)l * H_ + h) * mapFloats);
    }
}

// Merges every piece after the first (usually the long unchanged prefix) into one, over the
// last row's key count: a copy of the rows computed since, not of the whole prompt.
void AttentionRows::compact() {
  const int firstRow = pieces_[1].firstRow, T = rows(), R = T - firstRow;
  Piece merged;
  merged.firstRow = firstRow;
  merged.rows = merged.storedRows = R;
  merged.keys = T;
  auto attn = std::make_shared<std::vector<float>>((size_t)Lc_ * H_ * R * T);
  auto scores = std::make_shared<std::vector<float>>(attn->size());
  for (size_t i = 1; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    const int keys = std::min(p.keys, T);
    for (int m = 0; m < Lc_ * H_; ++m)
      for (int r = 0; r < p.rows; ++r) {
        const size_t from = ((size_t)m * p.storedRows + r) * p.keys, to = ((size_t)m * R + p.firstRow - firstRow + r) * T;
        std::copy_n(p.attn->data() + from, keys, attn->data() + to);
        std::fill(attn->data() + to + keys, attn->data() + to + T, 0.0f);
        std::copy_n(p.scores->data() + from, keys, scores->data() + to);
        std::fill(scores->data() + to + keys, scores->data() + to + T, -std::numeric_limits<float>::infinity());
      }
  }
  merged.attn = std::move(attn);
  merged.scores = std::move(scores);
  pieces_.resize(1);
  pieces_.push_back(std::move(merged));
}

}  // namespace tscope

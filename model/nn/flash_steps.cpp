// The FlashAttention tile stepper: one query tile's online softmax over the key/value tiles, with
// the state after every tile kept for the panel. The update itself is onlineSoftmaxUpdate, the one
// the flash fast path runs, so what the panel shows is what the op computes.
#include "model/nn/flash_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "model/core/error.h"

namespace tscope {

std::vector<float> FlashSteps::estimate(size_t step, int row, int d) const {
  const FlashTileState& state = steps.at(step);
  std::vector<float> rowOut(static_cast<size_t>(d), 0.0f);
  const float l = state.l.at(static_cast<size_t>(row));
  if (l == 0) return rowOut;  // no key seen yet
  for (int c = 0; c < d; ++c) rowOut[c] = state.o[static_cast<size_t>(row) * d + c] / l;
  return rowOut;
}

FlashSteps flashSteps(const HeadQkv& head, int queryRow, int tile) {
  AttentionVariantParams params;
  params.variant = AttentionVariant::Flash;
  params.tile = tile;
  checkVariantInputs(head, params);
  const int n = head.n, d = head.d;
  if (queryRow < 0 || queryRow >= n) throw Error("flash query row must be 0 .. " + std::to_string(n - 1) + ", not " + std::to_string(queryRow));
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  FlashSteps steps;
  steps.tileRows = tile;
  steps.queryTile = queryRow / tile;
  steps.queryBegin = steps.queryTile * tile;
  steps.queryEnd = static_cast<int>(std::min<long>(n, static_cast<long>(steps.queryBegin) + tile));
  const int rows = steps.queryEnd - steps.queryBegin;
  steps.exact.resize(static_cast<size_t>(rows) * d);
  exactAttentionRows(head, steps.queryBegin, steps.queryEnd, steps.exact.data(), nullptr);

  FlashTileState state;  // (m, l, O) carried from tile to tile
  state.m.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
  state.l.assign(static_cast<size_t>(rows), 0.0f);
  state.o.assign(static_cast<size_t>(rows) * d, 0.0f);
  for (int keyBegin = 0, keyTile = 0; keyBegin < n; keyBegin += tile, ++keyTile) {
    state.keyTile = keyTile;
    state.keyBegin = keyBegin;
    state.keyEnd = static_cast<int>(std::min<long>(n, static_cast<long>(keyBegin) + tile));
    const int cols = state.keyEnd - keyBegin;  // Bc of this tile (the last may be shorter)
    state.skipped = head.causal && keyBegin > steps.queryEnd - 1;
    state.scores.assign(static_cast<size_t>(rows) * cols, -std::numeric_limits<float>::infinity());
    if (!state.skipped) {
      for (int r = 0; r < rows; ++r) {
        const int i = steps.queryBegin + r;
        float* s = state.scores.data() + static_cast<size_t>(r) * cols;
        for (int j = keyBegin; j < state.keyEnd; ++j) {
          if (head.causal && j > i) continue;
          float dot = 0;
          for (int c = 0; c < d; ++c) dot += head.q[static_cast<size_t>(i) * d + c] * head.k[static_cast<size_t>(j) * d + c];
          s[j - keyBegin] = dot * scale;
        }
        onlineSoftmaxUpdate(state.m[r], state.l[r], state.o.data() + static_cast<size_t>(r) * d, s, head.v + static_cast<size_t>(keyBegin) * d, cols,
                            d);
      }
    }
    steps.steps.push_back(state);
  }
  return steps;
}

}  // namespace tscope

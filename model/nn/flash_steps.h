// FlashAttention, step by step, on one head's real q, k, v: the tiled online softmax of one query
// tile (Br rows) over the key/value tiles (Bc rows each), with the running max m, sum l and
// unnormalised output O after every tile (FlashAttention-2's loop order: the query tile stays in
// on-chip memory, the key/value tiles stream past). After the last tile O / l is the exact output.
#pragma once
#include <cstddef>
#include <vector>

#include "model/nn/efficient_attention.h"

namespace tscope {

struct FlashTileState {
  int keyTile = 0;   // index of the key/value tile just loaded
  int keyBegin = 0;  // its rows [keyBegin, keyEnd) of k and v
  int keyEnd = 0;
  bool skipped = false;       // causal: every key of the tile is in the future of every query row (not loaded)
  std::vector<float> m;       // (Br) running max of the scaled scores seen so far (-inf before any key)
  std::vector<float> l;       // (Br) running sum of exp(score - m)
  std::vector<float> o;       // (Br, d) running sum of exp(score - m) v, not yet divided by l
  std::vector<float> scores;  // (Br, Bc) this tile's scaled scores (-inf where masked); Bc = keyEnd - keyBegin
};

struct FlashSteps {
  int queryTile = 0;  // the query tile stepped (rows [queryBegin, queryEnd) of q)
  int queryBegin = 0, queryEnd = 0;
  int tileRows = 0;                   // Br = Bc
  std::vector<FlashTileState> steps;  // one per key/value tile, in order
  std::vector<float> exact;           // (Br, d) the exact output rows, for the convergence readout
  // O / l after step s for row r (the estimate the panel shows converging to exact).
  std::vector<float> estimate(size_t step, int row, int d) const;
};

// Steps the query tile that contains query row `queryRow` (0 <= queryRow < n) with tiles of
// `tile` rows (1 <= tile). Throws tscope::Error on bad arguments.
FlashSteps flashSteps(const HeadQkv& head, int queryRow, int tile);

}  // namespace tscope

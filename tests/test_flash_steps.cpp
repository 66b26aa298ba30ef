// Tests of the FlashAttention tile stepper: it converges to the exact rows, its running max never
// falls, causal tiles in the future are skipped, and after every step the estimate is exact
// attention over the keys loaded so far.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/core/error.h"
#include "model/nn/flash_steps.h"

namespace tscope {
namespace {

struct Head {
  std::vector<float> q, k, v;
  HeadQkv qkv;
  Head(int n, int d, bool causal) {
    q = seededNormals(11, static_cast<size_t>(n) * d, 1.5);
    k = seededNormals(12, static_cast<size_t>(n) * d, 1.5);
    v = seededNormals(13, static_cast<size_t>(n) * d, 1.0);
    qkv = {q.data(), k.data(), v.data(), n, d, causal};
  }
};

double maxDiff(const std::vector<float>& a, const float* b) {
  double worst = 0;
  for (size_t x = 0; x < a.size(); ++x) worst = std::max(worst, std::fabs(static_cast<double>(a[x]) - b[x]));
  return worst;
}

TEST(FlashSteps, ConvergesToExactWithRisingMaxAndPrefixExactEstimates) {
  const int n = 45, d = 6, tile = 8;
  for (bool causal : {true, false})
    for (int queryRow : {0, 17, 44}) {
      Head h(n, d, causal);
      const FlashSteps steps = flashSteps(h.qkv, queryRow, tile);
      const int rows = steps.queryEnd - steps.queryBegin;
      ASSERT_EQ(steps.queryBegin, queryRow / tile * tile);
      ASSERT_EQ(steps.steps.size(), static_cast<size_t>((n + tile - 1) / tile));
      for (int r = 0; r < rows; ++r) {
        const int i = steps.queryBegin + r;
        EXPECT_LT(maxDiff(steps.estimate(steps.steps.size() - 1, r, d), steps.exact.data() + r * d), 1e-5) << "row " << i;
        float previousM = -INFINITY;
        for (size_t s = 0; s < steps.steps.size(); ++s) {
          const FlashTileState& state = steps.steps[s];
          EXPECT_GE(state.m[r], previousM) << "m fell at step " << s;
          previousM = state.m[r];
          // Exact attention over the keys of tiles 0..s that row i may see.
          const int seenEnd = causal ? std::min(state.keyEnd, i + 1) : state.keyEnd;
          if (seenEnd <= 0) continue;
          HeadQkv one = h.qkv;  // row 0 of it: query i against keys [0, seenEnd), no mask
          one.n = seenEnd;
          one.causal = false;
          std::vector<float> expected(d), qRows(static_cast<size_t>(seenEnd) * d);
          for (int t = 0; t < seenEnd; ++t) std::copy(h.q.begin() + i * d, h.q.begin() + i * d + d, qRows.begin() + t * d);
          one.q = qRows.data();
          exactAttentionRows(one, 0, 1, expected.data(), nullptr);
          EXPECT_LT(maxDiff(steps.estimate(s, r, d), expected.data()), 1e-5) << "row " << i << " step " << s;
        }
      }
      for (const FlashTileState& state : steps.steps) {
        EXPECT_EQ(state.skipped, causal && state.keyBegin >= steps.queryEnd) << "tile " << state.keyTile;
        EXPECT_EQ(state.scores.size(), static_cast<size_t>(rows) * (state.keyEnd - state.keyBegin));
        if (state.skipped) {
          for (float s : state.scores) EXPECT_EQ(s, -INFINITY);
        }
      }
    }
}

TEST(FlashSteps, BadArgumentsThrow) {
  Head h(10, 4, true);
  EXPECT_THROW(flashSteps(h.qkv, 10, 4), Error);
  EXPECT_THROW(flashSteps(h.qkv, -1, 4), Error);
  EXPECT_THROW(flashSteps(h.qkv, 3, 0), Error);
  const FlashSteps one = flashSteps(h.qkv, 0, 1);  // tile 1, row 0: ten steps, all but the first skipped
  EXPECT_EQ(one.steps.size(), 10u);
  EXPECT_FALSE(one.steps[0].skipped);
  for (int s = 1; s < 10; ++s) EXPECT_TRUE(one.steps[s].skipped);
}

}  // namespace
}  // namespace tscope

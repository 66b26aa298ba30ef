// The Eigen CPU backend's attention against the plain-loop reference backend (attention_check.h):
// every AttentionShape variant, with prefills that cross its 64-row query tiles (the causal and
// window key ranges of each tile), decode continuations over a long cache and continuations of
// many rows with pos0 > 0, each with the maps kept (probabilities and scores of every head, the
// rows outside a tile's keys zeroed) and without (the per-thread tile scratch).
#include <gtest/gtest.h>

#include "tests/attention_check.h"

using namespace tscope;
using tscope::testing::attentionVariants;
using tscope::testing::checkAttention;
using tscope::testing::Size;

TEST(CpuAttention, RowTilesMatchTheReferenceInEveryVariant) {
  for (int threads : {1, 2}) {
    auto cpu = makeCpuBackend(threads);
    uint64_t seed = 2100;
    for (const auto& v : attentionVariants())
      for (const Size size :
           {Size{1, 0, 32}, Size{64, 0, 16}, Size{65, 0, 32}, Size{150, 0, 64}, Size{1, 300, 64}, Size{70, 90, 32}, Size{129, 7, 8}})
        for (bool maps : {false, true}) checkAttention(*cpu, v, size, maps, seed += 3);
  }
}

// The CUDA attention (kernels/attention*.cu) against the plain-loop reference backend, through
// the Backend API: every AttentionShape variant for prefills that are not multiples of the 64-row
// tile, head dimensions 6 .. 256 (tiled kernel, split-key kernels, scalar fallback), decode
// continuations over a long cache, and the recomputed probability / score maps of every head.
// Errors are normalised:
// max |diff| / max |ref|. Each test reports SKIPPED without a CUDA backend or device.
#include <gtest/gtest.h>

#include <vector>

#include "model/core/error.h"
#include "tests/attention_check.h"

using namespace tscope;
using tscope::testing::attentionVariants;
using tscope::testing::checkAttention;
using tscope::testing::Size;

// Prefills (pos0 = 0) of 1 .. 300 tokens, none a multiple of the 64-row tile but one, D 16 .. 128.
TEST(CudaAttention, PrefillMatchesReferenceInEveryVariant) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 100;
  for (const auto& v : attentionVariants())
    for (const Size size : {Size{1, 0, 32}, Size{17, 0, 16}, Size{64, 0, 64}, Size{65, 0, 128}, Size{130, 0, 80}, Size{300, 0, 64}})
      checkAttention(*cuda, v, size, false, seed += 3);
}

// What the first GPU lease must answer: Qwen's D = 128 heads over more than 1,000 keys (a prefill
// of 1,100 tokens, many key tiles), in the variants a real model of that kind uses.
TEST(CudaAttention, HeadDim128PrefillOverMoreThanAThousandKeys) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 300;
  for (const auto& v : attentionVariants())
    if (v.name == "causal" || v.name == "rope" || v.name == "gqa4_of_8" || v.name == "rope_llama3_scaled_gqa2")
      checkAttention(*cuda, v, Size{1100, 0, 128}, false, seed += 3);
}

// Head dimensions the tiled kernel does not take (D % 4 != 0, D > 128) go through the split-key
// kernels, with their scalar loads for odd D.
TEST(CudaAttention, UnusualHeadDimensionsMatchReference) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 500;
  for (const auto& v : attentionVariants())
    for (const Size size : {Size{70, 0, 6}, Size{2, 9, 6}, Size{70, 0, 160}, Size{1, 100, 160}, Size{20, 5, 256}, Size{33, 0, 34}})
      checkAttention(*cuda, v, size, false, seed += 3);
}

// Decode continuations: one token over a 1024-key cache (many key chunks, then the combine),
// three tokens, and a 40-token continuation on the tiled kernel with pos0 > 0.
TEST(CudaAttention, DecodeContinuationMatchesReference) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 900;
  for (const auto& v : attentionVariants())
    for (const Size size : {Size{1, 1023, 64}, Size{1, 0, 64}, Size{3, 200, 128}, Size{1, 77, 80}, Size{40, 100, 64}, Size{17, 300, 32}})
      checkAttention(*cuda, v, size, false, seed += 3);
}

// The maps, recomputed from lse, of every head, on the tiled path (T > 16) and the split path,
// with Tk both a multiple of 4 and not.
TEST(CudaAttention, MapsMatchReferenceForAllHeads) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 1300;
  for (const auto& v : attentionVariants())
    for (const Size size : {Size{70, 0, 64}, Size{64, 0, 32}, Size{2, 300, 32}, Size{33, 31, 80}, Size{1, 130, 128}, Size{20, 0, 6}})
      checkAttention(*cuda, v, size, true, seed += 3);
}

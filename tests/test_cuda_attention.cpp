// The CUDA attention (kernels/attention*.cu) against the plain-loop reference backend, through
// the Backend API: every AttentionShape variant for prefills that are not multiples of the 64-row
// tile, head dimensions 6 .. 256 (tiled kernel, split-key kernels, scalar fallback), decode
// continuations over a long cache, and the recomputed probability / score maps for all heads and
// for a traceHeads subset (unlisted heads' maps must stay untouched). Errors are normalised:
// max |diff| / max |ref|. Each test reports SKIPPED without a CUDA backend or device.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/backend_select.h"
#include "model/core/error.h"
#include "model/nn/positional.h"
#include "model/generate/sampling.h"
#include "tests/test_cuda_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomValues;
using tscope::testing::toDevice;
using tscope::testing::toHost;

namespace {

// Tolerances (fp32 kernels against a double-accumulating reference).
constexpr double kOutTolerance = 1e-5;     // out: relative to max |ref|
constexpr double kRopeTolerance = 1e-6;    // rotated Q and K (both sides rotate in double)
constexpr double kProbTolerance = 1e-5;    // probabilities: absolute
constexpr double kScoreTolerance = 1e-5;   // scores: relative to max |ref| (masked -inf must match exactly)
constexpr float kUntouched = 12345.0f;     // map entries of unlisted heads keep this

struct Variant {
  std::string name;
  std::function<void(AttentionShape&)> apply;
  bool alibi = false;
};

std::vector<Variant> variants() {
  return {
      {"causal", [](AttentionShape&) {}},
      {"bidirectional", [](AttentionShape& s) { s.causal = false; }},
      {"window5", [](AttentionShape& s) { s.window = 5; }},
      {"window70", [](AttentionShape& s) { s.window = 70; }},  // spans two key tiles
      {"bidirectional_window40", [](AttentionShape& s) { s.causal = false; s.window = 40; }},
      {"gqa2", [](AttentionShape& s) { s.nKvHead = 2; }},
      {"gqa4_of_8", [](AttentionShape& s) { s.nHead = 8; s.nKvHead = 2; }},
      {"mqa", [](AttentionShape& s) { s.nKvHead = 1; }},
      {"rope", [](AttentionShape& s) { s.ropeBase = 10000; }},
      {"rope_gqa2_window70", [](AttentionShape& s) { s.ropeBase = 500; s.nKvHead = 2; s.window = 70; }},
      {"rope_llama3_scaled_gqa2", [](AttentionShape& s) { s.ropeBase = 100; s.ropeFrequencies = tscope::testing::scaledRopeTable(); s.nKvHead = 2; }},
      {"alibi", [](AttentionShape&) {}, true},
      {"alibi_mqa_bidirectional", [](AttentionShape& s) { s.nKvHead = 1; s.causal = false; }, true},
      {"alibi_window40", [](AttentionShape& s) { s.window = 40; }, true},
  };
}

struct Size {
  int T, pos0, D;
};

std::string describe(const std::string& variant, const AttentionShape& s) {
  return variant + " T=" + std::to_string(s.T) + " pos0=" + std::to_string(s.pos0) + " D=" + std::to_string(s.headDim) +
         " H=" + std::to_string(s.nHead) + "/" + std::to_string(s.kvHeads());
}

// Runs one attention call on the reference and on CUDA with the same random inputs and compares
// everything the call writes. maps: also probs and scores (traceHeads as in the shape).
void checkAttention(Backend& cuda, const Variant& variant, Size size, bool maps, const std::vector<int>* traceHeads, uint64_t seed) {
  AttentionShape s;
  s.T = size.T;
  s.pos0 = size.pos0;
  s.nHead = 4;
  s.headDim = size.D;
  variant.apply(s);
  s.cacheRows = s.keys() + 3;  // rows past the call's keys exist and must not be read
  const std::vector<float> slopes = alibiSlopes(s.nHead);
  if (variant.alibi) s.alibiSlopes = slopes.data();
  if (traceHeads) {
    s.traceHeads = traceHeads->data();
    s.traceHeadCount = static_cast<int>(traceHeads->size());
  }
  const std::string label = describe(variant.name, s);
  const int H = s.nHead, T = s.T, Tk = s.keys();
  const size_t mapFloats = static_cast<size_t>(H) * T * Tk, cacheFloats = static_cast<size_t>(s.cacheRows) * s.kvDim();
  const size_t outFloats = static_cast<size_t>(T) * H * s.headDim;
  // Scale 2 makes the softmax peaked enough that a wrong key shows; rows < pos0 are earlier tokens.
  const auto qkv = randomValues(static_cast<size_t>(T) * s.qkvDim(), seed, 2.0f);
  const auto kCache = randomValues(cacheFloats, seed + 1, 2.0f), vCache = randomValues(cacheFloats, seed + 2, 1.0f);

  auto reference = makeReferenceBackend();
  std::vector<float> refQkv = qkv, refK = kCache, refV = vCache, refOut(outFloats), refProbs(mapFloats), refScores(mapFloats);
  reference->attention(refOut.data(), refProbs.data(), refScores.data(), refQkv.data(), refK.data(), refV.data(), s);

  const std::vector<float> sentinel(mapFloats, kUntouched);
  Buffer dQkv = toDevice(cuda, qkv), dK = toDevice(cuda, kCache), dV = toDevice(cuda, vCache), dOut = cuda.allocate(outFloats);
  Buffer dProbs = toDevice(cuda, sentinel), dScores = toDevice(cuda, sentinel);
  cuda.attention(dOut.data(), maps ? dProbs.data() : nullptr, maps ? dScores.data() : nullptr, dQkv.data(), dK.data(), dV.data(), s);

  auto d = compare(toHost(cuda, dOut), refOut);
  EXPECT_LT(d.relative(), kOutTolerance) << label << " out: " << d.describe();
  d = compare(toHost(cuda, dQkv), refQkv);
  EXPECT_LT(d.relative(), kRopeTolerance) << label << " qkv after RoPE: " << d.describe();
  d = compare(toHost(cuda, dK), refK);
  EXPECT_LT(d.relative(), kRopeTolerance) << label << " key cache: " << d.describe();
  d = compare(toHost(cuda, dV), refV);
  EXPECT_EQ(d.maxAbs, 0.0) << label << " value cache: " << d.describe();
  if (!maps) return;

  // Listed heads against the reference; the others must be exactly as they were.
  std::vector<bool> listed(H, traceHeads == nullptr);
  if (traceHeads)
    for (int h : *traceHeads) listed[h] = true;
  const auto probs = toHost(cuda, dProbs), scores = toHost(cuda, dScores);
  const size_t headFloats = static_cast<size_t>(T) * Tk;
  for (int h = 0; h < H; ++h) {
    const size_t offset = h * headFloats;
    if (!listed[h]) {
      const auto untouchedProbs = compare(probs.data() + offset, sentinel.data(), headFloats);
      const auto untouchedScores = compare(scores.data() + offset, sentinel.data(), headFloats);
      EXPECT_EQ(untouchedProbs.maxAbs, 0.0) << label << " head " << h << " (not listed) probs were written";
      EXPECT_EQ(untouchedScores.maxAbs, 0.0) << label << " head " << h << " (not listed) scores were written";
      continue;
    }
    d = compare(probs.data() + offset, refProbs.data() + offset, headFloats);
    EXPECT_LT(d.maxAbs, kProbTolerance) << label << " head " << h << " probabilities: " << d.describe();
    d = compare(scores.data() + offset, refScores.data() + offset, headFloats);
    EXPECT_LT(d.relative(), kScoreTolerance) << label << " head " << h << " scores: " << d.describe();
  }
}

}  // namespace

// Prefills (pos0 = 0) of 1 .. 300 tokens, none a multiple of the 64-row tile but one, D 16 .. 128.
TEST(CudaAttention, PrefillMatchesReferenceInEveryVariant) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 100;
  for (const auto& v : variants())
    for (const Size size : {Size{1, 0, 32}, Size{17, 0, 16}, Size{64, 0, 64}, Size{65, 0, 128}, Size{130, 0, 80}, Size{300, 0, 64}})
      checkAttention(*cuda, v, size, false, nullptr, seed += 3);
}

// Head dimensions the tiled kernel does not take (D % 4 != 0, D > 128) go through the split-key
// kernels, with their scalar loads for odd D.
TEST(CudaAttention, UnusualHeadDimensionsMatchReference) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 500;
  for (const auto& v : variants())
    for (const Size size : {Size{70, 0, 6}, Size{2, 9, 6}, Size{70, 0, 160}, Size{1, 100, 160}, Size{20, 5, 256}, Size{33, 0, 34}})
      checkAttention(*cuda, v, size, false, nullptr, seed += 3);
}

// Decode continuations: one token over a 1024-key cache (many key chunks, then the combine),
// three tokens, and a 40-token continuation on the tiled kernel with pos0 > 0.
TEST(CudaAttention, DecodeContinuationMatchesReference) {
  REQUIRE_CUDA(cuda);
  uint64_t seed = 900;
  for (const auto& v : variants())
    for (const Size size : {Size{1, 1023, 64}, Size{1, 0, 64}, Size{3, 200, 128}, Size{1, 77, 80}, Size{40, 100, 64}, Size{17, 300, 32}})
      checkAttention(*cuda, v, size, false, nullptr, seed += 3);
}

// The maps, recomputed from lse: every head, then heads {3, 1} only (0 and 2 untouched), on the
// tiled path (T > 16) and the split path, with Tk both a multiple of 4 and not.
TEST(CudaAttention, MapsMatchReferenceForAllHeadsAndTraceHeads) {
  REQUIRE_CUDA(cuda);
  const std::vector<int> subset = {3, 1};
  uint64_t seed = 1300;
  for (const auto& v : variants())
    for (const Size size : {Size{70, 0, 64}, Size{64, 0, 32}, Size{2, 300, 32}, Size{33, 31, 80}, Size{1, 130, 128}, Size{20, 0, 6}})
      for (const std::vector<int>* heads : {static_cast<const std::vector<int>*>(nullptr), &subset})
        checkAttention(*cuda, v, size, true, heads, seed += 3);
}

TEST(CudaAttention, RejectsATraceHeadOutsideTheHeads) {
  REQUIRE_CUDA(cuda);
  AttentionShape s{4, 0, 4, 16, 8};
  const int badHead = 4;
  s.traceHeads = &badHead;
  s.traceHeadCount = 1;
  Buffer qkv = cuda->allocate(static_cast<size_t>(s.T) * s.qkvDim()), k = cuda->allocate(8 * 64), v = cuda->allocate(8 * 64);
  Buffer out = cuda->allocate(4 * 64), maps = cuda->allocate(4 * 4 * 4);
  EXPECT_THROW(cuda->attention(out.data(), maps.data(), maps.data(), qkv.data(), k.data(), v.data(), s), Error);
}

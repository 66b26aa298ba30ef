// One attention call on a backend against the plain-loop reference backend, through the Backend
// API, for every AttentionShape variant (causal, bidirectional, windows, GQA / MQA, RoPE, Llama 3
// scaled RoPE, ALiBi): out, the rotated q/k, the caches and, when asked, the probability and score
// maps. Errors are normalised: max |diff| / max |ref|. Used by test_cuda_attention.cpp (the CUDA
// kernels) and test_cpu_attention.cpp (the Eigen backend's row-block tiles).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/select/backend_select.h"
#include "model/nn/positional.h"
#include "tests/test_cuda_helpers.h"
#include "tests/test_helpers.h"

namespace tscope::testing {

// Tolerances (fp32 kernels against a double-accumulating reference).
constexpr double kOutTolerance = 1e-5;    // out: relative to max |ref|
constexpr double kRopeTolerance = 1e-6;   // rotated Q and K (both sides rotate in double)
constexpr double kProbTolerance = 1e-5;   // probabilities: absolute
constexpr double kScoreTolerance = 1e-5;  // scores: relative to max |ref| (masked -inf must match exactly)
constexpr float kUntouched = 12345.0f;    // map entries start as this, so one left unwritten shows

struct Variant {
  std::string name;
  std::function<void(AttentionShape&)> apply;
  bool alibi = false;
};

inline std::vector<Variant> attentionVariants() {
  return {
      {"causal", [](AttentionShape&) {}},
      {"bidirectional", [](AttentionShape& s) { s.causal = false; }},
      {"window5", [](AttentionShape& s) { s.window = 5; }},
      {"window70", [](AttentionShape& s) { s.window = 70; }},  // spans two key tiles
      {"bidirectional_window40",
       [](AttentionShape& s) {
         s.causal = false;
         s.window = 40;
       }},
      {"gqa2", [](AttentionShape& s) { s.nKvHead = 2; }},
      {"gqa4_of_8",
       [](AttentionShape& s) {
         s.nHead = 8;
         s.nKvHead = 2;
       }},
      {"mqa", [](AttentionShape& s) { s.nKvHead = 1; }},
      {"rope", [](AttentionShape& s) { s.ropeBase = 10000; }},
      {"rope_gqa2_window70",
       [](AttentionShape& s) {
         s.ropeBase = 500;
         s.nKvHead = 2;
         s.window = 70;
       }},
      {"rope_llama3_scaled_gqa2",
       [](AttentionShape& s) {
         s.ropeBase = 100;
         s.ropeFrequencies = tscope::testing::scaledRopeTable();
         s.nKvHead = 2;
       }},
      {"alibi", [](AttentionShape&) {}, true},
      {"alibi_mqa_bidirectional",
       [](AttentionShape& s) {
         s.nKvHead = 1;
         s.causal = false;
       },
       true},
      {"alibi_window40", [](AttentionShape& s) { s.window = 40; }, true},
  };
}

struct Size {
  int T, pos0, D;
};

inline std::string describe(const std::string& variant, const AttentionShape& s) {
  return variant + " T=" + std::to_string(s.T) + " pos0=" + std::to_string(s.pos0) + " D=" + std::to_string(s.headDim) +
         " H=" + std::to_string(s.nHead) + "/" + std::to_string(s.kvHeads());
}

// Runs one attention call on the reference and on `backend` with the same random inputs and
// compares everything the call writes. maps: also probs and scores, every head's.
inline void checkAttention(Backend& backend, const Variant& variant, Size size, bool maps, uint64_t seed) {
  AttentionShape s;
  s.T = size.T;
  s.pos0 = size.pos0;
  s.nHead = 4;
  s.headDim = size.D;
  variant.apply(s);
  s.cacheRows = s.keys() + 3;  // rows past the call's keys exist and must not be read
  const std::vector<float> slopes = alibiSlopes(s.nHead);
  if (variant.alibi) s.alibiSlopes = slopes.data();
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
  Buffer dQkv = toDevice(backend, qkv), dK = toDevice(backend, kCache), dV = toDevice(backend, vCache), dOut = backend.allocate(outFloats);
  Buffer dProbs = toDevice(backend, sentinel), dScores = toDevice(backend, sentinel);
  backend.attention(dOut.data(), maps ? dProbs.data() : nullptr, maps ? dScores.data() : nullptr, dQkv.data(), dK.data(), dV.data(), s);

  auto d = compare(toHost(backend, dOut), refOut);
  EXPECT_LT(d.relative(), kOutTolerance) << label << " out: " << d.describe();
  d = compare(toHost(backend, dQkv), refQkv);
  EXPECT_LT(d.relative(), kRopeTolerance) << label << " qkv after RoPE: " << d.describe();
  d = compare(toHost(backend, dK), refK);
  EXPECT_LT(d.relative(), kRopeTolerance) << label << " key cache: " << d.describe();
  d = compare(toHost(backend, dV), refV);
  EXPECT_EQ(d.maxAbs, 0.0) << label << " value cache: " << d.describe();
  if (!maps) return;

  // Every head against the reference.
  const auto probs = toHost(backend, dProbs), scores = toHost(backend, dScores);
  const size_t headFloats = static_cast<size_t>(T) * Tk;
  for (int h = 0; h < H; ++h) {
    const size_t offset = h * headFloats;
    d = compare(probs.data() + offset, refProbs.data() + offset, headFloats);
    EXPECT_LT(d.maxAbs, kProbTolerance) << label << " head " << h << " probabilities: " << d.describe();
    d = compare(scores.data() + offset, refScores.data() + offset, headFloats);
    EXPECT_LT(d.relative(), kScoreTolerance) << label << " head " << h << " scores: " << d.describe();
  }
}

}  // namespace tscope::testing

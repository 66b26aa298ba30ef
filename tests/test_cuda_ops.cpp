// The CUDA backend's fused ops and device sampling against the CPU, through the Backend API:
// addNorm and matmulActivate against the reference backend (normalised error: max |diff| /
// max |ref|), and sampleToken against sampleNext with the same seed (same token, same rng state
// afterwards, the same error messages). Each test reports SKIPPED without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "model/select/backend_select.h"
#include "model/core/error.h"
#include "model/generate/sampling.h"
#include "tests/test_cuda_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomValues;
using tscope::testing::toDevice;
using tscope::testing::toHost;

namespace {

std::vector<float> download(Backend& device, const float* data, size_t n) {
  std::vector<float> host(n);
  device.download(host.data(), data, n);
  return host;
}

bool sameState(const Rng& a, const Rng& b) {
  for (int i = 0; i < 4; ++i)
    if (a.state()[i] != b.state()[i]) return false;
  return true;
}

// The message sampleNext (or sampleToken) throws, or "" when it returns.
template <typename Sample>
std::string messageOf(Sample sample) {
  try {
    sample();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ----- fused ops ---------------------------------------------------------------------------------

// x += y must be bit-exact (one float add); the norm within 1e-5 of the double-accumulating
// reference. C covers the warp-per-row path (<= 1024) and the block path, with and without float4
// (C % 4, and a buffer offset by one float so no pointer is 16-byte aligned).
TEST(CudaOps, AddNormMatchesReference) {
  REQUIRE_CUDA(cuda);
  auto reference = makeReferenceBackend();
  for (int T : {1, 3, 257})
    for (int C : {64, 65, 768, 1024, 1027, 1600})
      for (int offset : {0, 1})
        for (NormKind kind : {NormKind::LayerNorm, NormKind::RmsNorm})
          for (bool withBias : {true, false}) {
            if (kind == NormKind::RmsNorm && !withBias) continue;  // RMSNorm ignores the bias: one run
            const size_t n = static_cast<size_t>(T) * C;
            const int mixed = T * 10007 + C * 3 + offset;  // small: no overflow
            const uint64_t seed = static_cast<uint64_t>(mixed);
            auto x = randomValues(n, seed, 3.0f);
            for (int c = 0; c < C; ++c) x[c] += 5.0f;  // a row with a large mean
            const auto y = randomValues(n, seed + 1, 2.0f), weight = randomValues(C, seed + 2), bias = randomValues(C, seed + 3);
            std::vector<float> padded(n + offset);
            std::copy(x.begin(), x.end(), padded.begin() + offset);
            Buffer dX = toDevice(*cuda, padded), dY = toDevice(*cuda, y), dW = toDevice(*cuda, weight), dB = toDevice(*cuda, bias);
            Buffer dOut = cuda->allocate(n + offset);
            const float* biasDevice = withBias ? dB.data() : nullptr;
            cuda->addNorm(dX.data() + offset, dY.data(), dOut.data() + offset, dW.data(), biasDevice, T, C, 1e-5f, kind);
            std::vector<float> expectedX = x, expectedOut(n);
            reference->addNorm(expectedX.data(), y.data(), expectedOut.data(), weight.data(), withBias ? bias.data() : nullptr, T, C, 1e-5f, kind);
            const std::string what = std::string(toString(kind)) + " T=" + std::to_string(T) + " C=" + std::to_string(C) +
                                     " offset=" + std::to_string(offset) + " bias=" + std::to_string(withBias);
            const auto dx = compare(download(*cuda, dX.data() + offset, n), expectedX);
            EXPECT_EQ(dx.maxAbs, 0.0) << what << " x: " << dx.describe();
            const auto dout = compare(download(*cuda, dOut.data() + offset, n), expectedOut);
            EXPECT_LT(dout.relative(), 1e-5) << what << " out: " << dout.describe();
          }
}

// T = 1 goes through GEMV, larger T through GEMM; the same 1e-5 as the plain matmul test.
TEST(CudaOps, MatmulActivateMatchesReference) {
  REQUIRE_CUDA(cuda);
  auto reference = makeReferenceBackend();
  struct Shape {
    int T, K, N;
  };
  for (const Shape s : {Shape{1, 64, 96}, Shape{1, 768, 3072}, Shape{7, 33, 65}, Shape{64, 256, 200}, Shape{3, 128, 512}})
    for (Activation a : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu})
      for (bool withBias : {true, false}) {
        const int mixed = s.T * 131 + s.K * 7 + s.N;  // small: no overflow
        const uint64_t seed = static_cast<uint64_t>(mixed);
        const auto in = randomValues((size_t)s.T * s.K, seed), weight = randomValues((size_t)s.K * s.N, seed + 1, 0.2f);
        const auto bias = randomValues(s.N, seed + 2);
        Buffer dIn = toDevice(*cuda, in), dW = toDevice(*cuda, weight), dB = toDevice(*cuda, bias);
        Buffer dOut = cuda->allocate((size_t)s.T * s.N);
        std::vector<float> expected((size_t)s.T * s.N);
        reference->matmulActivate(expected.data(), in.data(), weight.data(), withBias ? bias.data() : nullptr, s.T, s.K, s.N, a);
        cuda->matmulActivate(dOut.data(), dIn.data(), dW.data(), withBias ? dB.data() : nullptr, s.T, s.K, s.N, a);
        const auto d = compare(download(*cuda, dOut.data(), expected.size()), expected);
        EXPECT_LT(d.relative(), 1e-5) << toString(a) << " T=" << s.T << " K=" << s.K << " N=" << s.N << " bias " << withBias << ": " << d.describe();
      }
}

// ----- sampling on the device ----------------------------------------------------------------

TEST(CudaOps, GreedySampleIsArgmaxWithTiesToTheLowerIdAndDrawsNothing) {
  REQUIRE_CUDA(cuda);
  const int V = 50257;
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto logits = randomValues(V, seed, 4.0f);
    logits[V - 7] = 9.0f;  // the maximum, twice: the lower id wins
    logits[123 + static_cast<int>(seed)] = 9.0f;
    logits[5] = -std::numeric_limits<float>::infinity();
    Buffer dLogits = toDevice(*cuda, logits);
    SamplingParams params;
    params.greedy = true;
    params.temperature = 0.0f;  // ignored when greedy, as on the CPU
    Rng rng(seed), untouched(seed);
    EXPECT_EQ(cuda->sampleToken(dLogits.data(), V, params, rng), 123 + static_cast<int>(seed));
    EXPECT_EQ(argmax(logits), 123 + static_cast<int>(seed));
    EXPECT_TRUE(sameState(rng, untouched)) << "greedy must not draw";
  }
}

// 200 seeds per setting; fresh logits per seed. The device forms exp and the normalising sums in
// another order than the CPU (see kernels/sampling.cu): a token may differ only when a draw lands
// within ~1e-16 of a token boundary or a float probability sits on a rounding midpoint, expected
// far less than once in 1400 draws; we allow one per setting and report every difference.
TEST(CudaOps, SampleTokenMatchesSampleNextForTheSameSeed) {
  REQUIRE_CUDA(cuda);
  struct Setting {
    float temperature;
    int topK;
    float topP;
    bool tieHeavy;  // logits on a 0.25 grid with some -inf: many ties at the top-k / top-p boundary
  };
  const Setting settings[] = {{1.0f, 0, 1.0f, false}, {0.7f, 50, 1.0f, false}, {1.3f, 0, 0.9f, false},  {0.8f, 40, 0.95f, false},
                              {2.0f, 0, 0.5f, false}, {1.0f, 1, 1.0f, false},  {0.05f, 0, 1.0f, false}, {1.0f, 7, 0.8f, true},
                              {1.0f, 0, 0.6f, true},  {1.0f, 100, 1.0f, true}};
  int settingIndex = 0;
  for (const Setting& setting : settings) {
    const int V = setting.tieHeavy ? 3000 : 50257;
    SamplingParams params;
    params.temperature = setting.temperature;
    params.topK = setting.topK;
    params.topP = setting.topP;
    int differences = 0;
    std::string report;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      auto logits = randomValues(V, seed * 31 + settingIndex, 6.0f);
      if (setting.tieHeavy)
        for (size_t i = 0; i < logits.size(); ++i)
          logits[i] = i % 97 == 3 ? -std::numeric_limits<float>::infinity() : std::round(logits[i] * 4.0f) / 4.0f;
      Buffer dLogits = toDevice(*cuda, logits);
      Rng cpuRng(seed), deviceRng(seed);
      const int expected = sampleNext(logits, params, cpuRng);
      const int got = cuda->sampleToken(dLogits.data(), V, params, deviceRng);
      EXPECT_TRUE(sameState(cpuRng, deviceRng)) << "rng state after seed " << seed << " (setting " << settingIndex << ")";
      if (got != expected) {
        ++differences;
        report += " seed " + std::to_string(seed) + ": device " + std::to_string(got) + " cpu " + std::to_string(expected) + ";";
      }
    }
    EXPECT_LE(differences, 1) << "setting " << settingIndex << " (T=" << setting.temperature << " k=" << setting.topK << " p=" << setting.topP
                              << "):" << report;
    ++settingIndex;
  }
}

// What the first GPU lease must answer: the sampler at a Qwen-sized vocabulary (151,936 logits),
// greedy and in the three filters, the same token and rng state as the CPU's sampleNext.
TEST(CudaOps, SampleTokenAtAQwenSizedVocabulary) {
  REQUIRE_CUDA(cuda);
  const int V = 151936;
  SamplingParams greedy, warm, nucleus;
  greedy.greedy = true;
  warm.temperature = 0.8f;
  warm.topK = 50;
  nucleus.topP = 0.9f;
  int settingIndex = 0;
  for (const SamplingParams& params : {greedy, warm, nucleus}) {
    int differences = 0;
    for (uint64_t seed = 0; seed < 40; ++seed) {
      const auto logits = randomValues(V, seed * 17 + settingIndex, 6.0f);
      Buffer dLogits = toDevice(*cuda, logits);
      Rng cpuRng(seed), deviceRng(seed);
      const int expected = sampleNext(logits, params, cpuRng);
      const int got = cuda->sampleToken(dLogits.data(), V, params, deviceRng);
      EXPECT_TRUE(sameState(cpuRng, deviceRng)) << "setting " << settingIndex << " seed " << seed;
      differences += got != expected;
    }
    EXPECT_LE(differences, params.greedy ? 0 : 1) << "setting " << settingIndex;
    ++settingIndex;
  }
}

// qk_norm in one launch per layer (not two per token row: a 4096-token Qwen3 prefill made ~230k
// launches): the same numbers as the per-row rmsNorm launches, bit for bit, and the reference's.
TEST(CudaOps, HeadRmsNormInOneLaunchEqualsThePerRowNorms) {
  REQUIRE_CUDA(cuda);
  auto reference = makeReferenceBackend();
  struct Shape {
    int rows, H, Hkv, D;
  };
  for (const Shape sh : {Shape{37, 5, 2, 128}, Shape{3, 4, 4, 6}, Shape{300, 16, 8, 128}}) {
    const int stride = (sh.H + 2 * sh.Hkv) * sh.D + 3;  // q | k | v and a little more, as a row of qkv
    const auto host = randomValues((size_t)sh.rows * stride, sh.rows + sh.D, 3.0f);
    const auto qWeight = randomValues(sh.D, 7, 1.5f), kWeight = randomValues(sh.D, 8, 1.5f);
    Buffer dq = toDevice(*cuda, qWeight), dk = toDevice(*cuda, kWeight);
    Buffer oneLaunch = toDevice(*cuda, host), perRow = toDevice(*cuda, host);
    cuda->headRmsNorm(oneLaunch.data(), dq.data(), dk.data(), sh.rows, sh.H, sh.Hkv, sh.D, stride, 1e-6f);
    for (int r = 0; r < sh.rows; ++r) {
      float* row = perRow.data() + (size_t)r * stride;
      cuda->rmsNorm(row, row, dq.data(), sh.H, sh.D, 1e-6f);
      cuda->rmsNorm(row + (size_t)sh.H * sh.D, row + (size_t)sh.H * sh.D, dk.data(), sh.Hkv, sh.D, 1e-6f);
    }
    const std::vector<float> got = toHost(*cuda, oneLaunch);
    EXPECT_EQ(got, toHost(*cuda, perRow)) << "rows " << sh.rows << " D " << sh.D;
    std::vector<float> expected = host;
    reference->headRmsNorm(expected.data(), qWeight.data(), kWeight.data(), sh.rows, sh.H, sh.Hkv, sh.D, stride, 1e-6f);
    EXPECT_LT(compare(got, expected).relative(), 1e-5) << "rows " << sh.rows << " D " << sh.D;
  }
}

// Host arguments go through a pinned ring (kernels/host_staging.h) with no wait until it wraps:
// 400 gathers and scatters of distinct rows (about 3 MiB of rows and gates, past the first 1 MiB
// ring: it wraps and grows) enqueued with no download between them, each rewriting its host
// arrays at once, give the reference's numbers exactly (a gather copies, a scatter adds in order).
TEST(CudaOps, StagedHostArgumentsSurviveTheRingWrappingAndGrowing) {
  REQUIRE_CUDA(cuda);
  auto reference = makeReferenceBackend();
  const int C = 3, inRows = 97;
  const auto input = randomValues((size_t)inRows * C, 11);
  Buffer deviceIn = toDevice(*cuda, input);
  std::vector<Buffer> gathered, scattered;
  std::vector<std::vector<float>> expectGathered, expectScattered;
  std::vector<int> rows;
  std::vector<float> weights;
  for (int call = 0; call < 400; ++call) {
    const int n = call == 200 ? 300000 : 1000 + call;  // one staging over the ring's first capacity
    rows.resize(n);
    weights.resize(n);
    for (int i = 0; i < n; ++i) {
      rows[i] = (i * 7 + call) % inRows;
      weights[i] = 0.5f + 0.001f * static_cast<float>((i + call) % 13);
    }
    gathered.push_back(cuda->allocate((size_t)n * C));
    cuda->gatherRows(gathered.back().data(), deviceIn.data(), rows.data(), n, C);
    std::vector<float> gatherExpected((size_t)n * C);
    reference->gatherRows(gatherExpected.data(), input.data(), rows.data(), n, C);
    expectGathered.push_back(std::move(gatherExpected));
    if (call % 4 == 0) {  // scatter the gathered rows back with their gates
      scattered.push_back(cuda->allocate((size_t)inRows * C));
      cuda->scatterAddRows(scattered.back().data(), gathered.back().data(), rows.data(), weights.data(), n, C);
      std::vector<float> scatterExpected((size_t)inRows * C, 0.0f);
      reference->scatterAddRows(scatterExpected.data(), expectGathered.back().data(), rows.data(), weights.data(), n, C);
      expectScattered.push_back(std::move(scatterExpected));
    }
    std::fill(rows.begin(), rows.end(), -1);  // the caller reuses its arrays at once
    std::fill(weights.begin(), weights.end(), 1e30f);
  }
  for (size_t i = 0; i < gathered.size(); ++i) ASSERT_EQ(toHost(*cuda, gathered[i]), expectGathered[i]) << "gather " << i;
  for (size_t i = 0; i < scattered.size(); ++i) {
    const auto got = toHost(*cuda, scattered[i]);
    EXPECT_LT(compare(got, expectScattered[i]).relative(), 1e-6) << "scatter " << i;
  }
}

TEST(CudaOps, SameSeedGivesTheSameTokensAndTopKOneIsGreedy) {
  REQUIRE_CUDA(cuda);
  const int V = 1000;
  const auto logits = randomValues(V, 77, 2.0f);
  Buffer dLogits = toDevice(*cuda, logits);
  SamplingParams params;
  params.temperature = 1.5f;
  params.topP = 0.97f;
  auto draw = [&](uint64_t seed) {
    Rng rng(seed);
    std::vector<int> tokens;
    for (int i = 0; i < 30; ++i) tokens.push_back(cuda->sampleToken(dLogits.data(), V, params, rng));
    return tokens;
  };
  const auto first = draw(5);
  EXPECT_EQ(draw(5), first);
  EXPECT_NE(draw(6), first) << "30 draws from a flat distribution should depend on the seed";

  params.topK = 1;
  params.topP = 1.0f;
  Rng rng(9), cpuRng(9);
  cpuRng.uniform();  // top-k = 1 still draws once
  EXPECT_EQ(cuda->sampleToken(dLogits.data(), V, params, rng), argmax(logits));
  EXPECT_TRUE(sameState(rng, cpuRng));
}

TEST(CudaOps, SampleTokenThrowsTheCpuMessages) {
  REQUIRE_CUDA(cuda);
  const int V = 2000;
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    int nanAt, infAt;  // -1: none
    bool allNegativeInf;
  };
  for (const Case c : {Case{10, -1, false}, Case{-1, 1999, false}, Case{700, 40, false}, Case{40, 700, false}, Case{-1, -1, true}})
    for (bool greedy : {false, true}) {
      auto logits = randomValues(V, 3);
      if (c.allNegativeInf) logits.assign(V, -inf);
      if (c.nanAt >= 0) logits[c.nanAt] = std::nanf("");
      if (c.infAt >= 0) logits[c.infAt] = inf;
      Buffer dLogits = toDevice(*cuda, logits);
      SamplingParams params;
      params.greedy = greedy;
      Rng cpuRng(1), deviceRng(1);
      const std::string expected = messageOf([&] { sampleNext(logits, params, cpuRng); });
      ASSERT_FALSE(expected.empty());
      EXPECT_EQ(messageOf([&] { cuda->sampleToken(dLogits.data(), V, params, deviceRng); }), expected)
          << "NaN at " << c.nanAt << ", +inf at " << c.infAt << ", greedy " << greedy;
      EXPECT_TRUE(sameState(deviceRng, Rng(1))) << "a failed sample must leave the rng alone";
    }
  // Bad parameters: the same validation message, before anything runs.
  const auto logits = randomValues(V, 4);
  Buffer dLogits = toDevice(*cuda, logits);
  SamplingParams params;
  params.temperature = 0.0f;
  Rng rng(1);
  const std::string expected = messageOf([&] { sampleNext(logits, params, rng); });
  EXPECT_EQ(messageOf([&] { cuda->sampleToken(dLogits.data(), V, params, rng); }), expected);
  params.temperature = 1.0f;
  params.topP = 0.0f;
  EXPECT_EQ(messageOf([&] { cuda->sampleToken(dLogits.data(), V, params, rng); }), "top_p must be in (0, 1] (1 turns it off)");
}

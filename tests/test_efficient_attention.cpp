// Tests of the efficient-attention variants: every fast path against its plain-loop reference,
// the exact ones against exact attention, the approximate ones converging as their knob grows,
// out = A v and row-stochastic maps in the reference, and the knob checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <vector>

#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "tests/test_efficient_attention_helpers.h"

namespace tscope {
namespace {

// A brute-force masked softmax in double (the test's own, independent of the engine's).
std::vector<float> bruteMasked(const HeadQkv& h, const std::function<bool(int, int)>& visible) {
  std::vector<float> out(static_cast<size_t>(h.n) * h.d);
  for (int i = 0; i < h.n; ++i) {
    std::vector<double> w(h.n, 0.0);
    double best = -1e300, total = 0;
    for (int j = 0; j < h.n; ++j)
      if (visible(i, j)) {
        double s = 0;
        for (int c = 0; c < h.d; ++c) s += static_cast<double>(h.q[i * h.d + c]) * h.k[j * h.d + c];
        w[j] = s / std::sqrt(static_cast<double>(h.d));
        best = std::max(best, w[j]);
      }
    for (int j = 0; j < h.n; ++j) total += w[j] = visible(i, j) ? std::exp(w[j] - best) : 0.0;
    for (int c = 0; c < h.d; ++c) {
      double acc = 0;
      for (int j = 0; j < h.n; ++j) acc += w[j] / total * h.v[j * h.d + c];
      out[i * h.d + c] = static_cast<float>(acc);
    }
  }
  return out;
}

const std::vector<std::pair<int, int>> kShapes = {{1, 4}, {7, 3}, {33, 8}, {70, 16}};

TEST(EfficientAttention, FastMatchesReferenceForEveryVariant) {
  for (AttentionVariant variant : allAttentionVariants())
    for (bool causal : {true, false})
      for (auto [n, d] : kShapes) {
        RandomHead h(n, d, causal, 1);
        const AttentionVariantParams params = smallKnobs(variant);
        const VariantResult ref = attentionVariantReference(h.head, params);
        const double diff = relativeMaxDiff(fastOut(h.head, params), ref.out);
        EXPECT_LT(diff, 1e-5) << attentionVariantName(variant) << " causal " << causal << " n " << n << " d " << d;
      }
}

TEST(EfficientAttention, ExactAndFlashMatchExactAttention) {
  for (bool causal : {true, false})
    for (auto [n, d] : kShapes)
      for (int tile : {1, 5, 16, 128, std::numeric_limits<int>::max()}) {
        RandomHead h(n, d, causal, 2);
        std::vector<float> exact(static_cast<size_t>(n) * d);
        exactHeadAttention(h.head, exact.data(), nullptr);
        const auto visible = [causal](int i, int j) { return !causal || j <= i; };
        EXPECT_LT(relativeMaxDiff(exact, bruteMasked(h.head, visible)), 1e-6);
        AttentionVariantParams params = smallKnobs(AttentionVariant::Flash);
        params.tile = tile;
        EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), exact), 1e-5) << "flash tile " << tile << " n " << n;
        EXPECT_LT(relativeMaxDiff(fastOut(h.head, smallKnobs(AttentionVariant::Exact)), exact), 1e-5) << "exact n " << n;
      }
}

TEST(EfficientAttention, WindowMatchesBruteForceMaskedSoftmax) {
  for (bool causal : {true, false})
    for (auto [n, d] : kShapes)
      for (int window : {1, 3, 8, 1000, std::numeric_limits<int>::max()}) {
        RandomHead h(n, d, causal, 3);
        AttentionVariantParams params = smallKnobs(AttentionVariant::Window);
        params.window = window;
        const auto brute = bruteMasked(h.head, [&](int i, int j) { return causal ? (j <= i && i - j < window) : std::abs(i - j) < window; });
        EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), brute), 1e-5) << "window " << window << " n " << n;
        EXPECT_LT(relativeMaxDiff(attentionVariantReference(h.head, params).out, brute), 1e-6);
      }
}

TEST(EfficientAttention, ReferenceOutEqualsMapTimesValuesAndRowsSumToOne) {
  for (AttentionVariant variant : allAttentionVariants())
    for (bool causal : {true, false}) {
      const int n = 37, d = 6;
      RandomHead h(n, d, causal, 4);
      const VariantResult ref = attentionVariantReference(h.head, smallKnobs(variant));
      std::vector<float> mapTimesV(static_cast<size_t>(n) * d);
      double worstRow = 0;
      for (int i = 0; i < n; ++i) {
        double rowSum = 0;
        for (int j = 0; j < n; ++j) {
          const double a = ref.map[i * n + j];
          rowSum += a;
          if (causal && j > i) {
            EXPECT_EQ(a, 0.0) << attentionVariantName(variant) << " sees the future";
          }
        }
        worstRow = std::max(worstRow, std::fabs(rowSum - 1));
        for (int c = 0; c < d; ++c) {
          double acc = 0;
          for (int j = 0; j < n; ++j) acc += static_cast<double>(ref.map[i * n + j]) * h.v[j * d + c];
          mapTimesV[i * d + c] = static_cast<float>(acc);
        }
      }
      EXPECT_LT(relativeMaxDiff(mapTimesV, ref.out), 1e-5) << attentionVariantName(variant) << " causal " << causal;
      // Linformer's default Pool projection is row-stochastic too (its Gaussian one is not).
      EXPECT_LT(worstRow, 1e-5) << attentionVariantName(variant) << " causal " << causal;
    }
}

TEST(EfficientAttention, LinearMapIsTheQuadraticFormOfEluPlusOne) {
  for (bool causal : {true, false}) {
    const int n = 20, d = 5;
    RandomHead h(n, d, causal, 5);
    const VariantResult ref = attentionVariantReference(h.head, smallKnobs(AttentionVariant::Linear));
    double worst = 0;
    for (int i = 0; i < n; ++i) {
      std::vector<double> w(n, 0.0);
      for (int j = 0; j <= (causal ? i : n - 1); ++j)
        for (int c = 0; c < d; ++c) w[j] += eluPlusOne(static_cast<double>(h.q[i * d + c])) * eluPlusOne(static_cast<double>(h.k[j * d + c]));
      const double total = std::accumulate(w.begin(), w.end(), 0.0);
      for (int j = 0; j < n; ++j) worst = std::max(worst, std::fabs(w[j] / total - ref.map[i * n + j]));
    }
    EXPECT_LT(worst, 1e-6) << "causal " << causal;
  }
}

TEST(EfficientAttention, LshWithOneBucketAndOneChunkIsExact) {
  for (bool causal : {true, false}) {
    const int n = 29, d = 8;
    RandomHead h(n, d, causal, 6);
    AttentionVariantParams params = smallKnobs(AttentionVariant::Lsh);
    params.buckets = 1;
    params.rounds = 1;
    params.chunk = causal ? n : std::numeric_limits<int>::max();
    const VariantResult lsh = attentionVariantReference(h.head, params);
    const VariantError error = compareWithExact(h.head, lsh);
    EXPECT_LT(error.meanRowError, 1e-6);
    EXPECT_LT(error.outRelError, 1e-6);
    std::vector<float> exact(static_cast<size_t>(n) * d);
    exactHeadAttention(h.head, exact.data(), nullptr);
    EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), exact), 1e-5);
    ASSERT_EQ(lsh.buckets.size(), static_cast<size_t>(n));
    ASSERT_EQ(lsh.sortedOrder.size(), static_cast<size_t>(n));
  }
}

// Mean over seeds of compareWithExact's mean row error for the given knobs.
double meanError(AttentionVariantParams params, int n, int d, bool causal, int seeds, bool outError = false, double qkScale = 1.5) {
  double sum = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    RandomHead h(n, d, causal, 100 + seed, qkScale);
    params.seed = 1000 + seed;
    const VariantError e = compareWithExact(h.head, attentionVariantReference(h.head, params));
    sum += outError ? e.outRelError : e.meanRowError;
  }
  return sum / seeds;
}

TEST(EfficientAttention, LshErrorFallsWithRoundsAndChunk) {
  for (bool causal : {true, false}) {
    AttentionVariantParams params = smallKnobs(AttentionVariant::Lsh);
    params.buckets = 8;
    params.chunk = 8;
    double previous = 3;
    for (int rounds : {1, 2, 4, 8}) {
      params.rounds = rounds;
      const double e = meanError(params, 64, 8, causal, 8);
      EXPECT_LE(e, previous + 1e-9) << "rounds " << rounds << " causal " << causal;
      previous = e;
    }
    EXPECT_LT(previous, 0.5);
    params.rounds = 1;
    params.buckets = 2;
    previous = 3;
    for (int chunk : {2, 8, 32}) {
      params.chunk = chunk;
      const double e = meanError(params, 64, 8, causal, 8);
      EXPECT_LT(e, previous) << "chunk " << chunk << " causal " << causal;
      previous = e;
    }
  }
}

TEST(EfficientAttention, LinformerErrorFallsWithProjectedRows) {
  for (bool causal : {true, false}) {
    AttentionVariantParams params = smallKnobs(AttentionVariant::Linformer);
    double previous = 1e30;
    for (int k : {4, 16, 64}) {
      params.projected = k;
      const double e = meanError(params, 64, 8, causal, 8, true);
      EXPECT_LT(e, previous) << "k " << k << " causal " << causal;
      previous = e;
    }
  }
}

TEST(EfficientAttention, LinformerPoolSegmentsCutTheTokensIntoNearEqualRuns) {
  for (auto [n, k] : std::vector<std::pair<int, int>>{{1, 1}, {7, 3}, {64, 8}, {10, 10}, {100, 7}}) {
    EXPECT_EQ(linformerSegmentStart(0, k, n), 0);
    EXPECT_EQ(linformerSegmentStart(k, k, n), n);
    for (int r = 0; r < k; ++r) {
      const int begin = linformerSegmentStart(r, k, n), end = linformerSegmentStart(r + 1, k, n);
      EXPECT_GE(end - begin, n / k) << "n " << n << " k " << k << " r " << r;
      EXPECT_LE(end - begin, n / k + 1);
      for (int j = begin; j < end; ++j) EXPECT_EQ(linformerSegmentOf(j, k, n), r) << "n " << n << " k " << k << " j " << j;
    }
  }
}

TEST(EfficientAttention, LinformerPoolAtKEqualsNIsExact) {
  for (bool causal : {true, false})
    for (auto [n, d] : kShapes) {
      RandomHead h(n, d, causal, 11);
      AttentionVariantParams params = smallKnobs(AttentionVariant::Linformer);
      params.projected = n;
      const VariantResult ref = attentionVariantReference(h.head, params);
      std::vector<float> exact(static_cast<size_t>(n) * d), map(static_cast<size_t>(n) * n);
      exactHeadAttention(h.head, exact.data(), map.data());
      EXPECT_LT(relativeMaxDiff(ref.out, exact), 1e-5) << "causal " << causal << " n " << n;
      EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), exact), 1e-5) << "causal " << causal << " n " << n;
      double worst = 0;
      for (size_t x = 0; x < map.size(); ++x) worst = std::max(worst, std::fabs(static_cast<double>(ref.map[x]) - map[x]));
      EXPECT_LT(worst, 1e-5) << "causal " << causal << " n " << n;
      EXPECT_LT(compareWithExact(h.head, ref).meanRowError, 1e-5);
    }
}

TEST(EfficientAttention, LinformerPoolErrorDoesNotGrowWithProjectedRows) {
  const int n = 64;
  for (bool outError : {false, true})
    for (bool causal : {true, false}) {
      AttentionVariantParams params = smallKnobs(AttentionVariant::Linformer);
      std::vector<double> errors;
      for (int k : {n / 8, n / 4, n / 2, n}) {
        params.projected = k;
        errors.push_back(meanError(params, n, 8, causal, 6, outError));
      }
      for (size_t x = 1; x < errors.size(); ++x)
        EXPECT_LE(errors[x], errors[x - 1] + 1e-9) << "k step " << x << " causal " << causal << " out " << outError;
      EXPECT_LT(errors.back(), 1e-5);
      EXPECT_GT(errors.front(), 10 * errors.back() + 1e-3);  // k = n / 8 really is an approximation
    }
}

TEST(EfficientAttention, LinformerGaussianProjectionStaysAvailable) {
  for (bool causal : {true, false})
    for (auto [n, d] : kShapes) {
      RandomHead h(n, d, causal, 12);
      AttentionVariantParams params = smallKnobs(AttentionVariant::Linformer);
      params.linformerProjection = LinformerProjection::Gaussian;
      const VariantResult gaussian = attentionVariantReference(h.head, params);
      EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), gaussian.out), 1e-5) << "causal " << causal << " n " << n;
      params.linformerProjection = LinformerProjection::Pool;
      if (n > 1) {
        EXPECT_GT(relativeMaxDiff(attentionVariantReference(h.head, params).out, gaussian.out), 1e-3) << "n " << n;
      }
    }
  EXPECT_EQ(linformerProjectionFromName(linformerProjectionName(LinformerProjection::Gaussian)), LinformerProjection::Gaussian);
  EXPECT_EQ(linformerProjectionFromName("pool"), LinformerProjection::Pool);
  EXPECT_FALSE(linformerProjectionFromName("random").has_value());
  EXPECT_EQ(AttentionVariantParams{}.linformerProjection, LinformerProjection::Pool);
}

TEST(EfficientAttention, LinformerWithIdentityProjectionsIsExactWithoutMask) {
  const int n = 24, d = 6;
  std::vector<float> identity(static_cast<size_t>(n) * (n + 3), 0.0f);  // (n, n + 3): extra columns unused
  for (int r = 0; r < n; ++r) identity[r * (n + 3) + r] = 1.0f;
  AttentionVariantParams params = smallKnobs(AttentionVariant::Linformer);
  params.projected = n;
  params.linformerE = params.linformerF = identity.data();
  params.linformerColumns = n + 3;
  RandomHead h(n, d, false, 8);
  const VariantResult ref = attentionVariantReference(h.head, params);
  const VariantError e = compareWithExact(h.head, ref);
  EXPECT_LT(e.meanRowError, 1e-5);
  EXPECT_LT(e.outRelError, 1e-6);
  std::vector<float> exact(static_cast<size_t>(n) * d);
  exactHeadAttention(h.head, exact.data(), nullptr);
  EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), exact), 1e-5);
  EXPECT_EQ(ref.projectedRows, n);
  EXPECT_EQ(ref.projectedMap.size(), static_cast<size_t>(n) * n);
}

TEST(EfficientAttention, PerformerErrorFallsWithFeatures) {
  for (bool causal : {true, false}) {
    AttentionVariantParams params = smallKnobs(AttentionVariant::Performer);
    // Random features estimate exp(q.k / sqrt d) with a variance that grows with |q|^2 + |k|^2:
    // moderate norms here, as after a LayerNorm and a 1/sqrt(d)-scaled projection.
    std::vector<double> errors;
    for (int m : {64, 256, 1024}) {
      params.features = m;
      errors.push_back(meanError(params, 32, 8, causal, 6, false, 0.8));
      std::printf("performer m %d causal %d mean row error %.4f\n", m, causal, errors.back());
    }
    EXPECT_LT(errors[1], errors[0]);
    EXPECT_LT(errors[2], errors[1]);
    EXPECT_LT(errors[2], 0.6 * errors[0]);  // 16x the features: about 4x less noise
  }
}

TEST(EfficientAttention, BadKnobsGiveOneLineNamingTheKnob) {
  struct Case {
    AttentionVariant variant;
    std::function<void(AttentionVariantParams&)> edit;
    const char* knob;
  };
  const float e = 1.0f;
  const std::vector<Case> cases = {
      {AttentionVariant::Flash, [](auto& p) { p.tile = 0; }, "tile"},
      {AttentionVariant::Window, [](auto& p) { p.window = -2; }, "window"},
      {AttentionVariant::Lsh, [](auto& p) { p.buckets = 0; }, "buckets"},
      {AttentionVariant::Lsh, [](auto& p) { p.buckets = 1025; }, "buckets"},
      {AttentionVariant::Lsh, [](auto& p) { p.rounds = 17; }, "rounds"},
      {AttentionVariant::Lsh, [](auto& p) { p.chunk = 0; }, "chunk"},
      {AttentionVariant::Linformer, [](auto& p) { p.projected = 0; }, "projected"},
      {AttentionVariant::Linformer, [&e](auto& p) { p.linformerE = &e; }, "both E and F"},
      {AttentionVariant::Linformer, [&e](auto& p) { p.linformerE = p.linformerF = &e, p.linformerColumns = 4; }, "linformerColumns"},
      {AttentionVariant::Performer, [](auto& p) { p.features = 4097; }, "features"},
  };
  RandomHead h(10, 4, true, 9);
  std::vector<float> out(40);
  for (const Case& c : cases) {
    AttentionVariantParams params = smallKnobs(c.variant);
    EXPECT_EQ(attentionVariantProblem(params, 10), "");
    c.edit(params);
    const std::string problem = attentionVariantProblem(params, 10);
    EXPECT_NE(problem.find(c.knob), std::string::npos) << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
    EXPECT_THROW(attentionVariantReference(h.head, params), Error) << c.knob;
    EXPECT_THROW(attentionVariantFast(h.head, params, out.data()), Error) << c.knob;
  }
  EXPECT_NE(attentionVariantProblem(smallKnobs(AttentionVariant::Exact), 0).find("n >= 1"), std::string::npos);
  AttentionVariantParams tooMany = smallKnobs(AttentionVariant::Linformer);
  tooMany.projected = 1000;  // clamped to n, not an error
  EXPECT_EQ(attentionVariantProblem(tooMany, 10), "");
  EXPECT_EQ(attentionVariantReference(h.head, tooMany).projectedRows, 10);
  HeadQkv noD = h.head;
  noD.d = 0;
  EXPECT_THROW(attentionVariantFast(noD, smallKnobs(AttentionVariant::Exact), out.data()), Error);
}

TEST(EfficientAttention, NamesRoundTrip) {
  for (AttentionVariant v : allAttentionVariants()) EXPECT_EQ(attentionVariantFromName(attentionVariantName(v)), v);
  EXPECT_FALSE(attentionVariantFromName("reformer").has_value());
  EXPECT_EQ(allAttentionVariants().size(), 7u);
  EXPECT_TRUE(isExactVariant(AttentionVariant::Flash));
  EXPECT_FALSE(isExactVariant(AttentionVariant::Window));
}

TEST(EfficientAttention, BytesAreLinearInNExceptExactAndDoNotOverflow) {
  EXPECT_EQ(naiveScoresBytes(65536), size_t{1} << 34);  // past 2^31: size_t all the way
  const int d = 8;
  for (AttentionVariant variant : allAttentionVariants()) {
    RandomHead small(256, d, true, 10), large(1024, d, true, 10);
    const AttentionVariantParams params = smallKnobs(variant);
    std::vector<float> out(static_cast<size_t>(1024) * d);
    const size_t a = attentionVariantFast(small.head, params, out.data());
    const size_t b = attentionVariantFast(large.head, params, out.data());
    EXPECT_GT(a, 0u) << attentionVariantName(variant);
    if (variant == AttentionVariant::Exact) {
      EXPECT_EQ(b, naiveScoresBytes(1024));
    } else {
      EXPECT_LE(b, 4 * a + 1024) << attentionVariantName(variant) << " grows faster than n";
    }
  }
}

}  // namespace
}  // namespace tscope

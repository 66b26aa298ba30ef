// Positional encodings against their formulas and against the properties that make them work:
// sinusoidal dot products and RoPE query-key dot products depend only on the offset between
// positions; ALiBi slopes follow the paper's recipe. Every comparison prints its largest difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/nn/positional.h"

using namespace tscope;

namespace {

// Tracks the largest |got - want| seen and where it was, for the failure message and the log.
struct MaxDifference {
  double value = 0;
  std::string where;  // empty until the first comparison
  void see(double got, double want, const std::string& at) {
    const double diff = std::isnan(got - want) ? INFINITY : std::fabs(got - want);
    if (diff > value || where.empty()) {
      value = diff;
      where = at;
    }
  }
  std::string describe() const {
    char text[64];
    std::snprintf(text, sizeof text, "%.3g", value);
    return "largest |diff| " + std::string(text) + " at " + (where.empty() ? "nothing compared" : where);
  }
};

std::string at(int a, int b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

std::vector<float> randomValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float& v : values) v = uniform(rng);
  return values;
}

double dot(const float* a, const float* b, int n) {
  double sum = 0;
  for (int k = 0; k < n; ++k) sum += static_cast<double>(a[k]) * b[k];
  return sum;
}

// One head vector of headDim values turned to position `position`.
std::vector<float> rotatedTo(std::vector<float> vector, int position, double base) {
  applyRope(vector.data(), 1, 1, static_cast<int>(vector.size()), static_cast<int>(vector.size()), position, base);
  return vector;
}

// Expects call() to throw tscope::Error whose message is one line containing `expected`.
void expectError(const std::function<void()>& call, const std::string& expected) {
  try {
    call();
    ADD_FAILURE() << "no tscope::Error; expected one mentioning \"" << expected << "\"";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(expected), std::string::npos) << "message: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "message: " << message;
  }
}

}  // namespace

TEST(Positional, SinusoidalMatchesTheFormula) {
  const int T = 300;
  for (double base : {10000.0, 100.0, 1e6}) {
    for (int d : {1, 2, 7, 16, 65}) {
      const std::vector<float> pe = sinusoidalEncoding(T, d, base);
      ASSERT_EQ(pe.size(), static_cast<size_t>(T) * d);
      MaxDifference diff;
      for (int t = 0; t < T; ++t) {
        for (int column = 0; column < d; ++column) {
          // Written as in the paper: t / base^(2i/d), sin in even columns, cos in odd ones.
          const int pair = column / 2;  // columns 2i and 2i + 1 share a frequency
          const double angle = t / std::pow(base, 2.0 * pair / d);
          const double want = column % 2 == 0 ? std::sin(angle) : std::cos(angle);
          diff.see(pe[static_cast<size_t>(t) * d + column], want, at(t, column));
        }
      }
      // Values lie in [-1, 1]; storing as float costs at most half an ulp of 1, 6e-8.
      EXPECT_LE(diff.value, 1e-7) << "base " << base << " d " << d << ": " << diff.describe();
      std::printf("sinusoidal base %g d %d: %s\n", base, d, diff.describe().c_str());
    }
  }
  // Row 0 is (0, 1, 0, 1, ...): the odd-d trailing column is a sin column, so it is 0 there.
  const std::vector<float> odd = sinusoidalEncoding(1, 5, 10000.0);
  EXPECT_EQ(odd, (std::vector<float>{0, 1, 0, 1, 0}));
  EXPECT_TRUE(sinusoidalEncoding(0, 8, 10000.0).empty());
}

TEST(Positional, SinusoidalDotProductDependsOnlyOnTheOffset) {
  // PE(t) . PE(t+k) = sum_i [sin(w t) sin(w (t+k)) + cos(w t) cos(w (t+k))] = sum_i cos(w_i k),
  // with w_i = base^(-2i/d): a function of k alone (Vaswani et al. 2017, section 3.5).
  const int T = 512, d = 64;
  for (double base : {10000.0, 100.0, 1e6}) {
    const std::vector<float> pe = sinusoidalEncoding(T, d, base);
    const std::vector<float> similarity = rowSimilarity(pe.data(), T, d);
    MaxDifference diff;
    std::vector<double> byOffset;
    for (int k : {0, 1, 2, 5, 17, 100, 300}) {
      double closedForm = 0;
      for (int i = 0; i < d / 2; ++i) closedForm += std::cos(k * std::pow(base, -2.0 * i / d));
      byOffset.push_back(closedForm);
      for (int t = 0; t + k < T; ++t) diff.see(similarity[static_cast<size_t>(t) * T + t + k], closedForm, at(t, t + k));
    }
    // d float products of values in [-1, 1], each rounded once when stored: a few 1e-6 at most.
    EXPECT_LE(diff.value, 1e-5) << "base " << base << ": " << diff.describe();
    std::printf("sinusoidal PE(t).PE(t+k) vs closed form, base %g: %s\n", base, diff.describe().c_str());
    // The check has teeth: the similarity does change with the offset (PE(t).PE(t) = d/2).
    EXPECT_NEAR(byOffset[0], d / 2.0, 1e-12);
    EXPECT_GT(byOffset[0] - byOffset[1], 1e-3) << "base " << base;
  }
}

TEST(Positional, OddDimensionBreaksTheOffsetProperty) {
  // With odd d the lone trailing sin column adds sin(w t) sin(w (t+k)), which moves with t; the
  // property above really depends on complete sin/cos pairs.
  const int T = 200, d = 7;
  const std::vector<float> pe = sinusoidalEncoding(T, d, 10000.0);
  const std::vector<float> similarity = rowSimilarity(pe.data(), T, d);
  double spread = 0;
  for (int t = 0; t + 1 < T; ++t)
    spread = std::max(spread, std::fabs(static_cast<double>(similarity[static_cast<size_t>(t) * T + t + 1]) - similarity[1]));
  std::printf("odd d: spread of PE(t).PE(t+1) over t: %g\n", spread);
  EXPECT_GT(spread, 1e-3);
}

TEST(Positional, RowSimilarityIsThePlainDotProduct) {
  const int T = 17, d = 33;
  const std::vector<float> matrix = randomValues(static_cast<size_t>(T) * d, 7);
  const std::vector<float> similarity = rowSimilarity(matrix.data(), T, d);
  ASSERT_EQ(similarity.size(), static_cast<size_t>(T) * T);
  MaxDifference diff;
  for (int t = 0; t < T; ++t) {
    for (int u = 0; u < T; ++u) {
      float plain = 0;  // an independent float loop; the function sums in double
      for (int k = 0; k < d; ++k) plain += matrix[static_cast<size_t>(t) * d + k] * matrix[static_cast<size_t>(u) * d + k];
      diff.see(similarity[static_cast<size_t>(t) * T + u], plain, at(t, u));
      EXPECT_EQ(similarity[static_cast<size_t>(t) * T + u], similarity[static_cast<size_t>(u) * T + t]) << at(t, u);
    }
  }
  EXPECT_LE(diff.value, 1e-5) << diff.describe();
  std::printf("rowSimilarity vs float dot product: %s\n", diff.describe().c_str());
  EXPECT_TRUE(rowSimilarity(nullptr, 0, 4).empty());
}

TEST(Positional, RopeAnglesMatchTheFormula) {
  const int T = 64;
  for (double base : {10000.0, 500000.0, 100.0}) {
    for (int d : {2, 8, 64}) {
      const std::vector<float> angles = ropeAngles(T, d, base);
      ASSERT_EQ(angles.size(), static_cast<size_t>(T) * d / 2);
      MaxDifference diff;
      for (int t = 0; t < T; ++t) {
        for (int i = 0; i < d / 2; ++i) diff.see(angles[static_cast<size_t>(t) * d / 2 + i], t * std::pow(base, -2.0 * i / d), at(t, i));
      }
      // Angles reach 63 rad; float keeps about 7 digits of them.
      EXPECT_LE(diff.value, 63 * 1e-7) << "base " << base << " d " << d << ": " << diff.describe();
      std::printf("ropeAngles base %g d %d: %s\n", base, d, diff.describe().c_str());
    }
  }
  // Pair 0 turns by exactly t radians at any base.
  const std::vector<float> angles = ropeAngles(4, 6, 10000.0);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(angles[static_cast<size_t>(t) * 3], static_cast<float>(t));
}

TEST(Positional, RopeInverseFrequenciesOfLlama3ScalingHaveThreeBands) {
  // d = 8, base 100: f_i = 100^(-i/4) = 1, 10^-0.5, 0.1, 10^-1.5, wavelengths 2 pi / f_i = 6.28,
  // 19.87, 62.8, 198.7. Original context 40, frequency factors 1 and 4: wavelengths under
  // 40 / 4 = 10 keep f_i, over 40 / 1 = 40 take f_i / 8, and pair 1 (19.87) blends with
  // s = (40 / 19.87 - 1) / (4 - 1) = 0.33772: (1 - s) * 0.316228 / 8 + s * 0.316228 = 0.132976.
  const RopeScaling scaling{8.0, 1.0, 4.0, 40.0};
  const std::vector<double> scaled = ropeInverseFrequencies(8, 100.0, scaling);
  const double want[] = {1.0, 0.13297613927107155, 0.0125, 0.003952847075210474};
  ASSERT_EQ(scaled.size(), 4u);
  MaxDifference diff;
  for (int i = 0; i < 4; ++i) diff.see(scaled[i] / want[i], 1.0, "pair " + std::to_string(i));
  EXPECT_LE(diff.value, 1e-14) << diff.describe();
  std::printf("ropeInverseFrequencies (Llama 3 scaling) vs hand-computed, relative: %s\n", diff.describe().c_str());
  // No scaling: exactly the plain base^(-2i/d) that applyRope and ropeAngles use.
  const std::vector<double> plain = ropeInverseFrequencies(8, 100.0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(plain[i], std::pow(100.0, -2.0 * i / 8)) << "pair " << i;
  // Llama 3.1 8B's own values (D 128, base 500000, factor 8, 1, 4, 8192): the fastest pair is kept,
  // the slowest divided by 8, and the blend is continuous at both band edges (s = 0 and s = 1).
  const std::vector<double> llama = ropeInverseFrequencies(128, 500000.0, RopeScaling{8.0, 1.0, 4.0, 8192.0});
  EXPECT_EQ(llama[0], 1.0);
  EXPECT_DOUBLE_EQ(llama[63], std::pow(500000.0, -126.0 / 128) / 8);
  // d = 4: pair 1 has wavelength 2 pi sqrt(base), so base = (edge / 2 pi)^2 puts it on an edge;
  // just below and just above it the frequencies agree to the nudge.
  for (double edge : {2048.0, 8192.0}) {
    const double base = std::pow(edge / (2 * std::numbers::pi), 2);
    const double below = ropeInverseFrequencies(4, base * (1 - 1e-9), RopeScaling{8.0, 1.0, 4.0, 8192.0})[1];
    const double above = ropeInverseFrequencies(4, base * (1 + 1e-9), RopeScaling{8.0, 1.0, 4.0, 8192.0})[1];
    EXPECT_NEAR(below / above, 1.0, 1e-8) << "edge " << edge;
  }
  // A config without scaling gives the plain frequencies; its fields give the scaled ones.
  ModelConfig config;
  config.position_encoding = PositionEncoding::Rope;
  config.n_embd = 32;
  config.n_head = 4;
  config.position_base = 100.0;
  EXPECT_EQ(ropeInverseFrequencies(config), plain);
  config.rope_scaling_factor = 8.0;
  config.rope_original_context = 40;
  EXPECT_EQ(ropeInverseFrequencies(config), scaled);
  // Rotating with the scaled frequencies turns pair i by pos * f_i.
  const int pos = 7;
  std::vector<float> vector = {1, 0, 1, 0, 1, 0, 1, 0};
  applyRope(vector.data(), 1, 1, 8, 8, pos, 100.0, scaled.data());
  MaxDifference rotation;
  for (int i = 0; i < 4; ++i) {
    rotation.see(vector[2 * i], std::cos(pos * want[i]), at(i, 0));
    rotation.see(vector[2 * i + 1], std::sin(pos * want[i]), at(i, 1));
  }
  EXPECT_LE(rotation.value, 1e-7) << rotation.describe();
  const std::vector<float> angles = ropeAngles(3, scaled);
  EXPECT_FLOAT_EQ(angles[2 * 4 + 1], static_cast<float>(2 * want[1]));
  expectError([] { ropeInverseFrequencies(8, 100.0, RopeScaling{8.0, 4.0, 1.0, 40.0}); }, "ropeInverseFrequencies: the frequency factors");
  expectError([] { ropeInverseFrequencies(8, 100.0, RopeScaling{-1.0, 1.0, 4.0, 40.0}); }, "ropeInverseFrequencies: the scaling factor");
}

TEST(Positional, RopeRotatesEachPairByItsAngle) {
  // Three heads of 8 in rows of 30 floats: the 6 padding floats after the heads must not move.
  const int T = 9, nHeads = 3, headDim = 8, rowStride = 30, pos0 = 11;
  const double base = 10000.0;
  const std::vector<float> original = randomValues(static_cast<size_t>(T) * rowStride, 3);
  std::vector<float> rotated = original;
  applyRope(rotated.data(), T, nHeads, headDim, rowStride, pos0, base);
  MaxDifference formulaDiff, normDiff;
  for (int t = 0; t < T; ++t) {
    for (int head = 0; head < nHeads; ++head) {
      for (int i = 0; i < headDim / 2; ++i) {
        const size_t index = static_cast<size_t>(t) * rowStride + head * headDim + 2 * i;
        const double x0 = original[index], x1 = original[index + 1];
        const double theta = (pos0 + t) * std::pow(base, -2.0 * i / headDim);
        formulaDiff.see(rotated[index], x0 * std::cos(theta) - x1 * std::sin(theta), at(t, 2 * i));
        formulaDiff.see(rotated[index + 1], x0 * std::sin(theta) + x1 * std::cos(theta), at(t, 2 * i + 1));
        normDiff.see(std::hypot(rotated[index], rotated[index + 1]), std::hypot(x0, x1), at(t, i));
      }
    }
    for (int k = nHeads * headDim; k < rowStride; ++k) {
      const size_t index = static_cast<size_t>(t) * rowStride + k;
      EXPECT_EQ(rotated[index], original[index]) << "padding moved at " << at(t, k);
    }
  }
  EXPECT_LE(formulaDiff.value, 2e-7) << formulaDiff.describe();
  EXPECT_LE(normDiff.value, 2e-7) << normDiff.describe();
  std::printf("applyRope vs rotation formula: %s\n", formulaDiff.describe().c_str());
  std::printf("applyRope pair norms before vs after: %s\n", normDiff.describe().c_str());
  // Something did turn (the test would pass vacuously on an identity).
  double moved = 0;
  for (size_t k = 0; k < original.size(); ++k) moved = std::max(moved, static_cast<double>(std::fabs(rotated[k] - original[k])));
  EXPECT_GT(moved, 0.1);
}

TEST(Positional, RopeOfABlockEqualsRopeOfEachRowAlone) {
  // The KV-cache path rotates one new row at position pos0 + t; the prefill path rotates the
  // whole block from pos0. Both must give the same numbers.
  const int T = 12, nHeads = 2, headDim = 16, rowStride = 32, pos0 = 37;
  const double base = 10000.0;
  const std::vector<float> original = randomValues(static_cast<size_t>(T) * rowStride, 5);
  std::vector<float> block = original;
  applyRope(block.data(), T, nHeads, headDim, rowStride, pos0, base);
  MaxDifference diff;
  for (int t = 0; t < T; ++t) {
    std::vector<float> row(original.begin() + t * rowStride, original.begin() + (t + 1) * rowStride);
    applyRope(row.data(), 1, nHeads, headDim, rowStride, pos0 + t, base);
    for (int k = 0; k < rowStride; ++k) diff.see(block[static_cast<size_t>(t) * rowStride + k], row[k], at(t, k));
  }
  EXPECT_LE(diff.value, 1e-7) << diff.describe();
  std::printf("applyRope block from %d vs one row at a time: %s\n", pos0, diff.describe().c_str());
}

TEST(Positional, RopeQueryKeyDotDependsOnlyOnTheOffset) {
  // (R_m q) . (R_n k) = q . R_(n-m) k because rotations compose (Su et al., RoFormer, eq. 16):
  // attention scores see only the relative position m - n.
  const int headDim = 16;
  for (double base : {10000.0, 100.0}) {
    const std::vector<float> q = randomValues(headDim, 11), k = randomValues(headDim, 12);
    const double scale = std::sqrt(dot(q.data(), q.data(), headDim) * dot(k.data(), k.data(), headDim));
    std::vector<double> scoreAtOffset;
    for (int offset : {0, 1, 3, 40}) {
      const double reference = dot(rotatedTo(q, offset, base).data(), rotatedTo(k, 0, base).data(), headDim);
      scoreAtOffset.push_back(reference);
      MaxDifference diff;
      for (int n : {1, 7, 100, 999, 4096}) {
        const double score = dot(rotatedTo(q, n + offset, base).data(), rotatedTo(k, n, base).data(), headDim);
        diff.see(score, reference, at(n + offset, n));
      }
      // Each rotated value carries one float rounding; the dot of 16 of them drifts by ~1e-7 |q||k|.
      EXPECT_LE(diff.value, 1e-6 * scale) << "base " << base << " offset " << offset << ": " << diff.describe();
      std::printf("RoPE q.k at (n + %d, n) vs (%d, 0), base %g: %s\n", offset, offset, base, diff.describe().c_str());
    }
    // And the score does depend on the offset, or the check above proves nothing.
    EXPECT_GT(std::fabs(scoreAtOffset[0] - scoreAtOffset[1]), 1e-3 * scale);
    EXPECT_GT(std::fabs(scoreAtOffset[1] - scoreAtOffset[2]), 1e-3 * scale);
  }
}

TEST(Positional, AlibiSlopesForPowersOfTwo) {
  // H = 8: 2^(-8h/8) = 2^-h, h = 1..8, exactly representable.
  EXPECT_EQ(alibiSlopes(8), (std::vector<float>{1.f / 2, 1.f / 4, 1.f / 8, 1.f / 16, 1.f / 32, 1.f / 64, 1.f / 128, 1.f / 256}));
  EXPECT_EQ(alibiSlopes(1), (std::vector<float>{1.f / 256}));
  EXPECT_EQ(alibiSlopes(4), (std::vector<float>{1.f / 4, 1.f / 16, 1.f / 64, 1.f / 256}));
  // H = 16: 2^(-h/2); odd h are irrational, so compare to the double rounded to float.
  const std::vector<float> sixteen = alibiSlopes(16);
  ASSERT_EQ(sixteen.size(), 16u);
  for (int h = 1; h <= 16; ++h) EXPECT_EQ(sixteen[h - 1], static_cast<float>(std::exp2(-h / 2.0))) << "h " << h;
}

TEST(Positional, AlibiSlopesForOtherHeadCounts) {
  // H = 12 by hand: the lower power of two is 8, giving 2^-1, 2^-2, ..., 2^-8. The 16-head slopes
  // are 2^-0.5, 2^-1, 2^-1.5, ..., 2^-8; every other one from the first is 2^-0.5, 2^-1.5, 2^-2.5,
  // 2^-3.5, ... and we need 12 - 8 = 4 of them: 0.7071067812, 0.3535533906, 0.1767766953, 0.0883883476.
  const std::vector<double> twelve = {0.5,       0.25,       0.125,        0.0625,       0.03125,      0.015625,
                                      0.0078125, 0.00390625, 0.7071067812, 0.3535533906, 0.1767766953, 0.0883883476};
  const std::vector<float> got = alibiSlopes(12);
  ASSERT_EQ(got.size(), twelve.size());
  MaxDifference diff;
  for (size_t h = 0; h < twelve.size(); ++h) diff.see(got[h], twelve[h], "h " + std::to_string(h + 1));
  // Stored as float: half an ulp is at most 3e-8 below 1; a wrong slope is off by 0.01 or more.
  EXPECT_LE(diff.value, 3e-8) << diff.describe();
  std::printf("ALiBi slopes H=12 vs hand list: %s\n", diff.describe().c_str());
  // H = 3: 2^-4, 2^-8 from two heads, then the first of four heads' 2^-2, 2^-4, 2^-6, 2^-8.
  EXPECT_EQ(alibiSlopes(3), (std::vector<float>{1.f / 16, 1.f / 256, 1.f / 4}));
  // H = 6: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1 and 2^-3 (the 1st and 3rd of the 8-head slopes).
  EXPECT_EQ(alibiSlopes(6), (std::vector<float>{1.f / 4, 1.f / 16, 1.f / 64, 1.f / 256, 1.f / 2, 1.f / 8}));
}

TEST(Positional, AlibiBiasAndCausalMask) {
  const int H = 12, T = 7;
  const std::vector<float> slopes = alibiSlopes(H);
  const std::vector<float> open = alibiBias(H, T, false), causal = alibiBias(H, T, true);
  ASSERT_EQ(open.size(), static_cast<size_t>(H) * T * T);
  ASSERT_EQ(causal.size(), open.size());
  MaxDifference diff;
  for (int h = 0; h < H; ++h) {
    for (int i = 0; i < T; ++i) {
      for (int j = 0; j < T; ++j) {
        const size_t index = (static_cast<size_t>(h) * T + i) * T + j;
        diff.see(open[index], -static_cast<double>(slopes[h]) * std::abs(i - j), "h " + std::to_string(h) + " " + at(i, j));
        if (j > i) {
          EXPECT_TRUE(std::isinf(causal[index]) && causal[index] < 0) << "h " << h << " " << at(i, j) << " = " << causal[index];
        } else {
          EXPECT_EQ(causal[index], open[index]) << "h " << h << " " << at(i, j);
        }
      }
      EXPECT_FALSE(std::signbit(open[(static_cast<size_t>(h) * T + i) * T + i])) << "diagonal should be +0";
    }
  }
  // The slopes were rounded to float; the bias is -m|i-j| from the unrounded slope, so they agree
  // to float rounding of values up to 6 * 0.71.
  EXPECT_LE(diff.value, 1e-6) << diff.describe();
  std::printf("ALiBi bias vs -slope*|i-j|: %s\n", diff.describe().c_str());
  // Exact spot checks with power-of-two slopes (H = 2: 1/16 and 1/256).
  const std::vector<float> two = alibiBias(2, 5, false);
  EXPECT_EQ(two[4 * 5 + 0], -4.f / 16);        // head 0, query 4, key 0
  EXPECT_EQ(two[25 + 1 * 5 + 4], -3.f / 256);  // head 1, query 1, key 3 away
  EXPECT_TRUE(alibiBias(4, 0, true).empty());
}

TEST(Positional, BadArgumentsThrowOneLineErrorsNamingThem) {
  float buffer[64] = {};
  expectError([] { sinusoidalEncoding(-1, 8, 10000.0); }, "sinusoidalEncoding: T must");
  expectError([] { sinusoidalEncoding(4, 0, 10000.0); }, "sinusoidalEncoding: d must");
  expectError([] { sinusoidalEncoding(4, 8, 0.0); }, "sinusoidalEncoding: base must");
  expectError([] { sinusoidalEncoding(4, 8, -2.0); }, "sinusoidalEncoding: base must");
  expectError([] { sinusoidalEncoding(4, 8, std::nan("")); }, "sinusoidalEncoding: base must");
  expectError([] { ropeAngles(-3, 8, 10000.0); }, "ropeAngles: T must");
  expectError([] { ropeAngles(4, 7, 10000.0); }, "ropeAngles: d (the head dimension) must");
  expectError([] { ropeAngles(4, 0, 10000.0); }, "ropeAngles: d (the head dimension) must");
  expectError([] { ropeAngles(4, 8, 0.0); }, "ropeAngles: base must");
  expectError([&] { applyRope(buffer, -1, 1, 8, 8, 0, 10000.0); }, "applyRope: T must");
  expectError([&] { applyRope(buffer, 1, 0, 8, 8, 0, 10000.0); }, "applyRope: nHeads must");
  expectError([&] { applyRope(buffer, 1, 1, 7, 8, 0, 10000.0); }, "applyRope: headDim must");
  expectError([&] { applyRope(buffer, 2, 2, 8, 15, 0, 10000.0); }, "applyRope: rowStride must");
  expectError([&] { applyRope(buffer, 1, 1, 8, 8, -1, 10000.0); }, "applyRope: pos0 must");
  expectError([&] { applyRope(buffer, 1, 1, 8, 8, 0, -1.0); }, "applyRope: base must");
  expectError([] { applyRope(nullptr, 1, 1, 8, 8, 0, 10000.0); }, "applyRope: x must");
  expectError([] { alibiSlopes(0); }, "alibiSlopes: H must");
  expectError([] { alibiBias(0, 4, true); }, "alibiBias: H must");
  expectError([] { alibiBias(4, -1, false); }, "alibiBias: T must");
  expectError([&] { rowSimilarity(buffer, -1, 4); }, "rowSimilarity: T must");
  expectError([&] { rowSimilarity(buffer, 2, 0); }, "rowSimilarity: d must");
  expectError([] { rowSimilarity(nullptr, 2, 4); }, "rowSimilarity: matrix must");
  // The message carries the bad value.
  try {
    ropeAngles(4, 7, 10000.0);
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "ropeAngles: d (the head dimension) must be even and >= 2 (got 7)");
  }
  // Zero rows are fine and touch nothing.
  EXPECT_NO_THROW(applyRope(nullptr, 0, 1, 8, 8, 0, 10000.0));
}

// The fused products of model/core/quant.h: dotRow, gemvRows and matmulFewRows decode each weight
// block as they stream it; they must agree with dequantize-then-dot (in double) to float rounding,
// 1e-5 of sum |w x|, on the vectorised path this build takes and on the scalar fallback alike.
#include <gtest/gtest.h>

#include "tests/quant_test_data.h"

using namespace tscope;
using tscope::testing::exactDot;
using tscope::testing::ExactDot;
using tscope::testing::randomBlocks;
using tscope::testing::randomRow;

namespace {

constexpr double kTolerance = 1e-5;  // of sum |w_i x_i|

std::string typeName(WeightType type) { return std::string(weightTypeInfo(type).name); }

// Row lengths of a test: Qwen2.5-0.5B's d_model (896) and d_ff (4864) where they are whole blocks
// (896 is not a whole number of the K-quants' 256-value blocks: GGUF files keep such rows in
// Q8_0 or other 32-value types), and 256, 512; odd float lengths for the vector paths' tails.
std::vector<int64_t> lengthsFor(WeightType type) {
  std::vector<int64_t> lengths;
  for (const int64_t n : {256, 512, 896, 4864, 37, 1000})
    if (rowBytes(type, n)) lengths.push_back(n);
  return lengths;
}

// A matrix of `rows` rows of random valid blocks (every code pattern) or, alternately, of
// quantized random weights (what a model file holds).
std::vector<uint8_t> randomMatrix(WeightType type, int64_t rows, int64_t values, std::mt19937& rng) {
  const size_t stride = *rowBytes(type, values);
  std::vector<uint8_t> matrix(stride * rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<uint8_t> row;
    if (r % 2 == 0) {
      row = randomBlocks(type, values / weightTypeInfo(type).blockValues, rng);
    } else {
      row.resize(stride);
      const std::vector<float> w = randomRow(values, rng);
      quantizeRow(type, w.data(), row.data(), values);
    }
    std::memcpy(matrix.data() + stride * r, row.data(), stride);
  }
  return matrix;
}

void expectClose(float got, const ExactDot& exact, const std::string& what) {
  EXPECT_LE(std::fabs(got - exact.value), kTolerance * exact.magnitude + 1e-30) << what << ": " << got << " against " << exact.value;
}

TEST(Quant, SimdPathIsTheOneTheBuildTargets) {
#if defined(__AVX512F__)
  EXPECT_STREQ(quantSimdPath(), "AVX-512");
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  EXPECT_STREQ(quantSimdPath(), "AVX2");
#else
  EXPECT_STREQ(quantSimdPath(), "scalar");
#endif
}

TEST(Quant, DotRowMatchesDequantizeThenDot) {
  std::mt19937 rng(21);
  for (const WeightType type : kAllWeightTypes)
    for (const int64_t values : lengthsFor(type)) {
      const int64_t rows = 7;  // odd: alternately random blocks and quantized weights
      const std::vector<uint8_t> matrix = randomMatrix(type, rows, values, rng);
      const std::vector<float> x = randomRow(values, rng);
      const size_t stride = *rowBytes(type, values);
      std::vector<float> gemv(rows);
      gemvRows(type, matrix.data(), stride, x.data(), gemv.data(), rows, values);
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* row = matrix.data() + stride * r;
        const ExactDot exact = exactDot(type, row, x.data(), values);
        const std::string what = typeName(type) + " length " + std::to_string(values) + " row " + std::to_string(r);
        const float fused = dotRow(type, row, x.data(), values);
        expectClose(fused, exact, what + " (" + quantSimdPath() + ")");
        expectClose(dotRowScalar(type, row, x.data(), values), exact, what + " (scalar)");
        EXPECT_LE(std::fabs(gemv[r] - fused), 2 * kTolerance * exact.magnitude) << what << ": gemvRows (four rows a tile) against dotRow";
      }
    }
}

// The vectorised path against the scalar one on the same rows: both are checked against the exact
// dot above; here rows of large and cancelling weights (random blocks' extreme codes and mins).
TEST(Quant, VectorPathAgreesWithScalarPath) {
  std::mt19937 rng(33);
  for (const WeightType type : kAllWeightTypes) {
    const int64_t values = weightTypeInfo(type).blockValues == 256 ? 2048 : 1024;
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<uint8_t> row = randomBlocks(type, values / weightTypeInfo(type).blockValues, rng);
      const std::vector<float> x = randomRow(values, rng);
      const ExactDot exact = exactDot(type, row.data(), x.data(), values);
      const float vector = dotRow(type, row.data(), x.data(), values), scalar = dotRowScalar(type, row.data(), x.data(), values);
      EXPECT_LE(std::fabs(vector - scalar), 2 * kTolerance * exact.magnitude) << typeName(type) << " trial " << trial;
    }
  }
}

// matmulFewRows for T = 1..4 (one tile) and 5, 7 (two tiles): out (T, rows) against the exact dot
// of each input row with each weight row, and against gemvRows of that input row.
TEST(Quant, MatmulFewRowsMatchesEachInputRow) {
  std::mt19937 rng(44);
  for (const WeightType type : kAllWeightTypes)
    for (const int64_t values : {static_cast<int64_t>(512), static_cast<int64_t>(4864)}) {
      if (!rowBytes(type, values)) continue;
      const int64_t rows = 5;
      const size_t stride = *rowBytes(type, values);
      const std::vector<uint8_t> matrix = randomMatrix(type, rows, values, rng);
      for (const int T : {1, 2, 3, 4, 5, 7}) {
        const std::vector<float> in = randomRow(T * values, rng);
        std::vector<float> out(static_cast<size_t>(T * rows), -1.0f), gemv(rows);
        matmulFewRows(type, matrix.data(), stride, in.data(), T, out.data(), rows, values);
        for (int t = 0; t < T; ++t) {
          const float* x = in.data() + t * values;
          gemvRows(type, matrix.data(), stride, x, gemv.data(), rows, values);
          for (int64_t n = 0; n < rows; ++n) {
            const std::string what = typeName(type) + " T " + std::to_string(T) + " input " + std::to_string(t) + " row " + std::to_string(n);
            const ExactDot exact = exactDot(type, matrix.data() + stride * n, x, values);
            expectClose(out[t * rows + n], exact, what);
            EXPECT_NEAR(out[t * rows + n], gemv[n], 2 * kTolerance * exact.magnitude) << what;
          }
        }
      }
    }
}

// A matrix whose rows sit at a stride beyond their bytes (a row of a larger tensor, unaligned).
TEST(Quant, GemvRowsHonoursTheRowStride) {
  std::mt19937 rng(55);
  for (const WeightType type : {WeightType::Q8_0, WeightType::Q4_K, WeightType::Q6_K, WeightType::BF16}) {
    const int64_t values = 512, rows = 6;  // a tile of four and a tail of two
    const size_t bytes = *rowBytes(type, values), stride = bytes + 7;
    std::vector<uint8_t> matrix(stride * rows + 1);
    const std::vector<uint8_t> packed = randomMatrix(type, rows, values, rng);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(matrix.data() + 1 + stride * r, packed.data() + bytes * r, bytes);
    const std::vector<float> x = randomRow(values, rng);
    std::vector<float> out(rows);
    gemvRows(type, matrix.data() + 1, stride, x.data(), out.data(), rows, values);
    std::vector<float> contiguous(rows);
    gemvRows(type, packed.data(), bytes, x.data(), contiguous.data(), rows, values);
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(out[r], contiguous[r]) << typeName(type) << " row " << r << ": the same sums from the same bytes";
  }
}

}  // namespace

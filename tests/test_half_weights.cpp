// Weights kept as 16-bit halves (model/core/half.h): the CPU backend's matmulPacked (the converting
// GEMV for up to 16 rows, the blocked GEMM beyond) and embedPacked against the plain-loop reference
// at odd sizes in both dtypes, and PackedMatrix's float32 layouts against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "model/core/half.h"
#include "model/generate/sampling.h"
#include "model/nn/backend.h"
#include "tests/test_backward_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomVector;

namespace {

// BF16 / F16 bit patterns of values in [-1, 1) (rounded by truncation: any pattern will do).
std::vector<uint16_t> randomHalves(size_t n, WeightType type, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> bits(n);
  for (auto& b : bits) {
    const float x = static_cast<float>(2 * rng.uniform() - 1);
    if (type == WeightType::BF16) {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      b = static_cast<uint16_t>(u >> 16);
    } else {  // F16: sign, a 5-bit exponent for |x| in [2^-14, 1), 10 mantissa bits
      const float a = std::fabs(x);
      int e;
      const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
      const int exponent = std::max(e - 1 + 15, 1);
      const int mantissa = static_cast<int>((m * 2 - 1) * 1024) & 0x3ff;
      b = static_cast<uint16_t>((x < 0 ? 0x8000 : 0) | (exponent << 10) | mantissa);
    }
  }
  return bits;
}

}  // namespace

// T 1..17 (17 and 40 take the blocked GEMM), K not a multiple of the SIMD width, N not a multiple
// of the 4-row tile (and N < 4), N past one 256-row GEMM block; 1 and 2 threads; with and without bias.
TEST(CpuOps, MatmulHalfMatchesReference) {
  struct Shape {
    int K, N;
  };
  auto reference = makeReferenceBackend();
  for (WeightType type : {WeightType::BF16, WeightType::F16})
    for (int threads : {1, 2})
      for (const Shape s : {Shape{7, 3}, Shape{33, 13}, Shape{100, 203}, Shape{257, 301}, Shape{896, 517}}) {
        auto cpu = makeCpuBackend(threads);
        const auto bits = randomHalves((size_t)s.N * s.K, type, 7 + s.K);
        const PackedMatrix weight{bits.data(), type, s.N, s.K, true};
        const auto bias = randomVector(s.N, 3);
        for (int T : {1, 2, 3, 4, 5, 8, 15, 16, 17, 40})
          for (const float* b : {(const float*)nullptr, bias.data()}) {
            const auto in = randomVector((size_t)T * s.K, 100 + T);
            std::vector<float> fast((size_t)T * s.N, NAN), ref((size_t)T * s.N, NAN);
            cpu->matmulPacked(fast.data(), in.data(), weight, b, T);
            reference->matmulPacked(ref.data(), in.data(), weight, b, T);
            const auto d = compare(fast, ref);
            EXPECT_LT(d.relative(), 1e-5) << (type == WeightType::BF16 ? "bf16" : "f16") << " threads " << threads << " T=" << T << " K=" << s.K
                                          << " N=" << s.N << (b ? " bias" : "") << ": " << d.describe();
          }
      }
}

TEST(CpuOps, EmbedHalfGathersConvertedRows) {
  const int V = 11, C = 19;
  const auto bits = randomHalves((size_t)V * C, WeightType::BF16, 5);
  const PackedMatrix wte{bits.data(), WeightType::BF16, V, C, false};
  const auto positions = randomVector((size_t)8 * C, 9);
  const int tokens[3] = {10, 0, 4};
  for (const float* pos : {(const float*)nullptr, positions.data()}) {
    std::vector<float> out((size_t)3 * C, NAN);
    makeCpuBackend(1)->embedPacked(out.data(), tokens, wte, pos, 3, 2);
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < C; ++c) {
        const float want = bfloat16ToFloat(bits[(size_t)tokens[t] * C + c]) + (pos ? pos[(size_t)(2 + t) * C + c] : 0.0f);
        ASSERT_EQ(out[(size_t)t * C + c], want) << "token " << t << " column " << c;
      }
  }
}

// BF16 0x3f80 = 1, 0xc000 = -2, 0x4040 = 3; F16 0x3c00 = 1, 0xc000 = -2, 0x4200 = 3.
TEST(PackedMatrix, ToLayoutKeepsOrTransposes) {
  const uint16_t bf16[6] = {0x3f80, 0xc000, 0x4040, 0x0000, 0x3f80, 0xc000};  // (2, 3): [1 -2 3; 0 1 -2]
  std::vector<float> out(6);
  PackedMatrix m{bf16, WeightType::BF16, 2, 3, false};
  m.toLayout(out.data());
  EXPECT_EQ(out, (std::vector<float>{1, -2, 3, 0, 1, -2}));
  m.transposedInLayout = true;  // tscope's (in, out) = (3, 2)
  m.toLayout(out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 0, -2, 1, 3, -2}));
  const uint16_t f16[3] = {0x3c00, 0xc000, 0x4200};
  std::vector<float> row(3);
  PackedMatrix{f16, WeightType::F16, 1, 3, true}.rowToFloat(0, row.data());
  EXPECT_EQ(row, (std::vector<float>{1, -2, 3}));
  EXPECT_EQ(m.bytes(), 12u);
}

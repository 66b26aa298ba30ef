// What the quantization tests (test_quant.cpp, test_quant_dot.cpp) share: random valid blocks of
// every type, random float rows, the exact (double) dot of a decoded row, and the repository path.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model/core/half.h"
#include "model/core/quant.h"

namespace tscope::testing {

// The repository: the build's TSCOPE_SOURCE_DIR, or (a test built by hand from the repository root)
// this file's folder's parent.
inline std::filesystem::path repositoryDir() {
#ifdef TSCOPE_SOURCE_DIR
  return TSCOPE_SOURCE_DIR;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path();
#endif
}

// An fp16 of either sign and magnitude 2^e, e uniform in [-20, -3] (subnormal halves included).
inline uint16_t smallHalf(std::mt19937& rng) {
  std::uniform_real_distribution<float> exponent(-20.0f, -3.0f);
  const float value = std::exp2(exponent(rng)) * (rng() % 2 ? 1.0f : -1.0f);
  return floatToHalf(value);
}

// `blocks` blocks of random bytes, every fp16 field (d; Q4_K / Q5_K's dmin) a small finite half:
// every bit pattern of the other fields is a valid block. Float types: random finite values.
inline std::vector<uint8_t> randomBlocks(WeightType type, int64_t blocks, std::mt19937& rng) {
  const WeightTypeInfo info = weightTypeInfo(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(blocks * info.blockBytes));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = bytes.data() + b * info.blockBytes;
    auto put = [&](int offset, uint16_t half) { std::memcpy(block + offset, &half, 2); };
    switch (type) {
      case WeightType::F32: {
        const float v = normal(rng);
        std::memcpy(block, &v, 4);
        break;
      }
      case WeightType::F16: put(0, floatToHalf(normal(rng))); break;
      case WeightType::BF16: put(0, floatToBfloat16(normal(rng))); break;
      case WeightType::Q8_0:
      case WeightType::Q4_0: put(0, smallHalf(rng)); break;
      case WeightType::Q4_K:
      case WeightType::Q5_K:
        put(0, smallHalf(rng));
        put(2, smallHalf(rng));
        break;
      case WeightType::Q6_K: put(208, smallHalf(rng)); break;
    }
  }
  return bytes;
}

// n floats from N(0, 1), with a few outliers (x 8) as real weight rows have.
inline std::vector<float> randomRow(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng) * (rng() % 97 == 0 ? 8.0f : 1.0f);
  return x;
}

// The exact dot of a decoded row with x (in double) and sum |w_i x_i|, the scale of its rounding.
struct ExactDot {
  double value = 0, magnitude = 0;
};
inline ExactDot exactDot(WeightType type, const uint8_t* row, const float* x, int64_t values) {
  std::vector<float> w(static_cast<size_t>(values));
  dequantizeRow(type, row, w.data(), values);
  ExactDot dot;
  for (int64_t i = 0; i < values; ++i) {
    dot.value += static_cast<double>(w[i]) * x[i];
    dot.magnitude += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  return dot;
}

}  // namespace tscope::testing

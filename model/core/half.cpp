// 16-bit float conversions (branch-free, so loops over them vectorise). The hot loops over half
// weights (the matmuls) live in the backends.
#include "model/core/half.h"

#include <bit>
#include <cmath>

namespace tscope {

float halfToFloat(uint16_t h) {
  // Every case is computed and one is selected, so the conversion loop has no branches to
  // mispredict and can vectorise. Subnormals go through an integer-to-float conversion, so they
  // stay exact even when flush-to-zero / denormals-are-zero modes are on.
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  const uint32_t normalBits = ((exponent + 127 - 15) << 23) | (mantissa << 13);
  const uint32_t infinityOrNanBits = 0x7f800000u | (mantissa << 13);  // NaN payload kept
  const uint32_t zeroOrSubnormalBits = std::bit_cast<uint32_t>(static_cast<float>(mantissa) * 0x1p-24f);
  const uint32_t bits = exponent == 0 ? zeroOrSubnormalBits : exponent == 0x1f ? infinityOrNanBits : normalBits;
  return std::bit_cast<float>(sign | bits);
}

float bfloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t floatToHalf(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN: a quiet NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round past 65504: infinity
  if (magnitude < 0x38800000u) {
    // Below 2^-14, the smallest normal half: a multiple of 2^-24, found by scaling (exact) and
    // rounding to an integer (ties to even in the default rounding mode); 1024 is 2^-14 itself.
    const float scaled = std::bit_cast<float>(magnitude) * 0x1p24f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Rebias the exponent (127 -> 15) and drop 13 mantissa bits, adding just under half of the
  // last kept bit plus that bit's value: ties round to even, and a carry moves into the exponent.
  const uint32_t rounded = (magnitude - (112u << 23)) + 0xfffu + ((magnitude >> 13) & 1u);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

uint16_t floatToBfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN: quiet
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace tscope

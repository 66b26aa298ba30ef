// 16-bit float conversions (branch-free, so loops over them vectorise) and HalfMatrix's float32
// views. The hot loops over half weights (the matmuls) live in the backends.
#include "model/core/half.h"

#include <bit>

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

void halvesToFloat(const uint16_t* in, HalfType type, float* out, size_t n) {
  if (type == HalfType::Bf16)
    for (size_t i = 0; i < n; ++i) out[i] = bfloat16ToFloat(in[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(in[i]);
}

void HalfMatrix::toLayout(float* out) const {
  if (!transposedInLayout) {
    halvesToFloat(data, type, out, static_cast<size_t>(rows) * cols);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = halfValue(data[r * cols + c], type);
}

}  // namespace tscope

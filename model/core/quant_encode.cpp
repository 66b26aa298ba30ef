// Encoding float32 rows as the block formats of quant.h (quantizeRow): ggml's reference
// quantizers for Q8_0 and Q4_0 (ggml-quants.c's quantize_row_q8_0_ref, quantize_row_q4_0_ref, the
// same operations in the same order), and for the K-quants a simple covering scheme of our own
// (not llama.cpp's search): every sub-block's grid of codes spans its values, so each weight is
// within half a step of its input.
#include <algorithm>
#include <cmath>

#include "model/core/quant.h"
#include "model/core/quant_blocks.h"

namespace tscope {

using namespace quant_detail;

namespace {

void writeU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

// The smallest fp16 value >= v (v >= 0): a super-block scale rounded up, so that the sub-block
// codes found by dividing by it stay within their bits.
float halfAtLeast(float v, uint8_t* out) {
  uint16_t h = floatToHalf(v);
  if (halfToFloat(h) < v) ++h;  // positive halves are ordered as their bits
  writeU16(out, h);
  return halfToFloat(h);
}

// 1 / d, or 0 when d is 0 or so small that 1 / d is not finite (a block of zeros).
float inverse(float d) {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  return std::isfinite(id) ? id : 0.0f;
}

// ggml's quantize_row_q8_0_ref: d = amax / 127 (stored as fp16), q = round(x / d) away from zero.
void encodeQ8_0(const float* x, uint8_t* block) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127, id = inverse(d);
  writeU16(block, floatToHalf(d));
  for (int i = 0; i < 32; ++i) block[kQ8_0Qs + i] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[i] * id)));
}

// ggml's quantize_row_q4_0_ref: d = (the value of largest magnitude, sign kept) / -8, so that value
// is code 0 (d * -8); q = min(15, floor(x / d + 8.5)): the opposite end, x / d = 8, clips to 15.
void encodeQ4_0(const float* x, uint8_t* block) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; ++i)
    if (amax < std::fabs(x[i])) amax = std::fabs(x[i]), max = x[i];
  const float d = max / -8, id = inverse(d);
  writeU16(block, floatToHalf(d));
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f)), q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    block[kQ4_0Qs + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// The 12 scale bytes of Q4_K / Q5_K from eight 6-bit scales and mins (the inverse of scaleMinK4).
void packScaleMinK4(const int* scales, const int* mins, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(scales[j] | ((scales[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(mins[j] | ((mins[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4));
  }
}

// Q4_K (levels 15) and Q5_K (31). Sub-block j (32 weights) spans [lo_j, hi_j], lo_j = min(0, its
// lowest) (a K-quant's min is subtracted, never added). dmin is the fp16 at or above max(-lo_j) / 63
// and m_j = ceil(-lo_j / dmin), so the offset o_j = dmin * m_j >= -lo_j; then d is the fp16 at or
// above max(hi_j + o_j) / (levels * 63) and sc_j = ceil((hi_j + o_j) / (levels * d)), so the grid
// s_j * q - o_j (s_j = d * sc_j, q = 0..levels) covers [lo_j, hi_j]: rounding to it errs by at most s_j / 2.
void encodeQ45K(const float* x, uint8_t* block, int levels) {
  float high[8], offset[8], maxOffset = 0;
  for (int j = 0; j < 8; ++j) {
    float lo = 0, hi = x[32 * j];
    for (int i = 0; i < 32; ++i) lo = std::min(lo, x[32 * j + i]), hi = std::max(hi, x[32 * j + i]);
    high[j] = hi, offset[j] = -lo;
    maxOffset = std::max(maxOffset, -lo);
  }
  const float dmin = halfAtLeast(maxOffset / 63, block + 2);
  int mins[8], scales[8];
  float top[8], maxTop = 0;
  for (int j = 0; j < 8; ++j) {
    mins[j] = dmin > 0 ? std::min(63, static_cast<int>(std::ceil(offset[j] / dmin))) : 0;
    offset[j] = dmin * static_cast<float>(mins[j]);
    top[j] = std::max(0.0f, high[j] + offset[j]);
    maxTop = std::max(maxTop, top[j]);
  }
  const float d = halfAtLeast(maxTop / static_cast<float>(levels * 63), block);
  for (int j = 0; j < 8; ++j) scales[j] = d > 0 ? std::min(63, static_cast<int>(std::ceil(top[j] / (static_cast<float>(levels) * d)))) : 0;
  packScaleMinK4(scales, mins, block + kQ4KScales);
  const bool fiveBits = levels == 31;
  uint8_t* qs = block + (fiveBits ? kQ5KQs : kQ4KQs);
  uint8_t* qh = block + kQ5KQh;
  if (fiveBits) std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      int q[2];
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * c + half;
        const float step = d * static_cast<float>(scales[j]);
        const float code = step > 0 ? std::nearbyint((x[64 * c + 32 * half + l] + offset[j]) / step) : 0.0f;
        q[half] = static_cast<int>(std::clamp(code, 0.0f, static_cast<float>(levels)));
      }
      qs[32 * c + l] = static_cast<uint8_t>((q[0] & 0xF) | ((q[1] & 0xF) << 4));
      if (fiveBits) qh[l] = static_cast<uint8_t>(qh[l] | ((q[0] >> 4) << (2 * c)) | ((q[1] >> 4) << (2 * c + 1)));
    }
}

// Q6_K: sub-block j (16 weights) spans [-amax_j, amax_j]; d is the fp16 at or above max(amax_j) /
// (31 * 127) and sc_j = ceil(amax_j / (31 d)) <= 127, so codes round(x / (d sc_j)) stay in -31..31.
void encodeQ6K(const float* x, uint8_t* block) {
  float amax[16], maxAmax = 0;
  for (int j = 0; j < 16; ++j) {
    amax[j] = 0;
    for (int i = 0; i < 16; ++i) amax[j] = std::max(amax[j], std::fabs(x[16 * j + i]));
    maxAmax = std::max(maxAmax, amax[j]);
  }
  const float d = halfAtLeast(maxAmax / (31 * 127), block + kQ6KD);
  float step[16];
  for (int j = 0; j < 16; ++j) {
    const int scale = d > 0 ? std::min(127, static_cast<int>(std::ceil(amax[j] / (31 * d)))) : 0;
    block[kQ6KScales + j] = static_cast<uint8_t>(static_cast<int8_t>(scale));
    step[j] = d * static_cast<float>(scale);
  }
  std::memset(block + kQ6KQl, 0, 128 + 64);  // ql and qh are filled by or-ing bits in
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) {
        const int position = 128 * half + 32 * k + l;
        const float s = step[position / 16];
        const float code = s > 0 ? std::clamp(std::nearbyint(x[position] / s), -32.0f, 31.0f) : 0.0f;
        const int q = static_cast<int>(code) + 32;  // 0..63
        block[kQ6KQl + 64 * half + l + 32 * (k & 1)] |= static_cast<uint8_t>((q & 0xF) << (4 * (k >> 1)));
        block[kQ6KQh + 32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
      }
}

}  // namespace

void quantizeRow(WeightType type, const float* in, uint8_t* out, int64_t values) {
  checkValues(type, values, "quantizeRow");
  const WeightTypeInfo info = weightTypeInfo(type);
  const int64_t blocks = values / info.blockValues;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* x = in + b * info.blockValues;
    uint8_t* block = out + b * info.blockBytes;
    switch (type) {
      case WeightType::F32: std::memcpy(block, x, sizeof(float)); break;
      case WeightType::F16: writeU16(block, floatToHalf(*x)); break;
      case WeightType::BF16: writeU16(block, floatToBfloat16(*x)); break;
      case WeightType::Q8_0: encodeQ8_0(x, block); break;
      case WeightType::Q4_0: encodeQ4_0(x, block); break;
      case WeightType::Q4_K: encodeQ45K(x, block, 15); break;
      case WeightType::Q5_K: encodeQ45K(x, block, 31); break;
      case WeightType::Q6_K: encodeQ6K(x, block); break;
    }
  }
}

}  // namespace tscope

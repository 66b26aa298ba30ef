// A quantized row as a display shows it (quant.h's describeRow, rowCodes): each (sub-)block's
// scale and min, and each weight's integer code, so that weight = scale * code - min.
#include "model/core/quant.h"
#include "model/core/quant_blocks.h"

namespace tscope {

using namespace quant_detail;

namespace {

// The sub-blocks of one block at `block`, the block's first weight at `first`.
void describeBlock(WeightType type, const uint8_t* block, int64_t first, std::vector<QuantSubBlock>& out) {
  QuantSubBlock sub;
  sub.first = first;
  switch (type) {
    case WeightType::Q8_0:
    case WeightType::Q4_0:
      sub.count = 32;
      sub.superScale = sub.scale = readHalf(block);
      sub.scaleCode = 1;
      sub.codeMin = type == WeightType::Q8_0 ? -128 : -8;
      sub.codeMax = type == WeightType::Q8_0 ? 127 : 7;
      out.push_back(sub);
      return;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
      sub.count = 32;
      sub.superScale = readHalf(block);
      sub.superMin = readHalf(block + 2);
      sub.codeMax = type == WeightType::Q4_K ? 15 : 31;
      for (int j = 0; j < 8; ++j) {
        scaleMinK4(j, block + kQ4KScales, sub.scaleCode, sub.minCode);
        sub.first = first + 32 * j;
        sub.scale = sub.superScale * static_cast<float>(sub.scaleCode);
        sub.min = sub.superMin * static_cast<float>(sub.minCode);
        out.push_back(sub);
      }
      return;
    case WeightType::Q6_K:
      sub.count = 16;
      sub.superScale = readHalf(block + kQ6KD);
      sub.codeMin = -32;
      sub.codeMax = 31;
      for (int j = 0; j < 16; ++j) {
        sub.first = first + 16 * j;
        sub.scaleCode = static_cast<int8_t>(block[kQ6KScales + j]);
        sub.scale = sub.superScale * static_cast<float>(sub.scaleCode);
        out.push_back(sub);
      }
      return;
    default: return;  // the float types have no blocks
  }
}

// The codes of one block's weights (out: the block's blockValues entries).
void blockCodes(WeightType type, const uint8_t* block, int* out) {
  switch (type) {
    case WeightType::Q8_0:
      for (int i = 0; i < 32; ++i) out[i] = static_cast<int8_t>(block[kQ8_0Qs + i]);
      return;
    case WeightType::Q4_0:
      for (int j = 0; j < 16; ++j) out[j] = (block[kQ4_0Qs + j] & 0xF) - 8, out[j + 16] = (block[kQ4_0Qs + j] >> 4) - 8;
      return;
    case WeightType::Q4_K:
    case WeightType::Q5_K: {
      const bool fiveBits = type == WeightType::Q5_K;
      const uint8_t* qs = block + (fiveBits ? kQ5KQs : kQ4KQs);
      const uint8_t* qh = block + kQ5KQh;
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          out[64 * c + l] = (qs[32 * c + l] & 0xF) | (fiveBits ? ((qh[l] >> (2 * c)) & 1) << 4 : 0);
          out[64 * c + 32 + l] = (qs[32 * c + l] >> 4) | (fiveBits ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0);
        }
      return;
    }
    case WeightType::Q6_K:
      for (int half = 0; half < 2; ++half)
        for (int k = 0; k < 4; ++k)
          for (int l = 0; l < 32; ++l) {
            const int nibble = (block[kQ6KQl + 64 * half + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xF;
            const int top = (block[kQ6KQh + 32 * half + l] >> (2 * k)) & 3;
            out[128 * half + 32 * k + l] = (nibble | (top << 4)) - 32;
          }
      return;
    default: return;
  }
}

}  // namespace

std::vector<QuantSubBlock> describeRow(WeightType type, const uint8_t* row, int64_t values) {
  checkValues(type, values, "describeRow");
  const WeightTypeInfo info = weightTypeInfo(type);
  std::vector<QuantSubBlock> out;
  if (!info.quantized) return out;
  for (int64_t b = 0; b < values / info.blockValues; ++b) describeBlock(type, row + b * info.blockBytes, b * info.blockValues, out);
  return out;
}

std::vector<int> rowCodes(WeightType type, const uint8_t* row, int64_t values) {
  checkValues(type, values, "rowCodes");
  const WeightTypeInfo info = weightTypeInfo(type);
  if (!info.quantized) return {};
  std::vector<int> out(static_cast<size_t>(values));
  for (int64_t b = 0; b < values / info.blockValues; ++b) blockCodes(type, row + b * info.blockBytes, out.data() + b * info.blockValues);
  return out;
}

}  // namespace tscope

// Decoding quantized rows (dequantizeRow), the scalar dot products every build has, and the entry
// points that take the vectorised kernels of quant_simd.cpp when the build has them. The formats
// are ggml's (quant.h; ggml-quants.c's dequantize_row_q8_0, _q4_0, _q4_K, _q5_K, _q6_K).
#include "model/core/quant.h"

#include <algorithm>

#include "model/core/quant_blocks.h"

namespace tscope {

using namespace quant_detail;

namespace {

// Every product below is exact in float32 (an fp16 d has 11 significant bits, the sub-block
// scales at most 8 and the codes at most 6, 24 in all), so whether the compiler fuses d*sc*q - m
// into one FMA or not, each weight is ggml's value bit for bit.

void decodeQ8_0(const uint8_t* block, float* out) {
  const float d = readHalf(block);
  const auto* qs = reinterpret_cast<const int8_t*>(block + kQ8_0Qs);
  for (int i = 0; i < 32; ++i) out[i] = d * static_cast<float>(qs[i]);
}

void decodeQ4_0(const uint8_t* block, float* out) {
  const float d = readHalf(block);
  const uint8_t* qs = block + kQ4_0Qs;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>((qs[j] & 0xF) - 8);
    out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_K and Q5_K: per 64-weight chunk c, sub-block 2c from the low nibbles of 32 bytes and 2c+1 from
// their high nibbles; Q5_K adds bit 2c / 2c+1 of qh[l] as 16 (qh null for Q4_K).
void decodeQ45K(const uint8_t* block, const uint8_t* qs, const uint8_t* qh, float* out) {
  const float d = readHalf(block), dmin = readHalf(block + 2);
  const uint8_t* scales = block + kQ4KScales;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    scaleMinK4(2 * c, scales, sc0, m0);
    scaleMinK4(2 * c + 1, scales, sc1, m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    for (int l = 0; l < 32; ++l) {
      const int high0 = qh ? ((qh[l] >> (2 * c)) & 1) << 4 : 0, high1 = qh ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0;
      out[64 * c + l] = d0 * static_cast<float>((qs[32 * c + l] & 0xF) | high0) - min0;
      out[64 * c + 32 + l] = d1 * static_cast<float>((qs[32 * c + l] >> 4) | high1) - min1;
    }
  }
}

void decodeQ6K(const uint8_t* block, float* out) {
  const float d = readHalf(block + kQ6KD);
  const auto* scales = reinterpret_cast<const int8_t*>(block + kQ6KScales);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = block + kQ6KQl + 64 * half;
    const uint8_t* qh = block + kQ6KQh + 32 * half;
    float* o = out + 128 * half;
    for (int l = 0; l < 32; ++l) {
      // Weight l + 32k: a nibble of ql[l] (k = 0, 2) or ql[l + 32] (k = 1, 3), low for k < 2, and
      // bits 2k, 2k+1 of qh[l] above it.
      for (int k = 0; k < 4; ++k) {
        const int nibble = (ql[l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0xF;
        const int q = (nibble | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
        const int position = l + 32 * k, sub = 8 * half + position / 16;  // 16-weight sub-block
        o[position] = d * static_cast<float>(scales[sub]) * static_cast<float>(q);
      }
    }
  }
}

// out = `values` weights from `row` (values a whole number of blocks; not checked here).
void decode(WeightType type, const uint8_t* row, float* out, int64_t values) {
  const WeightTypeInfo info = weightTypeInfo(type);
  const int64_t blocks = values / info.blockValues;
  switch (type) {
    case WeightType::F32: std::memcpy(out, row, static_cast<size_t>(values) * sizeof(float)); return;
    case WeightType::F16:
      for (int64_t i = 0; i < values; ++i) out[i] = halfToFloat(readU16(row + 2 * i));
      return;
    case WeightType::BF16:
      for (int64_t i = 0; i < values; ++i) out[i] = bfloat16ToFloat(readU16(row + 2 * i));
      return;
    case WeightType::Q8_0:
      for (int64_t b = 0; b < blocks; ++b) decodeQ8_0(row + b * info.blockBytes, out + b * 32);
      return;
    case WeightType::Q4_0:
      for (int64_t b = 0; b < blocks; ++b) decodeQ4_0(row + b * info.blockBytes, out + b * 32);
      return;
    case WeightType::Q4_K:
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = row + b * info.blockBytes;
        decodeQ45K(block, block + kQ4KQs, nullptr, out + b * 256);
      }
      return;
    case WeightType::Q5_K:
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = row + b * info.blockBytes;
        decodeQ45K(block, block + kQ5KQs, block + kQ5KQh, out + b * 256);
      }
      return;
    case WeightType::Q6_K:
      for (int64_t b = 0; b < blocks; ++b) decodeQ6K(row + b * info.blockBytes, out + b * 256);
      return;
  }
}

// out[r * outStride + j] = rows[j] . (x + r * xStride) for j < count, r < R: each chunk of 256
// weights decoded once into a buffer on the stack and dotted with every input row, eight partial
// sums per chunk, the chunks added in double.
void scalarTile(WeightType type, const uint8_t* const* rows, int count, const float* x, int64_t xStride, int R, int64_t values, float* out,
                int64_t outStride) {
  const WeightTypeInfo info = weightTypeInfo(type);
  float w[kChunkValues];
  for (int j = 0; j < count; ++j) {
    double total[4] = {0, 0, 0, 0};
    for (int64_t start = 0; start < values; start += kChunkValues) {
      const int n = static_cast<int>(std::min<int64_t>(kChunkValues, values - start));
      decode(type, rows[j] + start / info.blockValues * info.blockBytes, w, n);
      for (int r = 0; r < R; ++r) {
        const float* xr = x + r * xStride + start;
        float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int i = 0;
        for (; i + 8 <= n; i += 8)
          for (int k = 0; k < 8; ++k) partial[k] += w[i + k] * xr[i + k];
        for (; i < n; ++i) partial[i % 8] += w[i] * xr[i];
        total[r] += ((partial[0] + partial[1]) + (partial[2] + partial[3])) + ((partial[4] + partial[5]) + (partial[6] + partial[7]));
      }
    }
    for (int r = 0; r < R; ++r) out[r * outStride + j] = static_cast<float>(total[r]);
  }
}

// Up to four weight rows against up to four input rows: the vectorised kernels, else the scalar ones.
void tileProducts(WeightType type, const uint8_t* const* rows, int count, const float* x, int64_t xStride, int R, int64_t values, float* out,
                  int64_t outStride) {
  if (!simdTile(type, rows, count, x, xStride, R, values, out, outStride)) scalarTile(type, rows, count, x, xStride, R, values, out, outStride);
}

// out (T, rows) at row stride outStride = in (T, values) . W^T, four weight rows by four inputs at a time.
void tiles(WeightType type, const uint8_t* matrix, size_t rowStride, const float* in, int T, float* out, int64_t outStride, int64_t rows,
           int64_t values) {
  for (int64_t n0 = 0; n0 < rows; n0 += 4) {
    const int count = static_cast<int>(std::min<int64_t>(4, rows - n0));
    const uint8_t* tileRows[4];
    for (int j = 0; j < 4; ++j) tileRows[j] = matrix + static_cast<size_t>(n0 + std::min(j, count - 1)) * rowStride;
    for (int t0 = 0; t0 < T; t0 += 4)
      tileProducts(type, tileRows, count, in + static_cast<int64_t>(t0) * values, values, std::min(4, T - t0), values,
                   out + static_cast<int64_t>(t0) * outStride + n0, outStride);
  }
}

}  // namespace

void dequantizeRow(WeightType type, const uint8_t* row, float* out, int64_t values) {
  checkValues(type, values, "dequantizeRow");
  decode(type, row, out, values);
}

float dotRow(WeightType type, const uint8_t* row, const float* x, int64_t values) {
  checkValues(type, values, "dotRow");
  float out = 0;
  tileProducts(type, &row, 1, x, 0, 1, values, &out, 1);
  return out;
}

float dotRowScalar(WeightType type, const uint8_t* row, const float* x, int64_t values) {
  checkValues(type, values, "dotRowScalar");
  float out = 0;
  scalarTile(type, &row, 1, x, 0, 1, values, &out, 1);
  return out;
}

void gemvRows(WeightType type, const uint8_t* matrix, size_t rowStride, const float* x, float* out, int64_t rows, int64_t values) {
  checkValues(type, values, "gemvRows");
  tiles(type, matrix, rowStride, x, 1, out, rows, rows, values);
}

void matmulFewRows(WeightType type, const uint8_t* matrix, size_t rowStride, const float* in, int T, float* out, int64_t rows, int64_t values) {
  checkValues(type, values, "matmulFewRows");
  if (T < 0) throw Error("matmulFewRows: " + std::to_string(T) + " input rows");
  tiles(type, matrix, rowStride, in, T, out, rows, rows, values);
}

const char* quantSimdPath() { return simdPathName(); }

}  // namespace tscope

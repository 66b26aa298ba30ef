// What quant.cpp, quant_encode.cpp and quant_simd.cpp share about the block layouts (quant.h
// describes the formats): the byte offsets of each block's fields, the fp16 reads, Q4_K / Q5_K's
// packed 6-bit scales, the size check, and the entry of the vectorised kernels.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "model/core/error.h"
#include "model/core/half.h"
#include "model/core/weight_type.h"

namespace tscope::quant_detail {

// Byte offsets inside one block (ggml-common.h's struct order, no padding).
inline constexpr int kQ8_0Qs = 2;                               // after fp16 d
inline constexpr int kQ4_0Qs = 2;                               // after fp16 d
inline constexpr int kQ4KScales = 4, kQ4KQs = 16;               // after fp16 d, dmin
inline constexpr int kQ5KScales = 4, kQ5KQh = 16, kQ5KQs = 48;  // after fp16 d, dmin
inline constexpr int kQ6KQl = 0, kQ6KQh = 128, kQ6KScales = 192, kQ6KD = 208;
// Values per chunk: the sums of dotRow run per chunk (a whole number of blocks of every type).
inline constexpr int kChunkValues = 256;

inline uint16_t readU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);  // blocks are byte-aligned in a file
  return v;
}
inline float readHalf(const uint8_t* p) { return halfToFloat(readU16(p)); }

// Sub-block j's (0..7) 6-bit scale and min from a Q4_K / Q5_K block's 12 scale bytes q: bytes 0-3
// hold scales 0-3 and bytes 4-7 mins 0-3 in their low 6 bits; scales and mins 4-7 keep their low 4
// bits in bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in the top 2 bits of
// bytes 0-3 (scales) and 4-7 (mins). ggml-quants.c's get_scale_min_k4.
inline void scaleMinK4(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Throws unless `values` is a whole number of the type's blocks.
inline void checkValues(WeightType type, int64_t values, const char* what) {
  if (!rowBytes(type, values)) {
    const WeightTypeInfo info = weightTypeInfo(type);
    throw Error(std::string(what) + ": " + std::to_string(values) + " values of " + std::string(info.name) + " are not a whole number of " +
                std::to_string(info.blockValues) + "-value blocks");
  }
}

// out[r * outStride + j] = rows[j] . (x + r * xStride) for the count (1..4) weight rows (type,
// `values` weights each) and the R (1..4) input rows, by the vectorised kernels of quant_simd.cpp;
// false (nothing written) in a build without them.
bool simdTile(WeightType type, const uint8_t* const* rows, int count, const float* x, int64_t xStride, int R, int64_t values, float* out,
              int64_t outStride);
const char* simdPathName();

}  // namespace tscope::quant_detail

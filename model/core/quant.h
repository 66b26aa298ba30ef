// GGML's block quantizations (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; weight_type.h lists them with their
// block sizes) and the float types: rows decoded to float32, float32 rows encoded, and dot products
// and few-row matrix products that decode each weight block as they stream it (no float32 copy of
// the row), vectorised with AVX-512 or AVX2 where the build targets them, else scalar.
//
// The formats are ggml's (ggml-common.h's block_q* structs, ggml-quants.c's dequantize_row_q*):
//   Q8_0  32 weights: fp16 d, int8 qs[32];                       w = d * qs[i]
//   Q4_0  32 weights: fp16 d, uint8 qs[16];                      w = d * (nibble - 8), weight j < 16
//         the low nibble of qs[j], weight j + 16 its high nibble
//   Q4_K  256 weights: fp16 d, dmin, uint8 scales[12], qs[128];  8 sub-blocks of 32, each a 6-bit
//         scale sc and min m (packed as ggml's get_scale_min_k4); w = d*sc * q - dmin*m, q a nibble:
//         64-weight chunk c takes its first 32 from the low nibbles of qs[32c..32c+31] (sub-block 2c),
//         its next 32 from their high nibbles (sub-block 2c+1)
//   Q5_K  256 weights: as Q4_K with uint8 qh[32] between scales and qs: bit 2c of qh[l] adds 16 to
//         weight 64c + l, bit 2c+1 to weight 64c + 32 + l
//   Q6_K  256 weights: uint8 ql[128], qh[64], int8 scales[16], fp16 d; 16 sub-blocks of 16,
//         w = d * scales[i / 16] * (q - 32) with q 6 bits: in each half of 128 weights (ql + 64h,
//         qh + 32h), weight l + 32k (l < 32) takes the low (k = 0, 1) or high (k = 2, 3) nibble of
//         ql[l + 32 (k & 1)] and bits 2k, 2k+1 of qh[l] as its top two bits.
//
// Every count of values must be a whole number of the type's blocks (any count for the float
// types): the functions throw tscope::Error otherwise. Each function is single-threaded and pure;
// callers split rows across threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/core/weight_type.h"

namespace tscope {

// out (values) = the row's weights as float32 (F32 copied, F16 / BF16 widened, blocks decoded as
// ggml does: every product in these formats is exact in float32, so the values are ggml's bit for bit).
void dequantizeRow(WeightType type, const uint8_t* row, float* out, int64_t values);

// Encodes `values` floats as one row of `type` (rowBytes(type, values) bytes at out). F16 / BF16
// round to nearest even. Q8_0 and Q4_0 are ggml's reference quantizers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref): d = amax / 127 and q = round(x / d); d = (the value of largest magnitude)
// / -8 and q = min(15, floor(x / d + 8.5)). The K-quants use a simple scheme, not llama.cpp's
// search: each sub-block's range [min(0, lowest), highest] (Q6_K: [-amax, amax]) is covered by its
// grid of codes, the 6-bit (Q6_K: 8-bit) sub-block scales and mins rounded up from the super-block
// scales, so every weight is within half its sub-block's step (scale) of the input:
// |w - x| <= scale / 2, up to float rounding. Inputs must be finite and small enough for the fp16
// scales (|x| < 65504 * the format's largest code).
void quantizeRow(WeightType type, const float* in, uint8_t* out, int64_t values);

// sum_i w_i * x_i over the row's weights as dequantizeRow gives them, decoded block by block as the
// row streams (vectorised where the build allows). Sums run per 256-value chunk and the chunks are
// then added, so the result agrees with dequantize-then-dot within a few dozen float roundings of
// sum_i |w_i x_i|.
float dotRow(WeightType type, const uint8_t* row, const float* x, int64_t values);
// The same product by the scalar code every build has (the fallback without AVX2; for tests).
float dotRowScalar(WeightType type, const uint8_t* row, const float* x, int64_t values);

// out[r] = row r . x for the `rows` rows of `values` weights at matrix + r * rowStride bytes (as
// dotRow to float rounding: four rows share each load of x, so the sums' order differs).
void gemvRows(WeightType type, const uint8_t* matrix, size_t rowStride, const float* x, float* out, int64_t rows, int64_t values);

// out (T, rows) = in (T, values) . W^T, W the `rows` rows at matrix + r * rowStride: tiles of four
// weight rows by up to four input rows, each weight block decoded once per tile (decode and short
// prompts; a larger T is taken four input rows at a time).
void matmulFewRows(WeightType type, const uint8_t* matrix, size_t rowStride, const float* in, int T, float* out, int64_t rows, int64_t values);

// Which vectorised path dotRow, gemvRows and matmulFewRows take in this build: "AVX-512", "AVX2" or "scalar".
const char* quantSimdPath();

// One block or sub-block of a quantized row as the formats define it: weight i (first <= i <
// first + count) is scale * code_i - min, code_i an integer in [codeMin, codeMax] (rowCodes).
struct QuantSubBlock {
  int64_t first = 0;             // the index of its first weight in the row
  int count = 0;                 // its weights: 32 (Q8_0, Q4_0, Q4_K, Q5_K) or 16 (Q6_K)
  float scale = 0, min = 0;      // the effective step and offset: Q4_K / Q5_K d*sc and dmin*m; Q6_K d*sc; else d and 0
  float superScale = 0;          // the block's fp16 d (for the K-quants the super-block's d)
  float superMin = 0;            // Q4_K / Q5_K: the super-block's dmin; else 0
  int scaleCode = 0;             // the K-quants' 6-bit sc (Q6_K: the int8 scale); 1 for Q8_0 / Q4_0
  int minCode = 0;               // Q4_K / Q5_K: the 6-bit m; else 0
  int codeMin = 0, codeMax = 0;  // the codes' range: Q8_0 -128..127, Q4_0 -8..7, Q4_K 0..15, Q5_K 0..31, Q6_K -32..31
};
// Every (sub-)block of the row in order (what a display draws as "the blocks, the scales"); empty
// for the float types.
std::vector<QuantSubBlock> describeRow(WeightType type, const uint8_t* row, int64_t values);
// The integer code of every weight (see QuantSubBlock); for the float types, empty.
std::vector<int> rowCodes(WeightType type, const uint8_t* row, int64_t values);

}  // namespace tscope

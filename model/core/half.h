// 16-bit floats as HuggingFace checkpoints and GGUF files store them (BF16, IEEE F16): the scalar
// conversions. A matrix kept in such a type (or a block quantization) is a PackedMatrix (packed_matrix.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tscope {

float halfToFloat(uint16_t h);      // IEEE binary16, subnormals, infinities and NaN included
float bfloat16ToFloat(uint16_t b);  // the top 16 bits of a float32
// float32 to IEEE binary16, rounded to nearest (ties to even) as F16C's conversion does: past
// 65504 (from 65520 up) to infinity, below 2^-14 to a subnormal or zero; NaN stays a (quiet) NaN.
uint16_t floatToHalf(float f);
// float32 to bfloat16, rounded to nearest (ties to even); NaN stays a (quiet) NaN.
uint16_t floatToBfloat16(float f);

}  // namespace tscope

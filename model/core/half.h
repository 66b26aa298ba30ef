// 16-bit floats as HuggingFace checkpoints store them (BF16, IEEE F16): the scalar conversions and
// HalfMatrix, a weight matrix kept in that dtype in HF's (out, in) row-major layout so a loaded
// BF16 model costs its file size in memory, not twice it; the backends compute with it in float32.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tscope {

enum class HalfType : uint8_t { Bf16, F16 };

float halfToFloat(uint16_t h);      // IEEE binary16, subnormals, infinities and NaN included
float bfloat16ToFloat(uint16_t b);  // the top 16 bits of a float32
inline float halfValue(uint16_t bits, HalfType type) { return type == HalfType::Bf16 ? bfloat16ToFloat(bits) : halfToFloat(bits); }
// out (n) = the n halves at `in` as float32.
void halvesToFloat(const uint16_t* in, HalfType type, float* out, size_t n);

// W (rows, cols) row-major in 16-bit floats: a linear layer y = x W^T + b with x (T, cols), as
// HF's nn.Linear stores it (rows = out, cols = in), or an embedding (rows = V, cols = C).
// `transposedInLayout`: tscope's float32 layout of this parameter is (cols, rows) (every linear
// layer, stored (in, out) there) rather than (rows, cols) (the embeddings).
struct HalfMatrix {
  const uint16_t* data = nullptr;  // (rows, cols), 2-byte aligned
  HalfType type = HalfType::Bf16;
  int64_t rows = 0, cols = 0;
  bool transposedInLayout = true;
  explicit operator bool() const { return data != nullptr; }
  size_t bytes() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols) * 2; }
  // out (cols) = row r as float32.
  void rowToFloat(int64_t r, float* out) const { halvesToFloat(data + r * cols, type, out, static_cast<size_t>(cols)); }
  // out = the matrix in tscope's float32 layout: (cols, rows) when transposedInLayout, else (rows, cols).
  void toLayout(float* out) const;
};

}  // namespace tscope

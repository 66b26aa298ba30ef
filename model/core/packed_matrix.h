// PackedMatrix: a weight matrix kept in the element type of the file it came from (BF16 / F16 from
// HuggingFace checkpoints, any WeightType from GGUF files, block quantizations included) in the
// file's (out, in) row-major layout, so a loaded model costs its file size in memory, not the
// float32 size. The backends compute with it in float32, dequantizing as they stream its rows.
#pragma once
#include <cstddef>
#include <cstdint>

#include "model/core/weight_type.h"

namespace tscope {

// W (rows, cols) row-major: a linear layer y = x W^T + b with x (T, cols), as HF's nn.Linear and
// GGUF store it (rows = out, cols = in), or an embedding (rows = V, cols = C). Each row is
// rowBytes() bytes (cols a whole number of the type's blocks).
// `transposedInLayout`: tscope's float32 layout of this parameter is (cols, rows) (every linear
// layer, stored (in, out) there) rather than (rows, cols) (the embeddings).
struct PackedMatrix {
  const uint8_t* data = nullptr;  // (rows, rowBytes()); 2-byte aligned for the 16-bit types
  WeightType type = WeightType::BF16;
  int64_t rows = 0, cols = 0;
  bool transposedInLayout = true;
  PackedMatrix() = default;
  PackedMatrix(const void* bytes, WeightType t, int64_t r, int64_t c, bool transposed)
      : data(static_cast<const uint8_t*>(bytes)), type(t), rows(r), cols(c), transposedInLayout(transposed) {}
  explicit operator bool() const { return data != nullptr; }
  size_t rowBytes() const;
  size_t bytes() const { return static_cast<size_t>(rows) * rowBytes(); }
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * rowBytes(); }
  // The 16-bit types' row r as halves (type BF16 or F16 only).
  const uint16_t* halfRow(int64_t r) const { return reinterpret_cast<const uint16_t*>(row(r)); }
  // out (cols) = row r as float32.
  void rowToFloat(int64_t r, float* out) const;
  // out = the matrix in tscope's float32 layout: (cols, rows) when transposedInLayout, else (rows, cols).
  void toLayout(float* out) const;
};

}  // namespace tscope

// PackedMatrix's float32 views. The hot loops over packed weights (the matmuls) live in the backends.
#include "model/core/packed_matrix.h"

#include <vector>

#include "model/core/quant.h"

namespace tscope {

size_t PackedMatrix::rowBytes() const {
  const WeightTypeInfo info = weightTypeInfo(type);
  return static_cast<size_t>(cols / info.blockValues) * static_cast<size_t>(info.blockBytes);
}

void PackedMatrix::rowToFloat(int64_t r, float* out) const { dequantizeRow(type, row(r), out, cols); }

void PackedMatrix::toLayout(float* out) const {
  if (!transposedInLayout) {
    for (int64_t r = 0; r < rows; ++r) rowToFloat(r, out + r * cols);
    return;
  }
  std::vector<float> values(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    rowToFloat(r, values.data());
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = values[static_cast<size_t>(c)];
  }
}

}  // namespace tscope

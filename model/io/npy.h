// NumPy .npy writing and reading (format version 1.0, little-endian float32 / int32, C order),
// as documented in numpy/lib/format.py. Used by tscope-cli --dump and by the tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tscope {

void writeNpy(const std::string& path, const float* data, const std::vector<int64_t>& shape);
void writeNpy(const std::string& path, const int32_t* data, const std::vector<int64_t>& shape);

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32
};
// Reads '<f4' or '<i4' arrays; throws tscope::Error on anything else or a malformed file.
NpyArray readNpy(const std::string& path);

// Writes `bytes` to `path` through a temporary file and a rename; throws tscope::Error.
void writeFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace tscope

// safetensors reading (memory-mapped, every offset and size bounds-checked) and writing
// (temporary file, then rename). F32, F16 and BF16 tensors load as float32.
// Format: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data area; offsets are relative to the start of the data area
// (https://github.com/huggingface/safetensors, README "Format").
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/core/half.h"  // halfToFloat, bfloat16ToFloat

namespace tscope {

enum class DType { F32, F16, BF16 };

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte offsets in the data area
  size_t numel() const;
};

// A read-only memory map of a file (RAII, move-only). Weights read in place share it.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws tscope::Error
  ~MappedFile();
  MappedFile(MappedFile&&) noexcept;
  MappedFile& operator=(MappedFile&&) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops this process's copies of the whole pages inside [begin, begin + bytes) (data already
  // converted elsewhere): they leave the resident set and are read again from the file if touched.
  void releasePages(const void* begin, size_t bytes) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The validated header of a safetensors file held in memory: where the data area starts (bytes from
// the start of the file) and every tensor's entry, its offsets checked against the data area.
struct SafetensorsHeader {
  size_t dataStart = 0;
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};
// Validates the whole header of the file `bytes` (all `size` bytes of it); `name` starts every
// error message. Throws tscope::Error as SafetensorsFile does (SafetensorsFile calls it on its map).
SafetensorsHeader parseSafetensorsHeader(const std::string& name, const uint8_t* bytes, size_t size);

class SafetensorsFile {
 public:
  // Maps the file and validates the whole header: throws tscope::Error naming the problem
  // (truncated file, header length past the end, malformed JSON, unknown dtype, offsets outside
  // the data area or overlapping, shape x dtype size != byte length, duplicate tensor name).
  explicit SafetensorsFile(const std::string& path);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // throws "missing tensor"
  // Converts to float32 into `out` (numel floats). Throws if the tensor is missing or its shape
  // differs from `expectedShape` (when given).
  void readFloat(const std::string& name, float* out, const std::vector<int64_t>& expectedShape = {}) const;
  std::vector<float> readFloat(const std::string& name) const;
  // The data of an F32 tensor where it lies in the mapped file, when its address is aligned for
  // float loads; null for other dtypes or a misaligned tensor (read those with readFloat). Checks
  // the shape as readFloat does.
  const float* floatsInPlace(const std::string& name, const std::vector<int64_t>& expectedShape = {}) const;
  // The data of an F16 or BF16 tensor where it lies in the mapped file (2-byte aligned); null for
  // F32 or a misaligned tensor. Checks the shape as readFloat does.
  const uint16_t* halvesInPlace(const std::string& name, const std::vector<int64_t>& expectedShape = {}) const;
  // The stored bytes of a tensor (end - begin of them), in place.
  const uint8_t* bytesInPlace(const std::string& name) const;
  // Drops the resident pages of a tensor already converted (see MappedFile::releasePages).
  void releasePages(const std::string& name) const;
  const std::shared_ptr<const MappedFile>& mapping() const { return mapping_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return file_.path(); }

 private:
  void checkShape(const TensorInfo& tensor, const std::vector<int64_t>& expectedShape) const;
  std::shared_ptr<const MappedFile> mapping_;  // shared with Weights that read tensors in place
  const MappedFile& file_;
  size_t dataStart_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // numel floats, written as F32
};

// Writes F32 tensors atomically: `path`.tmp is written, flushed, then renamed over `path`.
void writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors, const std::map<std::string, std::string>& metadata = {});

}  // namespace tscope

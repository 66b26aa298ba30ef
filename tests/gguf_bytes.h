// GGUF files built byte by byte for the reader's tests (tests/test_gguf*.cpp): the header, encoded
// key/values, tensor infos and the data, each part open to being made wrong on purpose. The layout is
// the specification's (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), written here
// apart from the reader.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::testing {

// Little-endian bytes appended one field at a time.
struct GgufBytes {
  std::string out;
  template <typename T>
  GgufBytes& put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
    return *this;
  }
  GgufBytes& u8(uint8_t value) { return put(value); }
  GgufBytes& u32(uint32_t value) { return put(value); }
  GgufBytes& u64(uint64_t value) { return put(value); }
  GgufBytes& raw(std::string_view bytes) {
    out += bytes;
    return *this;
  }
  GgufBytes& str(std::string_view text) { return u64(text.size()).raw(text); }
  GgufBytes& pad(size_t alignment) {
    out.append((alignment - out.size() % alignment) % alignment, '\0');
    return *this;
  }
};

// Value type ids (spec: gguf_metadata_value_type).
enum : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

// One encoded key/value: key, type, then `value` as given (already encoded).
inline std::string ggufKv(std::string_view key, uint32_t type, std::string_view value) { return GgufBytes().str(key).u32(type).raw(value).out; }
inline std::string ggufKvU32(std::string_view key, uint32_t value) { return ggufKv(key, kU32, GgufBytes().u32(value).out); }
inline std::string ggufKvString(std::string_view key, std::string_view value) { return ggufKv(key, kString, GgufBytes().str(value).out); }

struct GgufTensorSpec {
  std::string name;
  std::vector<uint64_t> dims;  // dims[0] fastest-varying
  uint32_t ggmlType = 0;
  uint64_t offset = 0;  // relative to the data
};

struct GgufSpec {
  uint32_t version = 3;
  std::vector<std::string> kvs;  // encoded key/values (ggufKv)
  std::vector<GgufTensorSpec> tensors;
  std::string data;         // the tensor data area
  uint32_t alignment = 32;  // padding before the data (general.alignment is the kvs' business)
  std::string magic = "GGUF";
  // When set, written instead of the true counts.
  std::optional<uint64_t> kvCount, tensorCount;
};

inline std::string ggufFile(const GgufSpec& spec) {
  GgufBytes b;
  b.raw(spec.magic).u32(spec.version).u64(spec.tensorCount.value_or(spec.tensors.size())).u64(spec.kvCount.value_or(spec.kvs.size()));
  for (const std::string& kv : spec.kvs) b.raw(kv);
  for (const GgufTensorSpec& tensor : spec.tensors) {
    b.str(tensor.name).u32(static_cast<uint32_t>(tensor.dims.size()));
    for (const uint64_t dim : tensor.dims) b.u64(dim);
    b.u32(tensor.ggmlType).u64(tensor.offset);
  }
  return b.pad(spec.alignment).raw(spec.data).out;
}

// A small valid file: two key/values and two tensors, F32 "a" [4, 2] (32 bytes) and F16 "b" [8]
// (16 bytes) at offset 32; the data bytes are 0, 1, 2, ...
inline GgufSpec validGgufSpec() {
  GgufSpec spec;
  spec.kvs = {ggufKvString("general.architecture", "llama"), ggufKvU32("llama.block_count", 2)};
  spec.tensors = {{"a", {4, 2}, 0, 0}, {"b", {8}, 1, 32}};
  for (int i = 0; i < 48; ++i) spec.data += static_cast<char>(i);
  return spec;
}

}  // namespace tscope::testing

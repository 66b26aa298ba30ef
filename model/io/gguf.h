// GGUF reading: llama.cpp's model file format, versions 2 and 3 (little-endian). The file is
// memory-mapped and parsed whole at open: every count, length and offset is checked against the
// file's size before it is used, so a hostile file is refused in one line ("NAME: what is wrong")
// and never makes the reader allocate more than a few times the file's size. Tensors are read in
// place (tensorData), the mapping shared with whoever keeps them (Weights).
// Format (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): "GGUF", uint32 version,
// uint64 tensor_count, uint64 metadata_kv_count, the key/values (key: uint64 length + bytes; uint32
// value type; value), the tensor infos (name, uint32 n_dims, n_dims uint64 dims with dims[0] the
// fastest-varying, uint32 ggml type, uint64 offset into the tensor data), then the tensor data from
// the first multiple of general.alignment (default 32) after the infos.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/core/weight_type.h"

namespace tscope {

// --- ggml tensor types (the spec's ggml_type; ids, block sizes and byte sizes as ggml's gguf-py
// constants list them). The mapping onto WeightType lives here, not in weight_type.h.

struct GgmlTypeInfo {
  uint32_t id = 0;
  std::string_view name;     // "Q4_K", "IQ2_XXS", ...
  uint32_t blockValues = 1;  // values per block (1 for the plain types)
  uint32_t blockBytes = 0;   // bytes per block
};
// The type with this id, or nullopt for an id ggml never assigned (or removed: 4, 5, 31..33, 36..38).
std::optional<GgmlTypeInfo> ggmlTypeInfo(uint32_t id);
// "Q4_K"; an unknown id as "ggml type 99".
std::string ggmlTypeName(uint32_t id);
// The WeightType tscope reads a tensor of this ggml type as, or nullopt (a type tscope does not read).
std::optional<WeightType> weightTypeOfGgml(uint32_t id);
uint32_t ggmlTypeOf(WeightType type);
// "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K": the types tscope reads, for messages.
std::string readableGgmlTypes();

// --- metadata values (the spec's gguf_metadata_value_type)

enum class GgufValueType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};
// "UINT8", ..., "FLOAT64" as the spec names them; an unknown id as "value type 13".
std::string ggufValueTypeName(GgufValueType type);

// An array value. Numbers and bools stay packed where they lie in the file (`packed`: `count`
// little-endian elements of elementType), strings are views into the file, and the elements of an
// array of arrays are arrays of their own. Everything points into the file's bytes: valid while
// the GgufFile (or the owner it was given) lives.
struct GgufArray {
  GgufValueType elementType = GgufValueType::UInt8;
  uint64_t count = 0;
  const uint8_t* packed = nullptr;        // numbers and bools
  std::vector<std::string_view> strings;  // elementType String
  std::vector<GgufArray> arrays;          // elementType Array
  // Element i of a number or bool array, read from `packed`; nullopt when i >= count or the
  // element type does not apply. integerAt: an integer type's element as int64 (nullopt for a UINT64
  // past INT64_MAX); floatAt: any number element as double; boolAt: a BOOL element.
  std::optional<int64_t> integerAt(uint64_t i) const;
  std::optional<double> floatAt(uint64_t i) const;
  std::optional<bool> boolAt(uint64_t i) const;
};

// One metadata value: `type` is the type in the file; the value is held as uint64 (UINT8, UINT16,
// UINT32, UINT64), int64 (INT8..INT64), double (FLOAT32, FLOAT64), bool, a view of the string
// (valid while the file lives) or an array.
struct GgufValue {
  GgufValueType type = GgufValueType::UInt8;
  std::variant<uint64_t, int64_t, double, bool, std::string_view, GgufArray> value;
  const GgufArray* array() const { return std::get_if<GgufArray>(&value); }
};
bool isGgufInteger(GgufValueType type);
bool isGgufFloat(GgufValueType type);
// Bytes of one element of a number or bool type; 0 for STRING, ARRAY and unknown ids.
size_t ggufPackedBytes(GgufValueType type);
// The value as one short line for listings: 3, -2.5, true, "llama", [STRING x 151936: "!", "#", ...]
// (strings cut at 40 bytes, control bytes escaped).
std::string ggufValueText(const GgufValue& value, size_t maxItems = 4);

// --- tensors

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] is the fastest-varying (the columns): an HF (out, in) matrix has dims [in, out]
  uint32_t ggmlType = 0;
  std::optional<WeightType> type;  // nullopt: a ggml type tscope does not read (listed, but tensorData refuses it)
  uint64_t offset = 0;             // absolute: bytes from the start of the file
  uint64_t bytes = 0;              // its size in the file: elements / blockValues * blockBytes
  int64_t elements() const;        // product of dims
};

class GgufFile {
 public:
  // Maps `path` read-only and parses it (throws tscope::Error "PATH: what is wrong").
  static GgufFile open(const std::string& path);
  // Parses `size` bytes at `bytes`; `name` starts every message; `owner` keeps the bytes alive
  // (may be null when the caller does).
  static GgufFile fromBytes(std::string name, std::shared_ptr<const void> owner, const uint8_t* bytes, size_t size);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t dataOffset() const { return dataOffset_; }  // where the tensor data starts
  const std::shared_ptr<const void>& owner() const { return owner_; }
  const uint8_t* bytes() const { return bytes_; }
  size_t size() const { return size_; }

  // --- metadata. The getters throw one line naming the key when it is missing or of another type;
  // the try* variants return nullopt when it is missing (and throw for another type).
  const std::vector<std::string>& metadataKeys() const { return keys_; }  // in file order
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const GgufValue* find(std::string_view key) const;
  const GgufValue& value(std::string_view key) const;
  std::string architecture() const { return getString("general.architecture"); }
  std::string getString(std::string_view key) const;
  uint64_t getUint(std::string_view key) const;  // any integer type holding a non-negative value
  int64_t getInt(std::string_view key) const;    // any integer type whose value fits int64
  double getFloat(std::string_view key) const;   // FLOAT32 or FLOAT64
  bool getBool(std::string_view key) const;
  std::optional<std::string> tryString(std::string_view key) const;
  std::optional<uint64_t> tryUint(std::string_view key) const;
  std::optional<int64_t> tryInt(std::string_view key) const;
  std::optional<double> tryFloat(std::string_view key) const;
  std::optional<bool> tryBool(std::string_view key) const;
  std::vector<std::string> stringArray(std::string_view key) const;  // an array of STRING
  std::vector<double> floatArray(std::string_view key) const;        // an array of FLOAT32 or FLOAT64
  std::vector<int64_t> intArray(std::string_view key) const;         // an array of any integer type

  // --- tensors, in file order
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* findTensor(std::string_view name) const;
  const GgufTensorInfo& tensor(std::string_view name) const;  // throws "has no tensor NAME"
  // The tensor's `bytes` bytes where they lie in the file. Throws for a type tscope does not read:
  // "NAME: tensor T is IQ2_XXS, which tscope does not read (it reads F32, ...)".
  const uint8_t* tensorData(const GgufTensorInfo& tensor) const;

 private:
  GgufFile() = default;
  [[noreturn]] void fail(const std::string& problem) const;
  const GgufValue& typed(std::string_view key, bool (*accepts)(GgufValueType), const char* wanted) const;
  const GgufArray& arrayOf(std::string_view key, bool (*accepts)(GgufValueType), const char* wanted) const;
  friend class GgufParser;

  std::string name_;
  std::shared_ptr<const void> owner_;
  const uint8_t* bytes_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t dataOffset_ = 0;
  std::vector<std::string> keys_;
  std::vector<GgufValue> values_;  // values_[i] belongs to keys_[i]
  std::map<std::string, size_t, std::less<>> keyIndex_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensorIndex_;
};

// Whether the file at `path` starts with the magic bytes "GGUF" (false when it cannot be read or is
// not a regular file); for the loader's choice of reader. Never throws.
bool looksLikeGguf(const std::string& path);

}  // namespace tscope

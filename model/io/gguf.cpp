// GGUF parsing, from the specification (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
// One pass over the file: every read is checked against the bytes left, every count against the
// smallest encoding of what it counts (so a count cannot make the parser reserve more than the file
// could hold), and every tensor's size, alignment and range is checked before a tensor is handed out.
#include "model/io/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "model/core/error.h"
#include "model/io/safetensors.h"  // MappedFile

namespace tscope {

static_assert(std::endian::native == std::endian::little, "GGUF files are little-endian and are read in place");

namespace {

constexpr uint32_t kDefaultAlignment = 32;    // spec: GGUF_DEFAULT_ALIGNMENT
constexpr uint32_t kMaxDims = 4;              // spec: n_dims "currently at most 4"
constexpr uint64_t kMaxTensorNameBytes = 64;  // spec: a tensor name "must be at most 64 bytes long"
constexpr uint64_t kMaxKeyBytes = 65535;      // spec: a key is "at most 2^16-1 bytes long"
constexpr int kMaxArrayDepth = 8;             // arrays of arrays: legal, but no real file nests this deep
constexpr uint64_t kHeaderBytes = 24;         // magic, version, tensor_count, metadata_kv_count
// Caps far above any model file (llama.cpp's hold tens of keys, a few thousand tensors and no array
// of arrays), so that a file of nothing but tiny entries cannot cost many times its size in memory.
constexpr uint64_t kMaxKeyValues = 65536, kMaxTensors = uint64_t{1} << 20, kMaxNestedArrays = uint64_t{1} << 20;
// The smallest encodings, which bound a count by the bytes left: a key/value is a key length (8), a
// value type (4) and a value of at least one byte; a tensor info is a name length (8), n_dims (4),
// one dimension (8), a type (4) and an offset (8); an array element at least its packed size, a
// string its length (8), an array its element type and count (12).
constexpr uint64_t kMinKeyValueBytes = 13, kMinTensorInfoBytes = 32;

std::string shown(std::string_view text) { return text.empty() ? "''" : oneLine(text, 120); }
std::string num(uint64_t value) { return std::to_string(value); }

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

uint64_t elementMinBytes(GgufValueType type) {
  if (type == GgufValueType::String) return 8;
  if (type == GgufValueType::Array) return 12;
  return ggufPackedBytes(type);
}

bool knownValueType(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::Float64); }

}  // namespace

// Reads the file front to back into a GgufFile (GgufFile's friend).
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : f_(file) {}

  void run() {
    readHeader();
    for (uint64_t i = 0; i < kvCount_; ++i) readKeyValue(i);
    readAlignment();
    if (tensorCount_ > left() / kMinTensorInfoBytes)
      fail("tensor_count " + num(tensorCount_) + " cannot fit in the " + num(left()) +
           " bytes left after the metadata (a tensor info takes at least " + num(kMinTensorInfoBytes) + ")");
    f_.tensors_.reserve(tensorCount_);
    if (tensorCount_ > kMaxTensors) fail("tensor_count " + num(tensorCount_) + " is more than tscope reads (" + num(kMaxTensors) + ")");
    for (uint64_t i = 0; i < tensorCount_; ++i) readTensorInfo(i);
    // spec: the tensor data starts at the first multiple of the alignment after the tensor infos.
    f_.dataOffset_ = (pos_ + f_.alignment_ - 1) / f_.alignment_ * f_.alignment_;
    for (GgufTensorInfo& tensor : f_.tensors_) placeTensor(tensor);
    checkNoOverlap();
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { f_.fail(problem); }
  uint64_t left() const { return f_.size_ - pos_; }

  [[noreturn]] void truncated(uint64_t wanted, const std::string& what) const {
    fail("truncated: " + what + " needs " + num(wanted) + " bytes at offset " + num(pos_) + ", but the file ends at " + num(f_.size_));
  }

  // A little-endian T at the cursor; `what` (a callable giving text) is built only on failure.
  template <typename T, typename What>
  T read(const What& what) {
    if (left() < sizeof(T)) truncated(sizeof(T), what());
    T value;
    std::memcpy(&value, f_.bytes_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  // A GGUF string (uint64 length, then the bytes, no NUL), as a view into the file.
  template <typename What>
  std::string_view readString(uint64_t maxBytes, const What& what) {
    const uint64_t length = read<uint64_t>([&] { return "the length of " + what(); });
    if (length > left())
      fail("truncated: " + what() + " is " + num(length) + " bytes long, past the end of the file (" + num(left()) + " bytes left at offset " +
           num(pos_) + ")");
    if (length > maxBytes) fail(what() + " is " + num(length) + " bytes long; the specification allows at most " + num(maxBytes));
    const std::string_view text(reinterpret_cast<const char*>(f_.bytes_) + pos_, length);
    pos_ += length;
    return text;
  }

  void readHeader() {
    if (f_.size_ >= 4 && std::memcmp(f_.bytes_, "GGUF", 4) != 0) {
      std::string start;
      for (int i = 0; i < 4; ++i) start += (i ? " " : "") + num(f_.bytes_[i]);
      fail("not a GGUF file: it starts with the bytes " + start + ", not the magic \"GGUF\"");
    }
    if (f_.size_ < kHeaderBytes) fail("truncated: " + num(f_.size_) + " bytes, too short for the " + num(kHeaderBytes) + "-byte GGUF header");
    pos_ = 4;
    const uint32_t version = read<uint32_t>([] { return std::string("the version"); });
    const uint32_t swapped = __builtin_bswap32(version);
    if (version == 1) fail("GGUF version 1 is not supported (an early draft with 32-bit counts and lengths); tscope reads versions 2 and 3");
    if (swapped >= 1 && swapped <= 3)
      fail("a big-endian GGUF file (its version reads " + num(version) + " little-endian, " + num(swapped) +
           " big-endian); tscope reads little-endian files");
    if (version != 2 && version != 3) fail("GGUF version " + num(version) + " is not supported; tscope reads versions 2 and 3");
    f_.version_ = version;
    tensorCount_ = read<uint64_t>([] { return std::string("tensor_count"); });
    kvCount_ = read<uint64_t>([] { return std::string("metadata_kv_count"); });
    if (kvCount_ > left() / kMinKeyValueBytes)
      fail("metadata_kv_count " + num(kvCount_) + " cannot fit in the " + num(left()) + " bytes after the header (a key/value takes at least " +
           num(kMinKeyValueBytes) + ")");
    if (kvCount_ > kMaxKeyValues) fail("metadata_kv_count " + num(kvCount_) + " is more than tscope reads (" + num(kMaxKeyValues) + ")");
    f_.keys_.reserve(kvCount_);
    f_.values_.reserve(kvCount_);
  }

  void readKeyValue(uint64_t index) {
    const auto entry = [&] { return "metadata entry " + num(index) + " of " + num(kvCount_); };
    const std::string_view key = readString(kMaxKeyBytes, [&] { return "the key of " + entry(); });
    if (key.empty()) fail(entry() + " has an empty key");
    if (const auto found = f_.keyIndex_.find(key); found != f_.keyIndex_.end())
      fail("duplicate metadata key " + shown(key) + " (entries " + num(found->second) + " and " + num(index) + ")");
    const std::string where = "metadata key " + shown(key);
    const uint32_t type = read<uint32_t>([&] { return "the value type of " + where; });
    GgufValue value = readValue(type, where);
    f_.keyIndex_.emplace(std::string(key), f_.keys_.size());
    f_.keys_.emplace_back(key);
    f_.values_.push_back(std::move(value));
  }

  GgufValue readValue(uint32_t typeId, const std::string& where) {
    if (!knownValueType(typeId)) fail(where + " has unknown value type " + num(typeId) + " (GGUF's are 0 to 12)");
    GgufValue out;
    out.type = static_cast<GgufValueType>(typeId);
    const auto what = [&] { return "the " + ggufValueTypeName(out.type) + " value of " + where; };
    switch (out.type) {
      case GgufValueType::UInt8: out.value = uint64_t{read<uint8_t>(what)}; break;
      case GgufValueType::UInt16: out.value = uint64_t{read<uint16_t>(what)}; break;
      case GgufValueType::UInt32: out.value = uint64_t{read<uint32_t>(what)}; break;
      case GgufValueType::UInt64: out.value = read<uint64_t>(what); break;
      case GgufValueType::Int8: out.value = int64_t{read<int8_t>(what)}; break;
      case GgufValueType::Int16: out.value = int64_t{read<int16_t>(what)}; break;
      case GgufValueType::Int32: out.value = int64_t{read<int32_t>(what)}; break;
      case GgufValueType::Int64: out.value = read<int64_t>(what); break;
      case GgufValueType::Float32: out.value = double{read<float>(what)}; break;
      case GgufValueType::Float64: out.value = read<double>(what); break;
      case GgufValueType::Bool: {
        const uint8_t byte = read<uint8_t>(what);
        if (byte > 1) fail(where + ": BOOL value " + num(byte) + " is neither 0 nor 1");  // spec: "anything else is invalid"
        out.value = byte == 1;
        break;
      }
      case GgufValueType::String: out.value = readString(UINT64_MAX, what); break;
      case GgufValueType::Array: out.value = readArray(where, 1); break;
    }
    return out;
  }

  GgufArray readArray(const std::string& where, int depth) {
    if (depth > kMaxArrayDepth) fail(where + ": arrays nested deeper than " + num(kMaxArrayDepth) + " levels");
    GgufArray array;
    const uint32_t typeId = read<uint32_t>([&] { return "the element type of the array " + where; });
    if (!knownValueType(typeId)) fail(where + ": an array of unknown value type " + num(typeId) + " (GGUF's are 0 to 12)");
    array.elementType = static_cast<GgufValueType>(typeId);
    array.count = read<uint64_t>([&] { return "the length of the array " + where; });
    const uint64_t minBytes = elementMinBytes(array.elementType);
    if (array.count > left() / minBytes)
      fail(where + ": an array of " + num(array.count) + " " + ggufValueTypeName(array.elementType) + " elements cannot fit in the " + num(left()) +
           " bytes left");
    if (array.elementType == GgufValueType::String) {
      array.strings.reserve(array.count);
      for (uint64_t i = 0; i < array.count; ++i)
        array.strings.push_back(readString(UINT64_MAX, [&] { return "string " + num(i) + " of the array " + where; }));
    } else if (array.elementType == GgufValueType::Array) {
      nestedArrays_ += array.count;  // no overflow: each count is at most the file's size / 12
      if (nestedArrays_ > kMaxNestedArrays) fail(where + ": more than " + num(kMaxNestedArrays) + " arrays inside arrays in the file");
      array.arrays.reserve(array.count);
      for (uint64_t i = 0; i < array.count; ++i) array.arrays.push_back(readArray(where, depth + 1));
    } else {
      array.packed = f_.bytes_ + pos_;
      if (array.elementType == GgufValueType::Bool)
        for (uint64_t i = 0; i < array.count; ++i)
          if (array.packed[i] > 1) fail(where + ": element " + num(i) + " of a BOOL array is " + num(array.packed[i]) + ", neither 0 nor 1");
      pos_ += array.count * minBytes;  // fits: count <= left / minBytes
    }
    return array;
  }

  // spec: general.alignment is a UINT32, and ggml requires a nonzero power of two.
  void readAlignment() {
    const GgufValue* alignment = f_.find("general.alignment");
    if (!alignment) return;
    if (alignment->type != GgufValueType::UInt32)
      fail("general.alignment is " + ggufValueTypeName(alignment->type) + " " + ggufValueText(*alignment) + "; the specification makes it UINT32");
    const uint64_t value = std::get<uint64_t>(alignment->value);
    if (value == 0 || !std::has_single_bit(value)) fail("general.alignment " + num(value) + " is not a power of two");
    f_.alignment_ = static_cast<uint32_t>(value);
  }

  void readTensorInfo(uint64_t index) {
    const auto entry = [&] { return "tensor info " + num(index) + " of " + num(tensorCount_); };
    GgufTensorInfo tensor;
    tensor.name = readString(kMaxTensorNameBytes, [&] { return "the name of " + entry(); });
    if (const auto found = f_.tensorIndex_.find(tensor.name); found != f_.tensorIndex_.end())
      fail("duplicate tensor name " + shown(tensor.name) + " (tensor infos " + num(found->second) + " and " + num(index) + ")");
    const std::string where = "tensor " + shown(tensor.name);
    const uint32_t nDims = read<uint32_t>([&] { return "n_dims of " + where; });
    if (nDims == 0 || nDims > kMaxDims) fail(where + " has " + num(nDims) + " dimensions; GGUF allows 1 to " + num(kMaxDims));
    for (uint32_t d = 0; d < nDims; ++d) {
      const uint64_t dim = read<uint64_t>([&] { return "dimension " + num(d) + " of " + where; });
      if (dim > static_cast<uint64_t>(INT64_MAX)) fail(where + ": dimension " + num(d) + " is " + num(dim) + ", past 2^63 - 1");
      tensor.dims.push_back(static_cast<int64_t>(dim));
    }
    int64_t elements = 1;
    for (const int64_t dim : tensor.dims)
      if (__builtin_mul_overflow(elements, dim, &elements)) fail(where + ": dims " + dimsText(tensor.dims) + " overflow 64-bit element counts");
    tensor.ggmlType = read<uint32_t>([&] { return "the type of " + where; });
    tensor.offset = read<uint64_t>([&] { return "the offset of " + where; });  // relative until placeTensor
    tensor.type = weightTypeOfGgml(tensor.ggmlType);
    f_.tensorIndex_.emplace(tensor.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(tensor));
  }

  // Sizes the tensor by its type and checks its range: aligned, inside the file.
  void placeTensor(GgufTensorInfo& tensor) {
    const std::string where = "tensor " + shown(tensor.name);
    const std::optional<GgmlTypeInfo> type = ggmlTypeInfo(tensor.ggmlType);
    if (!type) fail(where + " has unknown ggml type " + num(tensor.ggmlType) + ", so its size in the file is unknown");
    const std::string typeName(type->name);
    // ggml quantizes along rows: dims[0] (the row length) must be a whole number of blocks.
    if (tensor.dims[0] % type->blockValues != 0)
      fail(where + " is " + typeName + " with rows of " + num(tensor.dims[0]) + " values, not a multiple of its block of " + num(type->blockValues));
    const uint64_t blocks = static_cast<uint64_t>(tensor.elements()) / type->blockValues;
    if (__builtin_mul_overflow(blocks, uint64_t{type->blockBytes}, &tensor.bytes))
      fail(where + ": dims " + dimsText(tensor.dims) + " of " + typeName + " overflow 64-bit byte counts");
    if (tensor.offset % f_.alignment_ != 0)
      fail(where + ": its offset " + num(tensor.offset) + " is not a multiple of the alignment " + num(f_.alignment_));
    uint64_t begin = 0;
    if (__builtin_add_overflow(f_.dataOffset_, tensor.offset, &begin) || begin > f_.size_ || tensor.bytes > f_.size_ - begin)
      fail(where + " (" + typeName + " " + dimsText(tensor.dims) + ", " + num(tensor.bytes) + " bytes at offset " + num(tensor.offset) +
           " of the data at " + num(f_.dataOffset_) + ") reaches past the end of the file (" + num(f_.size_) + " bytes)");
    tensor.offset = begin;
  }

  // Tensors holding bytes must not share any (empty tensors occupy nothing).
  void checkNoOverlap() const {
    std::vector<const GgufTensorInfo*> byOffset;
    for (const GgufTensorInfo& tensor : f_.tensors_)
      if (tensor.bytes > 0) byOffset.push_back(&tensor);
    std::sort(byOffset.begin(), byOffset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < byOffset.size(); ++i) {
      const GgufTensorInfo& previous = *byOffset[i - 1];
      const GgufTensorInfo& current = *byOffset[i];
      if (current.offset < previous.offset + previous.bytes)
        fail("tensor " + shown(current.name) + " (bytes " + num(current.offset) + ".." + num(current.offset + current.bytes) + ") overlaps tensor " +
             shown(previous.name) + " (bytes " + num(previous.offset) + ".." + num(previous.offset + previous.bytes) + ")");
    }
  }

  GgufFile& f_;
  uint64_t pos_ = 0;
  uint64_t tensorCount_ = 0, kvCount_ = 0;
  uint64_t nestedArrays_ = 0;
};

GgufFile GgufFile::open(const std::string& path) {
  auto mapping = std::make_shared<const MappedFile>(path);
  const uint8_t* bytes = mapping->data();
  const size_t size = mapping->size();
  return fromBytes(path, std::move(mapping), bytes, size);
}

GgufFile GgufFile::fromBytes(std::string name, std::shared_ptr<const void> owner, const uint8_t* bytes, size_t size) {
  GgufFile file;
  file.name_ = std::move(name);
  file.owner_ = std::move(owner);
  file.bytes_ = bytes;
  file.size_ = bytes ? size : 0;
  file.alignment_ = kDefaultAlignment;
  GgufParser(file).run();
  return file;
}

void GgufFile::fail(const std::string& problem) const { throw Error(name_ + ": " + problem); }

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto found = keyIndex_.find(key);
  return found == keyIndex_.end() ? nullptr : &values_[found->second];
}

const GgufValue& GgufFile::value(std::string_view key) const {
  const GgufValue* found = find(key);
  if (!found) fail("metadata key " + shown(key) + " is missing");
  return *found;
}

const GgufValue& GgufFile::typed(std::string_view key, bool (*accepts)(GgufValueType), const char* wanted) const {
  const GgufValue& found = value(key);
  if (!accepts(found.type)) fail("metadata key " + shown(key) + " is " + ggufValueTypeName(found.type) + ", not " + wanted);
  return found;
}

const GgufArray& GgufFile::arrayOf(std::string_view key, bool (*accepts)(GgufValueType), const char* wanted) const {
  const GgufArray& array = *typed(
                                key, [](GgufValueType type) { return type == GgufValueType::Array; }, "an array")
                                .array();
  if (!accepts(array.elementType))
    fail("metadata key " + shown(key) + " is an array of " + ggufValueTypeName(array.elementType) + ", not of " + wanted);
  return array;
}

std::string GgufFile::getString(std::string_view key) const {
  return std::string(std::get<std::string_view>(typed(
                                                    key, [](GgufValueType type) { return type == GgufValueType::String; }, "a STRING")
                                                    .value));
}

uint64_t GgufFile::getUint(std::string_view key) const {
  const GgufValue& found = typed(key, isGgufInteger, "an integer");
  if (const auto* signedValue = std::get_if<int64_t>(&found.value)) {
    if (*signedValue < 0) fail("metadata key " + shown(key) + " is " + std::to_string(*signedValue) + ", not a non-negative integer");
    return static_cast<uint64_t>(*signedValue);
  }
  return std::get<uint64_t>(found.value);
}

int64_t GgufFile::getInt(std::string_view key) const {
  const GgufValue& found = typed(key, isGgufInteger, "an integer");
  if (const auto* unsignedValue = std::get_if<uint64_t>(&found.value)) {
    if (*unsignedValue > static_cast<uint64_t>(INT64_MAX)) fail("metadata key " + shown(key) + " is " + num(*unsignedValue) + ", past 2^63 - 1");
    return static_cast<int64_t>(*unsignedValue);
  }
  return std::get<int64_t>(found.value);
}

double GgufFile::getFloat(std::string_view key) const { return std::get<double>(typed(key, isGgufFloat, "FLOAT32 or FLOAT64").value); }

bool GgufFile::getBool(std::string_view key) const {
  return std::get<bool>(typed(
                            key, [](GgufValueType type) { return type == GgufValueType::Bool; }, "a BOOL")
                            .value);
}

std::optional<std::string> GgufFile::tryString(std::string_view key) const { return has(key) ? std::optional(getString(key)) : std::nullopt; }
std::optional<uint64_t> GgufFile::tryUint(std::string_view key) const { return has(key) ? std::optional(getUint(key)) : std::nullopt; }
std::optional<int64_t> GgufFile::tryInt(std::string_view key) const { return has(key) ? std::optional(getInt(key)) : std::nullopt; }
std::optional<double> GgufFile::tryFloat(std::string_view key) const { return has(key) ? std::optional(getFloat(key)) : std::nullopt; }
std::optional<bool> GgufFile::tryBool(std::string_view key) const { return has(key) ? std::optional(getBool(key)) : std::nullopt; }

std::vector<std::string> GgufFile::stringArray(std::string_view key) const {
  const GgufArray& array = arrayOf(
      key, [](GgufValueType type) { return type == GgufValueType::String; }, "STRING");
  return std::vector<std::string>(array.strings.begin(), array.strings.end());
}

std::vector<double> GgufFile::floatArray(std::string_view key) const {
  const GgufArray& array = arrayOf(key, isGgufFloat, "FLOAT32 or FLOAT64");
  std::vector<double> out(array.count);
  for (uint64_t i = 0; i < array.count; ++i) out[i] = *array.floatAt(i);
  return out;
}

std::vector<int64_t> GgufFile::intArray(std::string_view key) const {
  const GgufArray& array = arrayOf(key, isGgufInteger, "an integer type");
  std::vector<int64_t> out(array.count);
  for (uint64_t i = 0; i < array.count; ++i) {
    const std::optional<int64_t> element = array.integerAt(i);
    if (!element) fail("metadata key " + shown(key) + ": element " + num(i) + " is past 2^63 - 1");
    out[i] = *element;
  }
  return out;
}

const GgufTensorInfo* GgufFile::findTensor(std::string_view name) const {
  const auto found = tensorIndex_.find(name);
  return found == tensorIndex_.end() ? nullptr : &tensors_[found->second];
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo* found = findTensor(name);
  if (!found) fail("has no tensor " + shown(name));
  return *found;
}

const uint8_t* GgufFile::tensorData(const GgufTensorInfo& tensor) const {
  if (!tensor.type)
    fail("tensor " + shown(tensor.name) + " is " + ggmlTypeName(tensor.ggmlType) + ", which tscope does not read (it reads " + readableGgmlTypes() +
         ")");
  if (tensor.offset > size_ || tensor.bytes > size_ - tensor.offset)
    fail("tensor " + shown(tensor.name) + " (bytes " + num(tensor.offset) + ", " + num(tensor.bytes) + " long) is not inside this file");
  return bytes_ + tensor.offset;
}

}  // namespace tscope

// safetensors reading and writing, following the format in the README of
// https://github.com/huggingface/safetensors. The file is memory-mapped and the whole header is
// validated at open, so readFloat is a bounds-safe memcpy (F32) or a bit-level conversion (F16/BF16),
// and floatsInPlace can hand out an F32 tensor's bytes where they lie (the mapping is shared).
#include "model/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/core/file_check.h"
#include "model/core/error.h"

namespace tscope {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian and is read in place");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
// Deepest JSON nesting a valid header needs: {name: {"shape": [dim]}} puts dims at depth 3.
constexpr int kMaxHeaderDepth = 3;

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw Error(path + ": " + problem); }

std::string errnoText(int err) { return std::strerror(err); }

// Text safe for a one-line message: control characters (and, if asked, non-ASCII bytes) escaped
// as \xNN, and very long text cut short.
std::string printable(std::string_view text, bool escapeNonAscii = false) {
  constexpr size_t kMaxShown = 160;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || (escapeNonAscii && c >= 0x80)) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

std::string quotedName(std::string_view name) {
  std::string out(1, '\'');  // built by appending: GCC 12 -O3 warns falsely on "'" + std::string
  out += printable(name);
  out += '\'';
  return out;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

const char* dtypeName(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
  }
  return "?";
}

DType parseDtype(const std::string& path, const std::string& tensor, const std::string& dtype) {
  if (dtype == "F32") return DType::F32;
  if (dtype == "F16") return DType::F16;
  if (dtype == "BF16") return DType::BF16;
  static const std::set<std::string> kOtherSafetensorsDtypes = {"BOOL", "U8",      "I8",      "U16",     "I16",     "U32",     "I32", "U64", "I64",
                                                                "F64",  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64"};
  const char* kind = kOtherSafetensorsDtypes.count(dtype) ? "unsupported" : "unknown";
  fail(path, "tensor " + quotedName(tensor) + " has " + kind + " dtype " + quotedName(dtype) + " (tscope reads F32, F16 and BF16)");
}

// Product of the dims times `elementBytes`, or nothing when it overflows 64 bits.
bool checkedByteCount(const std::vector<int64_t>& shape, uint64_t elementBytes, uint64_t* bytes) {
  uint64_t total = elementBytes;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(total, static_cast<uint64_t>(dim), &total)) return false;
  *bytes = total;
  return true;
}

using Json = nlohmann::json;

// Parses the header JSON, rejecting duplicate keys (nlohmann would silently keep the last one)
// and nesting deeper than a safetensors header can have.
Json parseHeaderJson(const std::string& path, const char* text, size_t length) {
  std::vector<std::set<std::string>> keysOfOpenObjects;
  std::string currentTensor;
  auto watchKeys = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxHeaderDepth) fail(path, "header JSON is nested deeper than a safetensors header");
    if (event == Json::parse_event_t::object_start) keysOfOpenObjects.emplace_back();
    if (event == Json::parse_event_t::object_end) keysOfOpenObjects.pop_back();
    if (event == Json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keysOfOpenObjects.back().insert(key).second) {
        if (keysOfOpenObjects.size() == 1) fail(path, "duplicate tensor name " + quotedName(key));
        fail(path, "duplicate key " + quotedName(key) + " in the entry of " + quotedName(currentTensor));
      }
      if (keysOfOpenObjects.size() == 1) currentTensor = key;
    }
    return true;
  };
  try {
    return Json::parse(text, text + length, watchKeys);
  } catch (const Json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at ..."; it may quote
    // raw bytes of the header, so those are escaped too.
    std::string_view detail = e.what();
    if (detail.starts_with("[json.exception.") && detail.find("] ") != std::string_view::npos) detail.remove_prefix(detail.find("] ") + 2);
    fail(path, "malformed JSON header: " + printable(detail, /*escapeNonAscii=*/true));
  }
}

TensorInfo parseTensorEntry(const std::string& path, const std::string& name, const Json& entry, uint64_t dataBytes) {
  const std::string where = "tensor " + quotedName(name);
  if (!entry.is_object()) fail(path, where + ": header entry is not a JSON object");
  auto field = [&](const char* key) -> const Json& {
    auto it = entry.find(key);
    if (it == entry.end()) fail(path, where + " has no '" + key + "' in its header entry");
    return *it;
  };
  TensorInfo info;
  info.name = name;

  const Json& dtype = field("dtype");
  if (!dtype.is_string()) fail(path, where + ": 'dtype' is not a string");
  info.dtype = parseDtype(path, name, dtype.get<std::string>());

  const Json& shape = field("shape");
  if (!shape.is_array()) fail(path, where + ": 'shape' is not an array");
  for (const Json& dim : shape) {
    if (dim.is_number_unsigned()) {
      if (dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(path, where + ": shape dimension " + dim.dump() + " overflows");
      info.shape.push_back(dim.get<int64_t>());
    } else if (dim.is_number_integer()) {  // nlohmann keeps non-negative integers unsigned
      fail(path, where + " has a negative dimension " + dim.dump() + " in its shape");
    } else {
      fail(path, where + ": shape dimension " + dim.dump() + " is not an integer");
    }
  }
  uint64_t expectedBytes = 0;
  if (!checkedByteCount(info.shape, dtypeBytes(info.dtype), &expectedBytes))
    fail(path, where + ": shape " + shapeText(info.shape) + " overflows 64-bit byte counts");

  const Json& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
    fail(path, where + ": 'data_offsets' must be [begin, end] with non-negative integers, got " + offsets.dump().substr(0, 80));
  const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  const std::string offsetsText = "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  if (begin > end) fail(path, where + ": " + offsetsText + " has begin after end");
  if (end > dataBytes) fail(path, where + ": " + offsetsText + " reach past the end of the data area (" + std::to_string(dataBytes) + " bytes)");
  if (end - begin != expectedBytes)
    fail(path, where + ": shape " + shapeText(info.shape) + " of " + dtypeName(info.dtype) + " needs " + std::to_string(expectedBytes) +
                   " bytes but " + offsetsText + " span " + std::to_string(end - begin));
  info.begin = static_cast<size_t>(begin);
  info.end = static_cast<size_t>(end);
  return info;
}

std::map<std::string, std::string> parseMetadata(const std::string& path, const Json& metadata) {
  if (!metadata.is_object()) fail(path, "'__metadata__' is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) fail(path, "'__metadata__' value of " + quotedName(key) + " is not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// Tensors holding bytes must not share any; empty tensors occupy nothing and never overlap.
void checkNoOverlap(const std::string& path, const std::map<std::string, TensorInfo>& tensors) {
  std::vector<const TensorInfo*> byBegin;
  for (const auto& [name, info] : tensors)
    if (info.end > info.begin) byBegin.push_back(&info);
  std::sort(byBegin.begin(), byBegin.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byBegin.size(); ++i) {
    const TensorInfo& previous = *byBegin[i - 1];
    const TensorInfo& current = *byBegin[i];
    if (current.begin < previous.end)
      fail(path, "tensor " + quotedName(current.name) + " (bytes " + std::to_string(current.begin) + ".." + std::to_string(current.end) +
                     ") overlaps tensor " + quotedName(previous.name) + " (bytes " + std::to_string(previous.begin) + ".." +
                     std::to_string(previous.end) + ")");
  }
}

// One loop per 16-bit type so the compiler can inline and vectorise the conversion. The data area
// may start at any byte, so each element is read with memcpy.
template <float (*convert)(uint16_t)>
void convertSixteenBit(const uint8_t* source, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, source + 2 * i, 2);
    out[i] = convert(bits);
  }
}

// Writes `path`.tmp and renames it over `path` on commit(); a writer destroyed before commit()
// removes the temporary file, so a failed write never leaves a partial file or touches `path`.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path) : path_(path), tmpPath_(path + ".tmp") {
    file_ = std::fopen(tmpPath_.c_str(), "wb");
    if (!file_) fail(tmpPath_, "cannot create: " + errnoText(errno));
  }
  ~AtomicFileWriter() {
    if (file_) std::fclose(file_);  // already failing: its error cannot add anything
    if (!committed_) std::remove(tmpPath_.c_str());
  }
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes) {
    if (bytes && std::fwrite(data, 1, bytes, file_) != bytes) fail(tmpPath_, "write failed: " + errnoText(errno));
  }
  void commit() {
    if (std::fflush(file_) != 0) fail(tmpPath_, "fflush failed: " + errnoText(errno));
    if (::fsync(::fileno(file_)) != 0) fail(tmpPath_, "fsync failed: " + errnoText(errno));
    FILE* closing = file_;
    file_ = nullptr;
    if (std::fclose(closing) != 0) fail(tmpPath_, "close failed: " + errnoText(errno));
    if (std::rename(tmpPath_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename " + tmpPath_ + " over it: " + errnoText(errno));
    committed_ = true;
  }

 private:
  std::string path_, tmpPath_;
  FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace

size_t TensorInfo::numel() const {
  size_t count = 1;
  for (int64_t dim : shape) count *= static_cast<size_t>(dim);
  return count;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  requireRegularFile(path);  // before open(): a FIFO would block it
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + errnoText(errno));
  auto closeAndFail = [&](const std::string& problem) {
    ::close(fd);  // already failing: a close error would hide the first one
    fail(path, problem);
  };
  struct stat status {};
  if (::fstat(fd, &status) != 0) closeAndFail("fstat failed: " + errnoText(errno));
  if (!S_ISREG(status.st_mode)) closeAndFail("not a regular file");
  size_ = static_cast<size_t>(status.st_size);
  if (size_ > 0) {  // mmap rejects a zero length; an empty file maps to nothing
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) closeAndFail("mmap failed: " + errnoText(errno));
    data_ = static_cast<const uint8_t*>(mapped);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    fail(path, "close failed: " + errnoText(err));
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);  // cannot fail for a mapping we made
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

void MappedFile::releasePages(const void* begin, size_t bytes) const {
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin), last = first + bytes;
  const uintptr_t mapStart = reinterpret_cast<uintptr_t>(data_);
  if (bytes == 0 || first < mapStart || last > mapStart + size_) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = (first + page - 1) / page * page, to = last / page * page;  // whole pages only
  if (from >= to) return;
  // A private read-only mapping never holds modified pages, so dropping them loses nothing.
  if (::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED) != 0) fail(path_, "madvise(MADV_DONTNEED) failed: " + errnoText(errno));
}

SafetensorsHeader parseSafetensorsHeader(const std::string& path, const uint8_t* bytes, size_t fileBytes) {
  if (fileBytes < 8) fail(path, "truncated: " + std::to_string(fileBytes) + " bytes, too short for the 8-byte header length");
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes, 8);  // little-endian, checked above
  if (headerBytes > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(headerBytes) + " is absurdly large (limit " + std::to_string(kMaxHeaderBytes) + ")");
  if (headerBytes > fileBytes - 8)
    fail(path,
         "truncated: header length " + std::to_string(headerBytes) + " runs past the end of the file (" + std::to_string(fileBytes) + " bytes)");
  SafetensorsHeader parsed;
  parsed.dataStart = 8 + static_cast<size_t>(headerBytes);

  const Json header = parseHeaderJson(path, reinterpret_cast<const char*>(bytes) + 8, headerBytes);
  if (!header.is_object()) fail(path, "header is not a JSON object");
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") parsed.metadata = parseMetadata(path, entry);
    else parsed.tensors.emplace(name, parseTensorEntry(path, name, entry, fileBytes - parsed.dataStart));
  }
  checkNoOverlap(path, parsed.tensors);
  return parsed;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : mapping_(std::make_shared<const MappedFile>(path)), file_(*mapping_) {
  SafetensorsHeader header = parseSafetensorsHeader(path, file_.data(), file_.size());
  dataStart_ = header.dataStart;
  tensors_ = std::move(header.tensors);
  metadata_ = std::move(header.metadata);
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(path(), "missing tensor " + quotedName(name));
  return it->second;
}

void SafetensorsFile::checkShape(const TensorInfo& tensor, const std::vector<int64_t>& expectedShape) const {
  if (!expectedShape.empty() && expectedShape != tensor.shape)
    fail(path(), "tensor " + quotedName(tensor.name) + " has shape " + shapeText(tensor.shape) + " but the config needs " + shapeText(expectedShape));
}

void SafetensorsFile::readFloat(const std::string& name, float* out, const std::vector<int64_t>& expectedShape) const {
  const TensorInfo& tensor = info(name);
  checkShape(tensor, expectedShape);
  const size_t count = tensor.numel();
  if (count == 0) return;
  if (!out) fail(path(), "readFloat of tensor " + quotedName(name) + " into a null buffer");
  const uint8_t* source = file_.data() + dataStart_ + tensor.begin;
  if (tensor.dtype == DType::F32) {
    std::memcpy(out, source, count * sizeof(float));
    return;
  }
  if (tensor.dtype == DType::F16) convertSixteenBit<halfToFloat>(source, out, count);
  else convertSixteenBit<bfloat16ToFloat>(source, out, count);
}

const float* SafetensorsFile::floatsInPlace(const std::string& name, const std::vector<int64_t>& expectedShape) const {
  const TensorInfo& tensor = info(name);
  checkShape(tensor, expectedShape);
  const uint8_t* source = bytesInPlace(name);
  if (tensor.dtype != DType::F32 || tensor.numel() == 0 || reinterpret_cast<uintptr_t>(source) % alignof(float) != 0) return nullptr;
  return reinterpret_cast<const float*>(source);
}

const uint16_t* SafetensorsFile::halvesInPlace(const std::string& name, const std::vector<int64_t>& expectedShape) const {
  const TensorInfo& tensor = info(name);
  checkShape(tensor, expectedShape);
  const uint8_t* source = bytesInPlace(name);
  if (tensor.dtype == DType::F32 || tensor.numel() == 0 || reinterpret_cast<uintptr_t>(source) % alignof(uint16_t) != 0) return nullptr;
  return reinterpret_cast<const uint16_t*>(source);
}

const uint8_t* SafetensorsFile::bytesInPlace(const std::string& name) const { return file_.data() + dataStart_ + info(name).begin; }

void SafetensorsFile::releasePages(const std::string& name) const {
  const TensorInfo& tensor = info(name);
  file_.releasePages(bytesInPlace(name), tensor.end - tensor.begin);
}

std::vector<float> SafetensorsFile::readFloat(const std::string& name) const {
  std::vector<float> out(info(name).numel());
  readFloat(name, out.data());
  return out;
}

void writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors, const std::map<std::string, std::string>& metadata) {
  // Everything is checked before the temporary file is created, so bad input leaves no trace.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::vector<uint64_t> tensorBytes;
  uint64_t offset = 0;
  for (const TensorToWrite& tensor : tensors) {
    const std::string where = "tensor " + quotedName(tensor.name);
    if (tensor.name == "__metadata__") fail(path, "'__metadata__' cannot be a tensor name");
    if (!names.insert(tensor.name).second) fail(path, "duplicate tensor name " + quotedName(tensor.name));
    uint64_t bytes = 0;
    if (!checkedByteCount(tensor.shape, sizeof(float), &bytes))
      fail(path, where + ": shape " + shapeText(tensor.shape) + " has a negative dimension or overflows");
    if (bytes > 0 && tensor.data == nullptr) fail(path, where + " has a null data pointer");
    header[tensor.name] = {{"dtype", "F32"}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + bytes}}};
    tensorBytes.push_back(bytes);
    offset += bytes;
  }
  std::string headerText;
  try {
    headerText = header.dump();
  } catch (const nlohmann::ordered_json::exception& e) {  // e.g. a name that is not UTF-8
    fail(path, std::string("cannot encode the header: ") + e.what());
  }
  headerText.append((8 - headerText.size() % 8) % 8, ' ');  // keeps the data area 8-byte aligned
  const uint64_t headerBytes = headerText.size();

  AtomicFileWriter writer(path);
  writer.write(&headerBytes, 8);
  writer.write(headerText.data(), headerText.size());
  for (size_t i = 0; i < tensors.size(); ++i) writer.write(tensors[i].data, tensorBytes[i]);
  writer.commit();
}

}  // namespace tscope

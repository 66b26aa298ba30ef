// NumPy .npy reading and writing, following numpy's format docs (numpy/lib/format.py,
// "NPY format"): magic "\x93NUMPY", version, little-endian header length, then a Python dict
// literal padded with spaces and '\n' so that the data starts on a 64-byte boundary.
#include "model/io/npy.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "model/core/error.h"
#include "model/io/safetensors.h"  // MappedFile

namespace tscope {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy data is read and written in place");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlignment = 64;

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw Error(path + ": " + problem); }

// Number of elements, or a thrown error for negative dims or a byte count past 64 bits.
uint64_t checkedElementCount(const std::string& path, const std::vector<int64_t>& shape) {
  uint64_t count = 1, bytes = 4;
  for (int64_t dim : shape) {
    if (dim < 0) fail(path, "negative dimension " + std::to_string(dim) + " in the array shape");
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count) || __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes))
      fail(path, "array shape overflows 64-bit byte counts");
  }
  return count;
}

std::string shapeTuple(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

void writeArray(const std::string& path, const char* descr, const void* data, const std::vector<int64_t>& shape) {
  const uint64_t count = checkedElementCount(path, shape);
  if (count > 0 && data == nullptr) fail(path, "null data pointer for a non-empty array");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shapeTuple(shape) + ", }";
  // Version 1.0 stores the header length in 2 bytes, 2.0 in 4: pad so the total is 64-aligned.
  const bool needsVersion2 = kMagic.size() + 2 + 2 + dict.size() + 1 > 0xffff;
  const size_t prefixBytes = kMagic.size() + 2 + (needsVersion2 ? 4 : 2);
  const size_t unpadded = prefixBytes + dict.size() + 1;
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict += '\n';
  const uint32_t headerBytes = static_cast<uint32_t>(dict.size());

  std::string bytes(kMagic);
  bytes += static_cast<char>(needsVersion2 ? 2 : 1);
  bytes += '\0';
  bytes.append(reinterpret_cast<const char*>(&headerBytes), needsVersion2 ? 4 : 2);
  bytes += dict;
  if (count > 0) bytes.append(static_cast<const char*>(data), static_cast<size_t>(count) * 4);
  writeFileAtomically(path, bytes);
}

// Reads the header's Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderDictParser {
 public:
  HeaderDictParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  void parse(std::string* descr, bool* fortranOrder, std::vector<int64_t>* shape) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    expect('{');
    while (!consume('}')) {
      const std::string key = readString();
      expect(':');
      if (key == "descr" && !sawDescr) {
        *descr = readString();
        sawDescr = true;
      } else if (key == "fortran_order" && !sawOrder) {
        *fortranOrder = readBool();
        sawOrder = true;
      } else if (key == "shape" && !sawShape) {
        *shape = readShape();
        sawShape = true;
      } else {
        malformed("unexpected or repeated key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skipSpaces();
    if (pos_ != text_.size()) malformed("text after the closing '}'");
    if (!sawDescr || !sawOrder || !sawShape) malformed("it needs 'descr', 'fortran_order' and 'shape'");
  }

 private:
  [[noreturn]] void malformed(const std::string& why) { fail(path_, "malformed .npy header at character " + std::to_string(pos_) + ": " + why); }
  void skipSpaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool consume(char c) {
    skipSpaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) malformed(std::string("expected '") + c + "'");
  }
  std::string readString() {
    skipSpaces();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) malformed("expected a quoted string");
    const char quote = text_[pos_++];
    const size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) malformed("unterminated string");
    std::string value(text_.substr(pos_, close - pos_));
    pos_ = close + 1;
    return value;
  }
  bool readBool() {
    skipSpaces();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    malformed("expected True or False");
  }
  std::vector<int64_t> readShape() {
    std::vector<int64_t> shape;
    expect('(');
    while (!consume(')')) {
      skipSpaces();
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') malformed("expected a dimension");
      uint64_t dim = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (__builtin_mul_overflow(dim, 10u, &dim) || __builtin_add_overflow(dim, text_[pos_] - '0', &dim) || dim > static_cast<uint64_t>(INT64_MAX))
          malformed("dimension too large");
        ++pos_;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(static_cast<int64_t>(dim));
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

void writeNpy(const std::string& path, const float* data, const std::vector<int64_t>& shape) { writeArray(path, "<f4", data, shape); }

void writeNpy(const std::string& path, const int32_t* data, const std::vector<int64_t>& shape) { writeArray(path, "<i4", data, shape); }

NpyArray readNpy(const std::string& path) {
  const MappedFile file(path);
  const std::string_view bytes(reinterpret_cast<const char*>(file.data()), file.size());
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic) fail(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  const size_t lengthBytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + lengthBytes) fail(path, "truncated: the header length is cut off");
  uint32_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data() + 8, lengthBytes);
  const size_t dataStart = 8 + lengthBytes + static_cast<size_t>(headerBytes);
  if (dataStart > bytes.size()) fail(path, "truncated: header length " + std::to_string(headerBytes) + " runs past the end of the file");

  std::string descr;
  bool fortranOrder = false;
  NpyArray array;
  HeaderDictParser(path, bytes.substr(8 + lengthBytes, headerBytes)).parse(&descr, &fortranOrder, &array.shape);
  if (descr != "<f4" && descr != "<i4") fail(path, "unsupported dtype '" + descr.substr(0, 40) + "' (tscope reads '<f4' and '<i4')");
  if (fortranOrder) fail(path, "Fortran-order (column-major) arrays are not supported");
  const uint64_t count = checkedElementCount(path, array.shape);
  const size_t dataBytes = bytes.size() - dataStart;
  if (dataBytes / 4 != count || dataBytes % 4 != 0)
    fail(path, (dataBytes < count * 4 ? "truncated: shape " : "trailing bytes: shape ") + shapeTuple(array.shape) + " needs " +
                   std::to_string(count * 4) + " data bytes but the file has " + std::to_string(dataBytes));

  array.data.resize(count);
  const char* source = bytes.data() + dataStart;
  if (count == 0) return array;
  if (descr == "<f4") {
    std::memcpy(array.data.data(), source, count * 4);
  } else {
    for (size_t i = 0; i < count; ++i) {
      int32_t value;
      std::memcpy(&value, source + 4 * i, 4);
      array.data[i] = static_cast<float>(value);  // exact for |value| <= 2^24
    }
  }
  return array;
}

void writeFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmpPath = path + ".tmp";
  FILE* file = std::fopen(tmpPath.c_str(), "wb");
  if (!file) fail(tmpPath, std::string("cannot create: ") + std::strerror(errno));
  // On any failure: close, remove the temporary file, and report the first error.
  auto abandon = [&](const char* step) {
    const int err = errno;
    if (file) std::fclose(file);
    std::remove(tmpPath.c_str());
    fail(tmpPath, std::string(step) + " failed: " + std::strerror(err));
  };
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) abandon("write");
  if (std::fflush(file) != 0) abandon("fflush");
  if (::fsync(::fileno(file)) != 0) abandon("fsync");
  FILE* closing = std::exchange(file, nullptr);
  if (std::fclose(closing) != 0) abandon("close");
  if (std::rename(tmpPath.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmpPath.c_str());
    fail(path, "cannot rename " + tmpPath + " over it: " + std::strerror(err));
  }
}

}  // namespace tscope

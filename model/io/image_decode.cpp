// Images in: stb_image decoding behind header checks (image.h), and PNG writing; without libstb-dev
// (the GPU machines build the engine without Debian packages) both say so in one line.
#include "model/io/image.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "model/core/error.h"
#include "model/core/file_check.h"

#if __has_include(<stb/stb_image.h>) && __has_include(<stb/stb_image_write.h>)

// stb_image, compiled here with only the formats tscope reads (TGA, which has no signature, would
// take any bytes as an image), memory input only, its user-facing failure strings, its functions
// static (never clashing with the app's libstb), and each allocation over 512 MiB refused (stb then
// fails with "out of memory"): a legal image needs at most about 330 MiB in one block (40
// megapixels of 16-bit RGBA), where a damaged PNG could otherwise have stb ask for up to 4 GiB.
namespace {
void* stbMalloc(size_t bytes) { return bytes > (size_t{512} << 20) ? nullptr : std::malloc(bytes); }
void* stbRealloc(void* block, size_t bytes) { return bytes > (size_t{512} << 20) ? nullptr : std::realloc(block, bytes); }
}  // namespace
#define STBI_MALLOC(bytes) stbMalloc(bytes)
#define STBI_REALLOC(block, bytes) stbRealloc(block, bytes)
#define STBI_FREE(block) std::free(block)
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace tscope {

namespace {

std::string sizeText(int64_t width, int64_t height) { return std::to_string(width) + "x" + std::to_string(height); }

// Refuses an image over kMaxImageSide on a side or kMaxImagePixels in all.
void checkImageSize(int width, int height, const std::string& name) {
  if (width <= 0 || height <= 0) throw Error(name + ": the image has no pixels (" + sizeText(width, height) + ")");
  if (width > kMaxImageSide || height > kMaxImageSide || int64_t{width} * height > kMaxImagePixels) {
    char megapixels[32];
    std::snprintf(megapixels, sizeof megapixels, "%.1f", static_cast<double>(width) * height / 1e6);
    throw Error(name + ": the image is " + sizeText(width, height) + " pixels (" + megapixels + " megapixels); tscope reads images up to " +
                sizeText(kMaxImageSide, kMaxImageSide) + " and " + std::to_string(kMaxImagePixels / 1'000'000) + " megapixels");
  }
}

std::string stbReason() {
  const char* reason = stbi_failure_reason();
  return std::string("(stb_image: ") + (reason ? reason : "unknown error") + ")";
}

[[noreturn]] void throwNotAnImage(const std::string& name) { throw Error(name + ": not a PNG, JPEG, BMP or PNM image " + stbReason()); }

// A header that read well over pixels that do not: a file cut short or damaged.
[[noreturn]] void throwDamaged(const std::string& name) { throw Error(name + ": the image is damaged or cut short " + stbReason()); }

// Debian's stb_image (2022) trusts the 16 code counts of a JPEG Huffman table (DHT): a table of
// more than 256 codes writes past its arrays (found by tests/fuzz/fuzz_image.cpp). No valid JPEG
// has one, so such a file is refused here before stb reads it. The walk follows stb's reading:
// marker segments skipped by their length, entropy-coded data skipped to the next marker (FF 00,
// fill bytes FF and restart markers are not markers), each DHT's tables read as stb reads them
// (counts summed even where a table runs past the segment), up to the end of the image (EOI).
// Where a JPEG's data starts after its SOI marker (stb allows FF fill bytes before it); 0: not a JPEG.
size_t jpegStart(const uint8_t* data, size_t size) {
  size_t pos = 0;
  while (pos < size && data[pos] == 0xFF) ++pos;
  return pos > 0 && pos < size && data[pos] == 0xD8 ? pos + 1 : 0;
}

void refuseOversizedJpegTables(const uint8_t* data, size_t size, const std::string& name) {
  const auto byteAt = [&](size_t i) -> size_t { return i < size ? data[i] : 0; };  // stb reads 0 past the end
  for (size_t pos = jpegStart(data, size); pos > 0 && pos + 1 < size;) {
    const uint8_t marker = data[pos + 1];
    if (data[pos] != 0xFF || marker == 0xFF) {  // entropy-coded data, padding or fill bytes
      ++pos;
      continue;
    }
    if (marker == 0xD9) return;  // EOI: stb stops
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
      pos += 2;  // a stuffed FF, TEM, a restart marker or SOI: no length follows
      continue;
    }
    const size_t length = byteAt(pos + 2) << 8 | byteAt(pos + 3);
    if (length < 2) return;  // stb refuses the segment
    int64_t left = marker == 0xC4 ? static_cast<int64_t>(length) - 2 : 0;
    for (size_t table = pos + 4; left > 0 && table < size;) {  // a DHT's tables
      size_t codes = 0;
      for (size_t i = 1; i <= 16; ++i) codes += byteAt(table + i);
      if (codes > 256)
        throw Error(name + ": a damaged JPEG (a Huffman table of " + std::to_string(codes) + " codes; a JPEG table holds at most 256)");
      table += 17 + codes;
      left -= static_cast<int64_t>(17 + codes);
    }
    pos += 2 + length;
  }
}

// stb_image grows its buffer to a PNG IDAT chunk's declared length before reading the chunk: a
// length past the end of the file (a file cut short, or damaged) is refused here instead.
void refuseOverlongPngChunks(const uint8_t* data, size_t size, const std::string& name) {
  static constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size < 8 || !std::equal(kSignature, kSignature + 8, data)) return;
  for (size_t pos = 8; pos + 8 <= size;) {
    const size_t length = size_t{data[pos]} << 24 | size_t{data[pos + 1]} << 16 | size_t{data[pos + 2]} << 8 | data[pos + 3];
    if (length > size - pos - 8)
      throw Error(name + ": the image is damaged or cut short (a PNG chunk of " + std::to_string(length) + " bytes runs past the end of the file)");
    if (std::equal(data + pos + 4, data + pos + 8, "IEND")) return;
    pos += 12 + length;  // length, type, data, CRC
  }
}

// The same stb_image reads a PNM header's numbers into an int without a bound (a width of
// 6666666660 overflows it: undefined behaviour, found by the fuzzer), and leaves the pixels a
// short file lacks uninitialised. This reads a binary PGM / PPM header as stb does (white space and
// # comments between width, height and maximum), refuses a number over 10^8 (far past any limit)
// and a file shorter than its pixels.
void refuseBadPnmHeader(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 2 || data[0] != 'P' || (data[1] != '5' && data[1] != '6')) return;
  size_t pos = 2;
  const auto atEnd = [&] { return pos >= size; };
  const auto next = [&]() -> char { return pos < size ? static_cast<char>(data[pos++]) : '\0'; };  // stb reads 0 past the end
  const auto isSpace = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'; };
  char c = next();
  int64_t numbers[3] = {0, 0, 0};  // width, height, maximum
  for (int64_t& value : numbers) {
    for (;;) {
      while (!atEnd() && isSpace(c)) c = next();
      if (atEnd() || c != '#') break;
      while (!atEnd() && c != '\n' && c != '\r') c = next();
    }
    while (!atEnd() && c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      if (value > 100'000'000) throw Error(name + ": a damaged PNM image (a number in its header is too large)");
      c = next();
    }
  }
  const int64_t samples = numbers[0] * numbers[1] * (data[1] == '6' ? 3 : 1) * (numbers[2] > 255 ? 2 : 1);
  if (numbers[0] <= kMaxImageSide && numbers[1] <= kMaxImageSide && static_cast<int64_t>(size - pos) < samples)
    throw Error(name + ": the image is damaged or cut short (" + std::to_string(size - pos) + " bytes of " + std::to_string(samples) +
                " pixel bytes)");
}

// stb's decoded samples (8 or 16 bits, 1..4 channels interleaved) as an Image: values scaled to
// [0, 1], grey + alpha -> grey and RGBA -> RGB with the alpha composited over WHITE (a transparent
// pixel is white, as a viewer on a white page shows it, and as a drawn digit's background is).
template <typename Sample>
Image imageFromSamples(const Sample* samples, int width, int height, int fileChannels, float scale) {
  Image image;
  image.width = width;
  image.height = height;
  const bool alpha = fileChannels == 2 || fileChannels == 4;
  image.channels = fileChannels >= 3 ? 3 : 1;
  const size_t count = static_cast<size_t>(width) * height;
  image.pixels.resize(count * image.channels);
  for (size_t i = 0; i < count; ++i) {
    const Sample* in = samples + i * fileChannels;
    float* out = image.pixels.data() + i * image.channels;
    const float a = alpha ? in[fileChannels - 1] * scale : 1.0f;
    for (int c = 0; c < image.channels; ++c) out[c] = std::clamp(in[c] * scale * a + (1.0f - a), 0.0f, 1.0f);
  }
  return image;
}

}  // namespace

Image decodeImage(const uint8_t* data, size_t size, const std::string& name) {
  if (size == 0 || data == nullptr) throw Error(name + ": the file is empty");
  if (size > static_cast<size_t>(INT_MAX)) throw Error(name + ": the file is too large to decode (" + std::to_string(size) + " bytes)");
  const int length = static_cast<int>(size);
  refuseOversizedJpegTables(data, size, name);  // before stbi_info, which reads the tables too
  refuseBadPnmHeader(data, size, name);
  refuseOverlongPngChunks(data, size, name);
  int width = 0, height = 0, fileChannels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &fileChannels)) throwNotAnImage(name);
  checkImageSize(width, height, name);  // from the header alone, before any pixel is decoded
  // stb_image fills what a JPEG or BMP lacks with zeros, so a header alone would decode to a blank
  // image of its size: a file under the least a whole image takes (a bit per 8x8 block of a JPEG,
  // per pixel of a BMP) is refused.
  const int64_t pixels = int64_t{width} * height;
  const int64_t least = jpegStart(data, size) > 0 ? pixels / 512 : size >= 2 && data[0] == 'B' && data[1] == 'M' ? pixels / 8 : 0;
  if (static_cast<int64_t>(size) < least)
    throw Error(name + ": the image is damaged or cut short (" + sizeText(width, height) + " pixels in " + std::to_string(size) + " bytes)");
  int decodedWidth = 0, decodedHeight = 0, decodedChannels = 0;
  const auto convert = [&](auto* samples, float scale) {
    std::unique_ptr<std::remove_pointer_t<decltype(samples)>, void (*)(void*)> owned(samples, stbi_image_free);
    if (!owned) throwDamaged(name);
    if (decodedWidth != width || decodedHeight != height || decodedChannels < 1 || decodedChannels > 4)
      throw Error(name + ": the image decoded to another size than its header says");
    return imageFromSamples(owned.get(), width, height, decodedChannels, scale);
  };
  if (stbi_is_16_bit_from_memory(data, length))
    return convert(stbi_load_16_from_memory(data, length, &decodedWidth, &decodedHeight, &decodedChannels, 0), 1.0f / 65535);
  return convert(stbi_load_from_memory(data, length, &decodedWidth, &decodedHeight, &decodedChannels, 0), 1.0f / 255);
}

Image readImage(const std::string& path) {
  if (!somethingAt(path)) throw Error(path + ": no such file");
  requireRegularFile(path, "the image");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the image");
  in.seekg(0, std::ios::end);
  const std::streamoff bytes = in.tellg();
  if (bytes < 0) throw Error(path + ": cannot read the image");
  if (bytes > kMaxImageFileBytes)
    throw Error(path + ": the file is " + std::to_string(bytes >> 20) + " MiB; tscope reads images up to " +
                std::to_string(kMaxImageFileBytes >> 20) + " MiB");
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  if (!data.empty() && !in.read(reinterpret_cast<char*>(data.data()), bytes)) throw Error(path + ": cannot read the image");
  return decodeImage(data.data(), data.size(), path);
}

void writePng(const std::string& path, const Image& image) {
  if ((image.channels != 1 && image.channels != 3) || image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels)
    throw Error(path + ": cannot write the PNG: the image is not " + sizeText(image.width, image.height) + " pixels of 1 or 3 channels");
  std::vector<uint8_t> bytes(image.pixels.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const float v = image.pixels[i] > 0 ? std::min(image.pixels[i], 1.0f) : 0.0f;  // NaN -> 0
    bytes[i] = static_cast<uint8_t>(std::lround(v * 255.0f));
  }
  const std::string temporary = path + ".tmp";
  if (!stbi_write_png(temporary.c_str(), image.width, image.height, image.channels, bytes.data(), image.width * image.channels)) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw Error(path + ": cannot write the PNG (" + temporary + " could not be written)");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw Error(path + ": cannot write the PNG (" + ec.message() + ")");
  }
}

}  // namespace tscope

#else

namespace tscope {

Image decodeImage(const uint8_t*, size_t, const std::string& name) {
  throw Error(name + ": this build of tscope reads no images (it was built without libstb-dev's stb_image)");
}

Image readImage(const std::string& path) {
  if (!somethingAt(path)) throw Error(path + ": no such file");
  return decodeImage(nullptr, 0, path);
}

void writePng(const std::string& path, const Image&) {
  throw Error(path + ": this build of tscope writes no images (it was built without libstb-dev's stb_image_write)");
}

}  // namespace tscope

#endif

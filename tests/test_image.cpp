// Tests for model/io/image: PNG round trips (grey, RGB, RGBA and grey + alpha over white, 16 bits)
// through PNGs built here byte by byte (stored deflate blocks, CRC-32 and Adler-32 by hand), a JPEG
// from stb_image_write, damaged, random, empty and oversized files, PIL-style bilinear resizing,
// HuggingFace's preprocessing steps (channel-major output, normalisation, tscope's levels and
// inversion), preprocessor_config.json parsing, and a real photograph.
#include "model/io/image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "tests/test_files.h"

// stb_image_write, static to this file, for a JPEG to decode.
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace {

using tscope::Error;
using tscope::Image;
using tscope::ImagePreprocessing;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

void appendBig32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char ch : bytes) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

std::string pngChunk(const std::string& type, const std::string& data) {
  std::string chunk;
  appendBig32(chunk, static_cast<uint32_t>(data.size()));
  chunk += type + data;
  appendBig32(chunk, crc32(type + data));
  return chunk;
}

// A zlib stream of stored (uncompressed) deflate blocks.
std::string zlibStored(const std::string& raw) {
  std::string out = "\x78\x01";
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(raw.size() - pos, 65535);
    out += static_cast<char>(pos + n == raw.size() ? 1 : 0);
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xff);
    out += static_cast<char>((~n >> 8) & 0xff);
    out += raw.substr(pos, n);
    pos += n;
  } while (pos < raw.size());
  uint32_t a = 1, b = 0;
  for (const char ch : raw) {
    a = (a + static_cast<uint8_t>(ch)) % 65521;
    b = (b + a) % 65521;
  }
  appendBig32(out, (b << 16) | a);
  return out;
}

// A PNG of `samples` (row-major, interleaved, big-endian 16-bit when depth is 16), colour type
// 0 grey, 2 RGB, 4 grey + alpha, 6 RGBA; every row with filter 0.
std::string makePng(int width, int height, int depth, int colorType, const std::vector<uint16_t>& samples) {
  const int perPixel = colorType == 0 ? 1 : colorType == 2 ? 3 : colorType == 4 ? 2 : 4;
  std::string raw;
  size_t i = 0;
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    for (int k = 0; k < width * perPixel; ++k, ++i) {
      if (depth == 16) raw += static_cast<char>(samples[i] >> 8);
      raw += static_cast<char>(samples[i] & 0xff);
    }
  }
  std::string header;
  appendBig32(header, static_cast<uint32_t>(width));
  appendBig32(header, static_cast<uint32_t>(height));
  header += {static_cast<char>(depth), static_cast<char>(colorType), 0, 0, 0};
  return std::string("\x89PNG\r\n\x1a\n", 8) + pngChunk("IHDR", header) + pngChunk("IDAT", zlibStored(raw)) + pngChunk("IEND", "");
}

Image decode(const std::string& bytes, const std::string& name = "test.png") {
  return tscope::decodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

Image makeImage(int width, int height, int channels, const std::vector<float>& pixels) { return Image{width, height, channels, pixels}; }

// A width x height image whose value at (y, x, c) is f(y, x, c).
template <typename F>
Image imageOf(int width, int height, int channels, F f) {
  Image image{width, height, channels, {}};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<float>(f(y, x, c)));
  return image;
}

TEST(Image, GreyPngRoundTrip) {
  ScratchDir dir;
  const Image grey = imageOf(3, 2, 1, [](int y, int x, int) { return (y * 3 + x) * 40 / 255.0; });
  tscope::writePng(dir.file("grey.png"), grey);
  EXPECT_FALSE(std::filesystem::exists(dir.file("grey.png.tmp")));
  const Image back = tscope::readImage(dir.file("grey.png"));
  ASSERT_EQ(back.width, 3);
  ASSERT_EQ(back.height, 2);
  ASSERT_EQ(back.channels, 1);
  for (size_t i = 0; i < grey.pixels.size(); ++i) EXPECT_NEAR(back.pixels[i], grey.pixels[i], 1e-6) << i;
}

TEST(Image, RgbPngRoundTrip) {
  ScratchDir dir;
  const Image rgb = imageOf(2, 3, 3, [](int y, int x, int c) { return ((y * 2 + x) * 3 + c) * 13 / 255.0; });
  tscope::writePng(dir.file("rgb.png"), rgb);
  const Image back = tscope::readImage(dir.file("rgb.png"));
  ASSERT_EQ(back.width, 2);
  ASSERT_EQ(back.height, 3);
  ASSERT_EQ(back.channels, 3);
  for (size_t i = 0; i < rgb.pixels.size(); ++i) EXPECT_NEAR(back.pixels[i], rgb.pixels[i], 1e-6) << i;
}

TEST(Image, AlphaIsCompositedOverWhite) {
  // RGBA: opaque red, half-transparent black, fully transparent black.
  const Image rgba = decode(makePng(3, 1, 8, 6, {255, 0, 0, 255, 0, 0, 0, 128, 0, 0, 0, 0}));
  ASSERT_EQ(rgba.channels, 3);
  ASSERT_EQ(rgba.width, 3);
  const float half = 1.0f - 128.0f / 255;
  const std::vector<float> expected{1, 0, 0, half, half, half, 1, 1, 1};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(rgba.pixels[i], expected[i], 1e-6) << i;
  // Grey + alpha stays one channel: grey 0.2 at alpha 0.5 -> 0.2 * a + (1 - a).
  const Image greyAlpha = decode(makePng(2, 1, 8, 4, {51, 255, 51, 127}));
  ASSERT_EQ(greyAlpha.channels, 1);
  EXPECT_NEAR(greyAlpha.pixels[0], 0.2f, 1e-6);
  EXPECT_NEAR(greyAlpha.pixels[1], 0.2f * (127.0f / 255) + (1 - 127.0f / 255), 1e-6);
}

TEST(Image, SixteenBitPngKeepsItsPrecision) {
  ScratchDir dir;
  writeBytes(dir.file("deep.png"), makePng(2, 2, 16, 0, {0, 65535, 32768, 1}));
  const Image grey = tscope::readImage(dir.file("deep.png"));
  ASSERT_EQ(grey.channels, 1);
  ASSERT_EQ(grey.pixels.size(), 4u);
  EXPECT_EQ(grey.pixels[0], 0.0f);
  EXPECT_NEAR(grey.pixels[1], 1.0f, 1e-7);
  EXPECT_NEAR(grey.pixels[2], 32768.0f / 65535, 1e-7);  // 8 bits would give 128 / 255 = 0.50196
  EXPECT_NEAR(grey.pixels[3], 1.0f / 65535, 1e-9);
  // 16-bit RGBA: white at alpha 1/2 of 65535 over white stays white; black fully opaque stays black.
  const Image rgba = decode(makePng(2, 1, 16, 6, {65535, 65535, 65535, 32768, 0, 0, 0, 65535}));
  ASSERT_EQ(rgba.channels, 3);
  EXPECT_NEAR(rgba.pixels[0], 1.0f, 1e-6);
  EXPECT_NEAR(rgba.pixels[3], 0.0f, 1e-6);
}

TEST(Image, JpegDecodes) {
  std::string bytes;
  const auto append = [](void* context, void* data, int size) { static_cast<std::string*>(context)->append(static_cast<const char*>(data), size); };
  std::vector<uint8_t> rgb(16 * 8 * 3);
  for (size_t i = 0; i < rgb.size(); i += 3) rgb[i] = 200, rgb[i + 1] = 100, rgb[i + 2] = 50;
  ASSERT_TRUE(stbi_write_jpg_to_func(append, &bytes, 16, 8, 3, rgb.data(), 95));
  const Image image = decode(bytes, "photo.jpg");
  ASSERT_EQ(image.width, 16);
  ASSERT_EQ(image.height, 8);
  ASSERT_EQ(image.channels, 3);
  EXPECT_NEAR(image.at(4, 8, 0), 200 / 255.0, 0.03);
  EXPECT_NEAR(image.at(4, 8, 1), 100 / 255.0, 0.03);
  EXPECT_NEAR(image.at(4, 8, 2), 50 / 255.0, 0.03);
}

TEST(Image, TruncatedPngNamesTheFile) {
  ScratchDir dir;
  const Image image = imageOf(32, 32, 3, [](int y, int x, int c) { return ((y * 7 + x * 3 + c * 5) % 17) / 16.0; });
  tscope::writePng(dir.file("whole.png"), image);
  const std::string whole = tscope::testing::readBytes(dir.file("whole.png"));
  ASSERT_GT(whole.size(), 100u);
  writeBytes(dir.file("half.png"), whole.substr(0, whole.size() / 2));
  const std::string message = errorMessage([&] { tscope::readImage(dir.file("half.png")); });
  expectMentions(message, {dir.file("half.png"), "damaged or cut short"});
}

TEST(Image, RandomBytesAreRefused) {
  std::mt19937 rng(7);
  std::string bytes(1000, '\0');
  for (char& ch : bytes) ch = static_cast<char>(rng() & 0xff);
  bytes[0] = 'x';  // no format's signature
  expectMentions(errorMessage([&] { decode(bytes, "noise.bin"); }), {"noise.bin", "not a PNG, JPEG, BMP or PNM image"});
}

TEST(Image, EmptyAndMissingFilesAreRefused) {
  ScratchDir dir;
  writeBytes(dir.file("empty.png"), "");
  expectMentions(errorMessage([&] { tscope::readImage(dir.file("empty.png")); }), {dir.file("empty.png"), "the file is empty"});
  expectMentions(errorMessage([&] { tscope::readImage(dir.file("absent.png")); }), {dir.file("absent.png"), "no such file"});
  expectMentions(errorMessage([&] { tscope::readImage(dir.path().string()); }), {dir.path().string()});
}

// A valid 1x1 grey PNG whose IHDR then claims width x height (CRC recomputed, so only the size is wrong).
std::string pngClaiming(uint32_t width, uint32_t height) {
  std::string png = makePng(1, 1, 8, 0, {128});
  EXPECT_EQ(decode(png).pixels.size(), 1u);
  std::string fields;
  appendBig32(fields, width);
  appendBig32(fields, height);
  png.replace(16, 8, fields);  // signature (8), length (4), "IHDR" (4), then width and height
  std::string crc;
  appendBig32(crc, crc32(png.substr(12, 4 + 13)));
  png.replace(29, 4, crc);
  return png;
}

TEST(Image, OversizedHeaderIsRefusedBeforeDecoding) {
  // stb_image itself would try to allocate 20000 x 20000 bytes and then fail on the missing pixels:
  // the size message shows the header was refused first.
  expectMentions(errorMessage([&] { decode(pngClaiming(20000, 20000), "big.png"); }), {"big.png", "20000x20000", "8192x8192"});
  expectMentions(errorMessage([&] { decode(pngClaiming(8000, 6000), "wide.png"); }), {"wide.png", "8000x6000", "48.0 megapixels", "40 megapixels"});
  expectMentions(errorMessage([&] { decode(pngClaiming(8193, 1), "long.png"); }), {"long.png", "8193x1"});
  // Within the limits, the same trick reaches the decoder, which finds the pixels missing.
  expectMentions(errorMessage([&] { decode(pngClaiming(64, 64), "short.png"); }), {"short.png", "cut short"});
}

// The inputs tests/fuzz/fuzz_image.cpp found breaking Debian's stb_image (a JPEG Huffman table of
// over 256 codes, a PNM width past int, a PNG chunk longer than the file, a PNM header without its
// pixels): each refused with a message, before stb reads it.
TEST(Image, FuzzFindingsAreRefused) {
#ifdef TSCOPE_SOURCE_DIR
  const std::string folder = std::string(TSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/image/";
  for (const char* name :
       {"regression-jpeg-dht-over-256-codes", "regression-pnm-int-overflow", "regression-png-chunk-length", "regression-pnm-header-only"}) {
    const std::string path = folder + name;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    expectMentions(errorMessage([&] { tscope::readImage(path); }), {path, "damaged"});
  }
#else
  GTEST_SKIP() << "TSCOPE_SOURCE_DIR is not defined";
#endif
}

TEST(Image, ResizeKeepsAConstantImageConstant) {
  const Image flat = imageOf(7, 5, 3, [](int, int, int c) { return 0.3 + 0.1 * c; });
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{3, 2}, {11, 9}, {1, 1}, {7, 13}}) {
    const Image out = tscope::resizeImage(flat, w, h);
    ASSERT_EQ(out.width, w);
    ASSERT_EQ(out.height, h);
    ASSERT_EQ(out.pixels.size(), static_cast<size_t>(w) * h * 3);
    for (size_t i = 0; i < out.pixels.size(); ++i) EXPECT_NEAR(out.pixels[i], 0.3 + 0.1 * (i % 3), 1e-6) << w << "x" << h << " at " << i;
  }
  const Image same = tscope::resizeImage(flat, 7, 5);
  EXPECT_EQ(same.pixels, flat.pixels);
}

TEST(Image, ShrinkAverages) {
  const Image square = makeImage(2, 2, 1, {0.0f, 0.2f, 0.4f, 1.0f});
  const Image one = tscope::resizeImage(square, 1, 1);
  ASSERT_EQ(one.pixels.size(), 1u);
  EXPECT_NEAR(one.pixels[0], 0.4f, 1e-6);
  // 4 -> 2 in one row: PIL's weights over input centres 0.5..3.5 from output centre 1 (support 2):
  // 0.75, 0.75, 0.25 for inputs 0, 1, 2 -> (0.75 * 0 + 0.75 * 1 + 0.25 * 0) / 1.75.
  const Image row = tscope::resizeImage(makeImage(4, 1, 1, {0, 1, 0, 0}), 2, 1);
  EXPECT_NEAR(row.pixels[0], 0.75 / 1.75, 1e-6);
  EXPECT_NEAR(row.pixels[1], 0.25 / 1.75, 1e-6);
}

TEST(Image, UpscaledGradientIsMonotone) {
  const Image gradient = imageOf(4, 3, 1, [](int y, int x, int) { return 0.1 * x + 0.05 * y; });
  const Image big = tscope::resizeImage(gradient, 9, 7);
  ASSERT_EQ(big.pixels.size(), 63u);
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x + 1 < 9; ++x) EXPECT_LE(big.at(y, x, 0), big.at(y, x + 1, 0) + 1e-7) << y << "," << x;
    for (int x = 0; y + 1 < 7 && x < 9; ++x) EXPECT_LE(big.at(y, x, 0), big.at(y + 1, x, 0) + 1e-7) << y << "," << x;
  }
  EXPECT_LT(big.at(3, 0, 0), big.at(3, 8, 0));
  EXPECT_NEAR(big.at(0, 0, 0), 0.0f, 1e-6);  // the corner pixel's weight is all its own
  EXPECT_NEAR(big.at(6, 8, 0), 0.4f, 1e-6);
  EXPECT_THROW(tscope::resizeImage(gradient, 0, 3), Error);
}

TEST(Image, GreyAndRgbConversions) {
  const Image rgb = makeImage(2, 1, 3, {1, 0, 0, 0.2f, 0.4f, 0.6f});
  const Image grey = tscope::toGrey(rgb);
  ASSERT_EQ(grey.channels, 1);
  EXPECT_NEAR(grey.pixels[0], 0.299f, 1e-6);
  EXPECT_NEAR(grey.pixels[1], 0.299f * 0.2f + 0.587f * 0.4f + 0.114f * 0.6f, 1e-6);
  const Image back = tscope::toRgb(grey);
  ASSERT_EQ(back.channels, 3);
  EXPECT_EQ(back.pixels, (std::vector<float>{grey.pixels[0], grey.pixels[0], grey.pixels[0], grey.pixels[1], grey.pixels[1], grey.pixels[1]}));
}

TEST(Image, PreprocessIsChannelMajor) {
  // Pixel (y, x) channel c holds 100 c + 10 y + x, in 255ths; rescaled by 1/255, not normalised.
  const Image rgb = imageOf(2, 2, 3, [](int y, int x, int c) { return (100 * c + 10 * y + x) / 255.0; });
  ImagePreprocessing p;
  p.doResize = false;
  p.width = p.height = 2;
  p.doNormalize = false;
  const std::vector<float> out = tscope::preprocessImage(rgb, p, 3);
  ASSERT_EQ(out.size(), 12u);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) EXPECT_NEAR(out[(c * 2 + y) * 2 + x], (100 * c + 10 * y + x) / 255.0, 1e-6) << c << y << x;
  p.width = 3;  // the wrong size without resizing
  expectMentions(errorMessage([&] { tscope::preprocessImage(rgb, p, 3); }), {"2x2", "3x2", "do_resize"});
}

TEST(Image, PreprocessNormalises) {
  const Image grey = makeImage(3, 1, 1, {1.0f, 0.0f, 0.25f});
  ImagePreprocessing p;  // ViT's defaults: rescale 1/255, mean 0.5, std 0.5
  p.doResize = false;
  p.width = 3;
  p.height = 1;
  p.mean = {0.5};
  p.stdev = {0.5};
  const std::vector<float> out = tscope::preprocessImage(grey, p, 1);
  EXPECT_NEAR(out[0], 1.0f, 1e-6);
  EXPECT_NEAR(out[1], -1.0f, 1e-6);
  EXPECT_NEAR(out[2], -0.5f, 1e-6);
  // ImageNet's statistics, one per channel, on a grey pixel repeated in RGB.
  p.mean = {0.485, 0.456, 0.406};
  p.stdev = {0.229, 0.224, 0.225};
  const std::vector<float> rgb = tscope::preprocessImage(grey, p, 3);
  ASSERT_EQ(rgb.size(), 9u);
  EXPECT_NEAR(rgb[0], (1 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(rgb[3 + 1], (0 - 0.456) / 0.224, 1e-5);
  EXPECT_NEAR(rgb[6 + 2], (0.25 - 0.406) / 0.225, 1e-5);
  // Without rescaling the values stay 0..255, as HuggingFace's processor leaves them.
  p.doRescale = false;
  p.doNormalize = false;
  EXPECT_NEAR(tscope::preprocessImage(grey, p, 1)[0], 255.0f, 1e-4);
  p.doNormalize = true;
  p.mean = {0.5, 0.5};
  expectMentions(errorMessage([&] { tscope::preprocessImage(grey, p, 3); }), {"image_mean", "2 values"});
}

TEST(Image, LevelsQuantise) {
  ImagePreprocessing p;
  p.doResize = false;
  p.width = 3;
  p.height = 1;
  p.doNormalize = false;
  p.levels = 16;
  p.rescaleFactor = 1.0 / 16;
  // 0.5 -> 8 -> 0.5; 0.52 -> round(8.32) = 8 -> 0.5; 0.47 -> round(7.52) = 8 -> 0.5.
  const std::vector<float> out = tscope::preprocessImage(makeImage(3, 1, 1, {0.5f, 0.52f, 0.47f}), p, 1);
  for (float v : out) EXPECT_NEAR(v, 0.5f, 1e-7);
  p.doRescale = false;  // the counts themselves
  EXPECT_NEAR(tscope::preprocessImage(makeImage(3, 1, 1, {1.0f, 0.0f, 0.97f}), p, 1)[2], 16.0f, 1e-6);
}

TEST(Image, InvertsALightBackgroundWhenAsked) {
  // A dark digit on white paper: border white, centre black.
  const Image paper = imageOf(5, 5, 1, [](int y, int x, int) { return (y == 2 && x == 2) ? 0.0 : 1.0; });
  ImagePreprocessing p;
  p.doResize = false;
  p.width = p.height = 5;
  p.doNormalize = false;
  p.invertWhenLight = true;
  std::vector<float> out = tscope::preprocessImage(paper, p, 1);
  EXPECT_NEAR(out[12], 1.0f, 1e-6);
  EXPECT_NEAR(out[0], 0.0f, 1e-6);
  // Bright ink on black (the digits' own look) is left alone.
  const Image ink = imageOf(5, 5, 1, [](int y, int x, int) { return (y == 2 && x == 2) ? 1.0 : 0.0; });
  out = tscope::preprocessImage(ink, p, 1);
  EXPECT_NEAR(out[12], 1.0f, 1e-6);
  EXPECT_NEAR(out[0], 0.0f, 1e-6);
  p.invertWhenLight = false;
  EXPECT_NEAR(tscope::preprocessImage(paper, p, 1)[12], 0.0f, 1e-6);
}

TEST(Image, ParsesViTPreprocessorConfig) {
  // google/vit-base-patch16-224's preprocessor_config.json, with do_rescale and rescale_factor.
  const nlohmann::json j = nlohmann::json::parse(R"({"do_normalize": true, "do_resize": true, "image_mean": [0.5, 0.5, 0.5],
      "image_processor_type": "ViTImageProcessor", "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": {"height": 224, "width": 224},
      "do_rescale": true, "rescale_factor": 0.00392156862745098})");
  const ImagePreprocessing p = tscope::parsePreprocessorConfig(j, "vit/preprocessor_config.json");
  EXPECT_TRUE(p.doResize && p.doRescale && p.doNormalize);
  EXPECT_EQ(p.width, 224);
  EXPECT_EQ(p.height, 224);
  EXPECT_DOUBLE_EQ(p.rescaleFactor, 1.0 / 255);
  EXPECT_EQ(p.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(p.stdev, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(p.levels, 0);
  const nlohmann::json written = tscope::preprocessorConfigJson(p);
  EXPECT_EQ(written["image_processor_type"], "ViTImageProcessor");
  EXPECT_EQ(tscope::preprocessorConfigJson(tscope::parsePreprocessorConfig(written, "again")), written);

  // tscope's digits: 8x8 grey counts 0..16, the other size forms, numbers for mean and std.
  const ImagePreprocessing digits = tscope::parsePreprocessorConfig(
      nlohmann::json::parse(R"({"size": 8, "tscope_levels": 16, "tscope_invert_when_light": true, "image_mean": 0.25, "image_std": [2]})"), "digits");
  EXPECT_EQ(digits.width, 8);
  EXPECT_EQ(digits.height, 8);
  EXPECT_EQ(digits.levels, 16);
  EXPECT_DOUBLE_EQ(digits.rescaleFactor, 1.0 / 16);
  EXPECT_TRUE(digits.invertWhenLight);
  EXPECT_EQ(digits.mean, std::vector<double>{0.25});
  EXPECT_EQ(digits.stdev, std::vector<double>{2.0});
  const nlohmann::json digitsJson = tscope::preprocessorConfigJson(digits);
  EXPECT_EQ(tscope::preprocessorConfigJson(tscope::parsePreprocessorConfig(digitsJson, "digits")), digitsJson);
  const ImagePreprocessing shortest = tscope::parsePreprocessorConfig(nlohmann::json::parse(R"({"size": {"shortest_edge": 96}, "unknown": 1})"), "s");
  EXPECT_EQ(shortest.width, 96);
  EXPECT_EQ(shortest.height, 96);
}

TEST(Image, RefusesBadPreprocessorConfigs) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"size": 0})", "'size'"},
      {R"({"size": {"height": 5000, "width": 224}})", "'size.height'"},
      {R"({"size": {"height": 224}})", "'size'"},
      {R"({"size": "big"})", "'size'"},
      {R"({"size": {"height": 22.5, "width": 224}})", "'size.height'"},
      {R"({"image_std": [0.5, 0, 0.5]})", "'image_std'"},
      {R"({"image_std": -1})", "'image_std'"},
      {R"({"image_mean": [0.5, 0.5]})", "'image_mean'"},
      {R"({"image_mean": ["a"]})", "'image_mean'"},
      {R"({"do_resize": "yes"})", "'do_resize'"},
      {R"({"rescale_factor": 0})", "'rescale_factor'"},
      {R"({"tscope_levels": -1})", "'tscope_levels'"},
      {R"({"tscope_invert_when_light": 1})", "'tscope_invert_when_light'"},
  };
  for (const auto& [text, field] : cases) {
    SCOPED_TRACE(text);
    expectMentions(errorMessage([&] { tscope::parsePreprocessorConfig(nlohmann::json::parse(text), "bad/preprocessor_config.json"); }),
                   {"bad/preprocessor_config.json", field});
  }
  EXPECT_THROW(tscope::parsePreprocessorConfig(nlohmann::json::parse("[1]"), "array"), Error);
}

TEST(Image, WritePngNamesAPathItCannotWrite) {
  ScratchDir dir;
  const std::string path = dir.file("no/such/folder/out.png");
  expectMentions(errorMessage([&] { tscope::writePng(path, makeImage(1, 1, 1, {0.5f})); }), {path});
  EXPECT_THROW(tscope::writePng(dir.file("two.png"), makeImage(1, 1, 2, {0.5f, 0.5f})), Error);
}

TEST(Image, ReadsARealPhotograph) {
#ifdef TSCOPE_SOURCE_DIR
  const std::string path = std::string(TSCOPE_SOURCE_DIR) + "/.cache/data/images/chelsea.png";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing (scripts/setup.sh fetches it)";
  const Image cat = tscope::readImage(path);
  EXPECT_EQ(cat.width, 451);
  EXPECT_EQ(cat.height, 300);
  EXPECT_EQ(cat.channels, 3);
  const auto [lo, hi] = std::minmax_element(cat.pixels.begin(), cat.pixels.end());
  EXPECT_LT(*lo, 0.1f);
  EXPECT_GT(*hi, 0.9f);
  const std::vector<float> input = tscope::preprocessImage(cat, ImagePreprocessing{}, 3);
  ASSERT_EQ(input.size(), 3u * 224 * 224);
  for (float v : input) ASSERT_TRUE(v >= -1.0f - 1e-5f && v <= 1.0f + 1e-5f) << v;
#else
  GTEST_SKIP() << "TSCOPE_SOURCE_DIR is not defined";
#endif
}

}  // namespace

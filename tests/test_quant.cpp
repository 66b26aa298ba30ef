// GGML block formats (model/core/quant.h): decoding against an independent numpy reading
// (tests/golden/quant_reference.py: its committed fixtures and fresh random blocks), single blocks
// built by hand from the format definitions, the description a display draws, the quantizers'
// error bounds, and the fp16 / bf16 rounding they rely on. The dot products: test_quant_dot.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "model/core/error.h"
#include "tests/quant_test_data.h"

using namespace tscope;
using tscope::testing::randomBlocks;
using tscope::testing::randomRow;
using tscope::testing::repositoryDir;

namespace {

constexpr WeightType kQuantTypes[] = {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};

std::string typeName(WeightType type) { return std::string(weightTypeInfo(type).name); }

std::vector<uint8_t> readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A 1-D little-endian float32 .npy (format 1.0, as numpy.save writes it); empty if it is not one.
std::vector<float> readFloatNpy(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY\x01", 7) != 0) return {};
  const size_t headerEnd = 10 + (bytes[8] | (bytes[9] << 8));
  const std::string header(bytes.begin() + 10, bytes.begin() + static_cast<std::ptrdiff_t>(std::min(headerEnd, bytes.size())));
  if (header.find("'<f4'") == std::string::npos || header.find("False") == std::string::npos) return {};
  std::vector<float> values((bytes.size() - headerEnd) / 4);
  std::memcpy(values.data(), bytes.data() + headerEnd, values.size() * 4);
  return values;
}

// dequantizeRow of `blocks` against `expected`, each weight within 1e-6 (relative above 1).
void expectDecodesTo(WeightType type, const std::vector<uint8_t>& blocks, const std::vector<float>& expected) {
  const WeightTypeInfo info = weightTypeInfo(type);
  const int64_t values = static_cast<int64_t>(blocks.size()) / info.blockBytes * info.blockValues;
  ASSERT_GT(values, 0) << info.name;
  ASSERT_EQ(static_cast<int64_t>(expected.size()), values) << info.name;
  std::vector<float> got(static_cast<size_t>(values));
  dequantizeRow(type, blocks.data(), got.data(), values);
  int exact = 0;
  for (int64_t i = 0; i < values; ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-6 * std::max(1.0f, std::fabs(expected[i]))) << info.name << " weight " << i;
    exact += got[i] == expected[i];
  }
  EXPECT_EQ(exact, values) << info.name << ": every product is exact in float32, so both readings should agree bit for bit";
}

TEST(Quant, DequantizeMatchesCommittedNumpyFixtures) {
  const std::filesystem::path folder = repositoryDir() / "tests" / "golden" / "quant";
  for (const WeightType type : kQuantTypes) {
    const std::vector<uint8_t> blocks = readFile(folder / (typeName(type) + ".bin"));
    const std::vector<float> expected = readFloatNpy(folder / (typeName(type) + ".npy"));
    ASSERT_FALSE(blocks.empty() || expected.empty()) << "missing fixture for " << typeName(type) << " in " << folder;
    expectDecodesTo(type, blocks, expected);
  }
}

TEST(Quant, DequantizeMatchesIndependentNumpyReference) {
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with numpy (the committed fixtures still ran)";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tscope_quant_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string script = (repositoryDir() / "tests" / "golden" / "quant_reference.py").string();
  const std::string run = "/usr/bin/python3 " + script + " fresh " + dir.string() + " " + std::to_string(std::random_device()() % 1000000);
  ASSERT_EQ(std::system(run.c_str()), 0) << run;
  for (const WeightType type : kQuantTypes) {
    SCOPED_TRACE(run);
    expectDecodesTo(type, readFile(dir / (typeName(type) + ".bin")), readFloatNpy(dir / (typeName(type) + ".npy")));
  }
  std::filesystem::remove_all(dir);
}

// Hand-built blocks: each weight written from the format's definition, not read back by our decoder.
std::vector<float> decode(WeightType type, const std::vector<uint8_t>& block) {
  std::vector<float> w(static_cast<size_t>(weightTypeInfo(type).blockValues));
  dequantizeRow(type, block.data(), w.data(), static_cast<int64_t>(w.size()));
  return w;
}

void putHalf(std::vector<uint8_t>& block, int offset, float value) {
  const uint16_t bits = floatToHalf(value);
  ASSERT_EQ(halfToFloat(bits), value) << "not an exact half";
  std::memcpy(block.data() + offset, &bits, 2);
}

TEST(Quant, Q4_0BlockByHand) {
  std::vector<uint8_t> block(18);
  putHalf(block, 0, 0.5f);
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));  // weight j: nibble j; weight j + 16: 15 - j
  const std::vector<float> w = decode(WeightType::Q4_0, block);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(w[j], 0.5f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(w[j + 16], 0.5f * static_cast<float>(7 - j)) << j;
  }
}

TEST(Quant, Q8_0BlockByHand) {
  std::vector<uint8_t> block(34);
  putHalf(block, 0, -0.25f);
  for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i * 8 - 128));  // -128, -120, ..., 120
  const std::vector<float> w = decode(WeightType::Q8_0, block);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(w[i], -0.25f * static_cast<float>(i * 8 - 128)) << i;
}

// Q4_K / Q5_K: sub-block 2 (chunk 1's low nibbles) with scale 3 and min 7, sub-block 5 (chunk 2's
// high nibbles; a scale and min above 15, split across three bytes) with 37 and 41; the rest 0.
std::vector<uint8_t> kBlockByHand(WeightType type) {
  const bool five = type == WeightType::Q5_K;
  std::vector<uint8_t> block(five ? 176 : 144);
  putHalf(block, 0, 1.0f);  // d
  putHalf(block, 2, 0.5f);  // dmin
  uint8_t* scales = block.data() + 4;
  scales[2] = 3, scales[2 + 4] = 7;                          // j < 4: low 6 bits of bytes j and j + 4
  scales[9] = (37 & 0xF) | ((41 & 0xF) << 4);                // j = 5: low nibbles in byte j + 4
  scales[1] |= (37 >> 4) << 6, scales[5] |= (41 >> 4) << 6;  // top 2 bits in bytes j - 4 and j
  uint8_t* qs = block.data() + (five ? 48 : 16);
  for (int l = 0; l < 32; ++l) {
    qs[32 + l] = static_cast<uint8_t>(l % 16);                     // chunk 1, low: sub-block 2
    qs[64 + l] = static_cast<uint8_t>((15 - l % 16) << 4);         // chunk 2, high: sub-block 5
    if (five) block[16 + l] = static_cast<uint8_t>((l % 2) << 5);  // qh bit 5 = 2c + 1 for c = 2: +16 on odd l
  }
  return block;
}

TEST(Quant, Q4_KAndQ5_KSubBlocksByHand) {
  for (const WeightType type : {WeightType::Q4_K, WeightType::Q5_K}) {
    const std::vector<float> w = decode(type, kBlockByHand(type));
    for (int i = 0; i < 256; ++i) {
      float expected = 0;
      if (i >= 64 && i < 96) expected = 3.0f * static_cast<float>((i - 64) % 16) - 0.5f * 7;
      const int high = type == WeightType::Q5_K && (i - 160) % 2 ? 16 : 0;
      if (i >= 160 && i < 192) expected = 37.0f * static_cast<float>(15 - (i - 160) % 16 + high) - 0.5f * 41;
      EXPECT_EQ(w[i], expected) << typeName(type) << " weight " << i;
    }
  }
}

TEST(Quant, Q6_KBlockByHand) {
  // Weight p gets code (p * 7) % 64 - 32 and sub-block scale (p / 16) - 8, with d = 0.5.
  std::vector<uint8_t> block(210);
  putHalf(block, 208, 0.5f);
  for (int j = 0; j < 16; ++j) block[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 8));
  for (int p = 0; p < 256; ++p) {
    const int q = (p * 7) % 64, half = p / 128, k = (p % 128) / 32, l = p % 32;
    block[64 * half + l + 32 * (k % 2)] |= static_cast<uint8_t>((q & 0xF) << (k < 2 ? 0 : 4));  // ql: low nibbles k = 0, 1
    block[128 + 32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));                    // qh: two bits per k
  }
  const std::vector<float> w = decode(WeightType::Q6_K, block);
  for (int p = 0; p < 256; ++p) EXPECT_EQ(w[p], 0.5f * static_cast<float>(p / 16 - 8) * static_cast<float>((p * 7) % 64 - 32)) << p;
}

TEST(Quant, DescribeRowAndCodesRebuildTheWeights) {
  std::mt19937 rng(7);
  for (const WeightType type : kQuantTypes) {
    const int64_t values = 512;
    const std::vector<uint8_t> row = randomBlocks(type, values / weightTypeInfo(type).blockValues, rng);
    std::vector<float> w(values);
    dequantizeRow(type, row.data(), w.data(), values);
    const std::vector<QuantSubBlock> subs = describeRow(type, row.data(), values);
    const std::vector<int> codes = rowCodes(type, row.data(), values);
    ASSERT_EQ(static_cast<int64_t>(codes.size()), values);
    int64_t next = 0;
    for (const QuantSubBlock& sub : subs) {
      ASSERT_EQ(sub.first, next) << typeName(type);
      ASSERT_EQ(sub.count, type == WeightType::Q6_K ? 16 : 32);
      for (int64_t i = sub.first; i < sub.first + sub.count; ++i) {
        EXPECT_GE(codes[i], sub.codeMin);
        EXPECT_LE(codes[i], sub.codeMax);
        EXPECT_EQ(w[i], sub.scale * static_cast<float>(codes[i]) - sub.min) << typeName(type) << " weight " << i;
      }
      EXPECT_EQ(sub.scale, sub.superScale * static_cast<float>(sub.scaleCode));
      EXPECT_EQ(sub.min, sub.superMin * static_cast<float>(sub.minCode));
      next += sub.count;
    }
    EXPECT_EQ(next, values) << typeName(type);
  }
  EXPECT_TRUE(describeRow(WeightType::BF16, nullptr, 0).empty());
}

TEST(Quant, RejectsRowsThatAreNotWholeBlocks) {
  std::vector<uint8_t> row(1024);
  std::vector<float> out(300);
  try {
    dequantizeRow(WeightType::Q4_K, row.data(), out.data(), 300);
    FAIL() << "300 values of Q4_K accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q4_K"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dotRow(WeightType::Q8_0, row.data(), out.data(), 33), Error);
  EXPECT_THROW(quantizeRow(WeightType::Q6_K, out.data(), row.data(), 128), Error);
  EXPECT_THROW(matmulFewRows(WeightType::F32, row.data(), 4, out.data(), -1, out.data(), 1, 1), Error);
  EXPECT_NO_THROW(dequantizeRow(WeightType::F16, row.data(), out.data(), 299));  // float types: any length
}

// quantize -> dequantize: every weight within the bound the format's quantizer promises (quant.h).
TEST(Quant, QuantizeThenDequantizeStaysWithinHalfAStep) {
  std::mt19937 rng(11);
  const int64_t values = 4864;
  std::vector<float> x = randomRow(values, rng);
  for (int i = 512; i < 544; ++i) x[i] = 0;                                            // a block of zeros
  for (int i = 1024; i < 1056; ++i) x[i] = 0.25f + 0.01f * static_cast<float>(i % 7);  // a sub-block above 0
  for (const WeightType type : kQuantTypes) {
    std::vector<uint8_t> row(*rowBytes(type, values));
    quantizeRow(type, x.data(), row.data(), values);
    std::vector<float> w(values);
    dequantizeRow(type, row.data(), w.data(), values);
    for (const QuantSubBlock& sub : describeRow(type, row.data(), values)) {
      float lo = 0, hi = 0, amax = 0, max = 0;
      for (int64_t i = sub.first; i < sub.first + sub.count; ++i) {
        lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
      }
      for (int64_t i = sub.first; i < sub.first + sub.count; ++i) {
        const float error = std::fabs(w[i] - x[i]), slack = 4 * FLT_EPSILON * (std::fabs(x[i]) + std::fabs(sub.min) + std::fabs(sub.scale) * 32);
        float bound = 0;
        if (type == WeightType::Q8_0) {
          bound = (0.5f + 127.0f / 2048) * amax / 127;  // half a step of d = amax / 127, plus d's fp16 rounding times 127
        } else if (type == WeightType::Q4_0) {
          const float d = max / -8;  // x / d near 8 clips to code 7: one step
          bound = (x[i] / d > 7.5f ? 1.0f : 0.5f) * std::fabs(d) + std::fabs(d) / 256;
        } else {
          bound = sub.scale / 2;
        }
        ASSERT_LE(error, bound + slack) << typeName(type) << " weight " << i << ": " << x[i] << " became " << w[i];
      }
      // The K-quants' steps are near the ideal range / levels: at most one super-block step (and one
      // min step spread over the levels) above it, so the bound above is not met by coarse steps.
      float largestStep = 0;
      if (type == WeightType::Q4_K || type == WeightType::Q5_K)
        largestStep = ((hi - lo) + sub.superMin) / static_cast<float>(sub.codeMax) + sub.superScale;
      if (type == WeightType::Q6_K) largestStep = amax / 31 + sub.superScale;
      if (largestStep > 0) {
        EXPECT_LE(sub.scale, largestStep * (1 + 1e-6f)) << typeName(type) << " " << sub.first;
      }
    }
  }
}

TEST(Quant, Q8_0AndQ4_0PutTheLargestWeightOnTheEndCode) {
  std::mt19937 rng(5);
  const std::vector<float> x = randomRow(64, rng);
  for (const WeightType type : {WeightType::Q8_0, WeightType::Q4_0}) {
    std::vector<uint8_t> row(*rowBytes(type, 64));
    quantizeRow(type, x.data(), row.data(), 64);
    const std::vector<int> codes = rowCodes(type, row.data(), 64);
    for (int b = 0; b < 2; ++b) {
      const auto largest =
          std::max_element(x.begin() + 32 * b, x.begin() + 32 * b + 32, [](float a, float c) { return std::fabs(a) < std::fabs(c); });
      const int code = codes[largest - x.begin()];
      if (type == WeightType::Q8_0) {
        EXPECT_EQ(std::abs(code), 127) << b;  // d = amax / 127
      } else {
        EXPECT_EQ(code, -8) << b;  // d = max / -8: the largest is code -8
      }
    }
  }
}

TEST(Quant, FloatTypesRoundTripThroughQuantizeRow) {
  std::mt19937 rng(3);
  const std::vector<float> x = randomRow(37, rng);
  for (const WeightType type : {WeightType::F32, WeightType::F16, WeightType::BF16}) {
    std::vector<uint8_t> row(*rowBytes(type, 37));
    quantizeRow(type, x.data(), row.data(), 37);
    std::vector<float> w(37);
    dequantizeRow(type, row.data(), w.data(), 37);
    const float relative = type == WeightType::F32 ? 0.0f : type == WeightType::F16 ? 0x1p-11f : 0x1p-8f;  // half a unit in the last place
    for (int i = 0; i < 37; ++i) EXPECT_LE(std::fabs(w[i] - x[i]), relative * std::fabs(x[i])) << typeName(type) << " " << i;
  }
}

// floatToHalf / floatToBfloat16: every half survives the round trip, and random floats go to the
// nearer neighbour (ties to the even one).
TEST(Quant, HalfConversionsRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(halfToFloat(bits)))));
      continue;
    }
    ASSERT_EQ(floatToHalf(halfToFloat(bits)), bits) << std::hex << h;
    ASSERT_EQ(floatToBfloat16(bfloat16ToFloat(bits)), bits) << std::hex << h;
  }
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);  // below the midpoint to 65536: the largest half
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // the midpoint, 65504's mantissa odd: infinity
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);  // half the smallest subnormal: a tie, to zero (even)
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 0x3p-11f), 0x3c02);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> exponent(-26.0f, 15.9f);
  for (int i = 0; i < 20000; ++i) {
    const float f = std::exp2(exponent(rng)) * (rng() % 2 ? 1.0f : -1.0f);
    const uint16_t h = floatToHalf(f), b = floatToBfloat16(f);
    const float error = std::fabs(halfToFloat(h) - f), bError = std::fabs(bfloat16ToFloat(b) - f);
    for (const uint16_t neighbour : {static_cast<uint16_t>(h + 1), static_cast<uint16_t>(h - 1)}) {
      if ((neighbour & 0x7c00) == 0x7c00) continue;  // NaN / infinity: no neighbour
      ASSERT_LE(error, std::fabs(halfToFloat(neighbour) - f)) << f;
    }
    for (const uint16_t neighbour : {static_cast<uint16_t>(b + 1), static_cast<uint16_t>(b - 1)})
      ASSERT_LE(bError, std::fabs(bfloat16ToFloat(neighbour) - f)) << f;
  }
}

}  // namespace

// Tests for model/safetensors: a bit-exact round trip, F16/BF16 decoding against hand-computed
// values, one test per kind of corrupt file (each checks that the one-line message names the
// problem and the tensor), a seeded fuzz of byte flips and truncations, and the atomic writer.
#include "model/io/safetensors.h"

#include <gtest/gtest.h>

#include "tests/test_files.h"
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "model/core/error.h"

namespace {

namespace fs = std::filesystem;
using tscope::SafetensorsFile;
using tscope::TensorToWrite;

using tscope::testing::readBytes;
using tscope::testing::writeBytes;

// A scratch directory for this file's tests.
using tscope::testing::ScratchDir;

// A hand-made safetensors file: 8-byte little-endian header length, the header text as given, data.
std::string rawSafetensors(const std::string& header, const std::string& data) {
  const uint64_t length = header.size();
  std::string bytes(reinterpret_cast<const char*>(&length), 8);
  return bytes + header + data;
}

std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

using tscope::testing::errorMessage;
using tscope::testing::expectMentions;

void readEverything(const SafetensorsFile& file) {
  for (const auto& [name, info] : file.tensors()) {
    std::vector<float> values = file.readFloat(name);
    ASSERT_EQ(values.size(), info.numel()) << name;
  }
}

class SafetensorsTest : public ::testing::Test {
 protected:
  // Writes a file with the given header and data, and returns the error that opening it throws.
  std::string openError(const std::string& header, const std::string& data = std::string(64, '\0')) {
    writeBytes(path_, rawSafetensors(header, data));
    return errorMessage([&] { readEverything(SafetensorsFile(path_)); });
  }
  ScratchDir dir_;
  std::string path_ = dir_.file("model.safetensors");
};

TEST_F(SafetensorsTest, RoundTripIsBitIdenticalAndKeepsOrderAndMetadata) {
  std::vector<float> zeta = {
      1.5f, -0.0f, std::numeric_limits<float>::infinity(), 0x1p-149f, std::bit_cast<float>(0x7fc12345u) /* NaN with a payload */, -3.25e30f};
  std::vector<float> alpha(3 * 4 * 5);
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  for (float& value : alpha) value = normal(random);
  const float scalar = 42.0f;
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "line \"quoted\" ünï"}};
  tscope::writeSafetensors(
      path_, {{"zeta", {2, 3}, zeta.data()}, {"alpha", {3, 4, 5}, alpha.data()}, {"empty", {0, 7}, nullptr}, {"scalar", {}, &scalar}}, metadata);

  const std::string bytes = readBytes(path_);
  uint64_t headerLength = 0;
  std::memcpy(&headerLength, bytes.data(), 8);
  EXPECT_EQ(headerLength % 8, 0u) << "header is padded to 8 bytes";
  EXPECT_EQ(bytes.size(), 8 + headerLength + (6 + 60 + 1) * 4);

  SafetensorsFile file(path_);
  EXPECT_EQ(file.metadata(), metadata);
  ASSERT_EQ(file.tensors().size(), 4u);
  EXPECT_EQ(file.info("zeta").begin, 0u) << "offsets follow the order given, not the name order";
  EXPECT_EQ(file.info("alpha").begin, file.info("zeta").end);
  EXPECT_EQ(file.info("alpha").shape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(file.info("empty").numel(), 0u);
  EXPECT_EQ(file.info("scalar").numel(), 1u);
  EXPECT_EQ(file.info("zeta").dtype, tscope::DType::F32);

  const std::vector<float> zetaBack = file.readFloat("zeta"), alphaBack = file.readFloat("alpha");
  ASSERT_EQ(zetaBack.size(), zeta.size());
  ASSERT_EQ(alphaBack.size(), alpha.size());
  EXPECT_EQ(std::memcmp(zetaBack.data(), zeta.data(), zeta.size() * 4), 0) << "zeta differs bitwise";
  EXPECT_EQ(std::memcmp(alphaBack.data(), alpha.data(), alpha.size() * 4), 0) << "alpha differs bitwise";
  EXPECT_EQ(file.readFloat("scalar"), std::vector<float>{42.0f});
  EXPECT_TRUE(file.readFloat("empty").empty());
}

TEST_F(SafetensorsTest, ReadFloatChecksTheExpectedShape) {
  std::vector<float> weight(6, 1.0f);
  tscope::writeSafetensors(path_, {{"h.0.attn.c_attn.weight", {2, 3}, weight.data()}});
  SafetensorsFile file(path_);
  std::vector<float> out(6);
  EXPECT_NO_THROW(file.readFloat("h.0.attn.c_attn.weight", out.data(), {2, 3}));
  EXPECT_EQ(errorMessage([&] {
              file.readFloat("h.0.attn.c_attn.weight", out.data(), {3, 2});
            }),
            path_ + ": tensor 'h.0.attn.c_attn.weight' has shape [2, 3] but the config needs [3, 2]");
}

TEST_F(SafetensorsTest, MissingTensorIsNamed) {
  tscope::writeSafetensors(path_, {});
  SafetensorsFile file(path_);
  EXPECT_FALSE(file.has("wte.weight"));
  expectMentions(errorMessage([&] { file.info("wte.weight"); }), {path_, "missing tensor 'wte.weight'"});
  expectMentions(errorMessage([&] { file.readFloat("wte.weight"); }), {"missing tensor 'wte.weight'"});
}

// Expected floats worked out by hand from the IEEE half layout (1 sign, 5 exponent, 10 mantissa bits).
const std::vector<std::pair<uint16_t, float>> kHalfCases = {
    {0x0000, 0.0f},
    {0x8000, -0.0f},
    {0x3c00, 1.0f},
    {0xc000, -2.0f},
    {0x3555, 0.333251953125f},
    {0x7bff, 65504.0f},         // largest finite half
    {0x0400, 0x1p-14f},         // smallest normal
    {0x0001, 0x1p-24f},         // smallest subnormal
    {0x03ff, 1023 * 0x1p-24f},  // largest subnormal
    {0x8001, -0x1p-24f},
    {0x7c00, std::numeric_limits<float>::infinity()},
    {0xfc00, -std::numeric_limits<float>::infinity()},
    {0x7e00, std::bit_cast<float>(0x7fc00000u)},  // quiet NaN
    {0x7c01, std::bit_cast<float>(0x7f802000u)},  // NaN payload kept
};
// bfloat16 is the top half of a float32.
const std::vector<std::pair<uint16_t, float>> kBfloat16Cases = {
    {0x3f80, 1.0f},
    {0xc040, -3.0f},
    {0x4049, 3.140625f},
    {0x8000, -0.0f},
    {0x0001, 0x1p-133f},
    {0x7f7f, 0x1.fep127f},
    {0x7f80, std::numeric_limits<float>::infinity()},
    {0xff80, -std::numeric_limits<float>::infinity()},
    {0x7fc0, std::bit_cast<float>(0x7fc00000u)},
};

void checkSixteenBitTensor(const std::string& path, const std::string& dtype, const std::vector<std::pair<uint16_t, float>>& cases) {
  // One padding byte before the tensor and an odd header length leave the data unaligned on purpose.
  std::string data(1, '\x7f');
  for (const auto& [bits, expected] : cases) data.append(reinterpret_cast<const char*>(&bits), 2);
  const std::string offsets = "[1," + std::to_string(data.size()) + "]";
  const std::string header = "{\"t\":" + entry(dtype, "[" + std::to_string(cases.size()) + "]", offsets) + "} ";
  writeBytes(path, rawSafetensors(header.size() % 2 ? header : header + " ", data));
  SafetensorsFile file(path);
  const std::vector<float> values = file.readFloat("t");
  ASSERT_EQ(values.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(values[i]), std::bit_cast<uint32_t>(cases[i].second))
        << dtype << " bits 0x" << std::hex << cases[i].first << " read as " << values[i] << ", expected " << cases[i].second;
}

TEST_F(SafetensorsTest, F16TensorConvertsToHandComputedFloats) { checkSixteenBitTensor(path_, "F16", kHalfCases); }
TEST_F(SafetensorsTest, BF16TensorConvertsToHandComputedFloats) { checkSixteenBitTensor(path_, "BF16", kBfloat16Cases); }

TEST(HalfConversion, AllHalfValuesMatchTheArithmeticDefinition) {
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const int sign = bits >> 15 ? -1 : 1, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
    const float got = tscope::halfToFloat(static_cast<uint16_t>(bits));
    bool ok;
    if (exponent == 31 && mantissa != 0)
      ok = std::isnan(got) && std::bit_cast<uint32_t>(got) == (((bits & 0x8000u) << 16) | 0x7f800000u | (mantissa << 13));
    else if (exponent == 31) ok = got == sign * std::numeric_limits<float>::infinity();
    else if (exponent == 0) ok = got == sign * std::ldexp(static_cast<double>(mantissa), -24) && std::signbit(got) == (sign < 0);
    else ok = got == sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
    if (!ok && ++mismatches <= 5) ADD_FAILURE() << "half 0x" << std::hex << bits << " gave " << got;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(HalfConversion, AllBfloat16ValuesMatchTheArithmeticDefinition) {
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const int sign = bits >> 15 ? -1 : 1, exponent = (bits >> 7) & 0xff, mantissa = bits & 0x7f;
    const float got = tscope::bfloat16ToFloat(static_cast<uint16_t>(bits));
    bool ok;
    if (exponent == 255) ok = mantissa ? std::isnan(got) : got == sign * std::numeric_limits<float>::infinity();
    else if (exponent == 0) ok = got == sign * std::ldexp(static_cast<double>(mantissa), -133) && std::signbit(got) == (sign < 0);
    else ok = got == sign * std::ldexp(1.0 + mantissa / 128.0, exponent - 127);
    if (!ok && ++mismatches <= 5) ADD_FAILURE() << "bfloat16 0x" << std::hex << bits << " gave " << got;
  }
  EXPECT_EQ(mismatches, 0);
}

// ---- corrupt files: one test per problem ---------------------------------------------------------

TEST_F(SafetensorsTest, RejectsFileShorterThanEightBytes) {
  writeBytes(path_, std::string("\x10\0\0\0\0", 5));
  expectMentions(errorMessage([&] { SafetensorsFile file(path_); }), {path_, "truncated", "5 bytes"});
  writeBytes(path_, "");
  expectMentions(errorMessage([&] { SafetensorsFile file(path_); }), {"truncated", "0 bytes"});
}

TEST_F(SafetensorsTest, RejectsHeaderLengthPastEndOfFile) {
  std::string bytes(8, '\0');
  bytes[0] = 64;  // header length 64, but only "{}" follows
  writeBytes(path_, bytes + "{}");
  expectMentions(errorMessage([&] { SafetensorsFile file(path_); }), {path_, "header length 64", "past the end"});
}

TEST_F(SafetensorsTest, RejectsAbsurdHeaderLength) {
  writeBytes(path_, std::string(8, '\xff') + "{}");  // 2^64 - 1: 8 + length would wrap around
  expectMentions(errorMessage([&] { SafetensorsFile file(path_); }), {"header length 18446744073709551615", "absurdly large"});
}

TEST_F(SafetensorsTest, RejectsMalformedJson) {
  expectMentions(openError(R"({"w": {"dtype": "F32", )"), {path_, "malformed JSON"});
  expectMentions(openError("{\"w\": \xff}"), {"malformed JSON"});  // not UTF-8
}

TEST_F(SafetensorsTest, RejectsHeaderThatIsNotAnObject) { expectMentions(openError("[1, 2]"), {"header is not a JSON object"}); }

TEST_F(SafetensorsTest, RejectsEntryThatIsNotAnObject) { expectMentions(openError(R"({"w": [0, 4]})"), {"tensor 'w'", "not a JSON object"}); }

TEST_F(SafetensorsTest, RejectsEntryWithoutDtype) {
  expectMentions(openError(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})"), {"tensor 'w'", "no 'dtype'"});
}

TEST_F(SafetensorsTest, RejectsEntryWithoutShape) {
  expectMentions(openError(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})"), {"tensor 'w'", "no 'shape'"});
}

TEST_F(SafetensorsTest, RejectsEntryWithoutDataOffsets) {
  expectMentions(openError(R"({"w": {"dtype": "F32", "shape": [1]}})"), {"tensor 'w'", "no 'data_offsets'"});
}

TEST_F(SafetensorsTest, RejectsFieldsOfTheWrongJsonType) {
  expectMentions(openError(R"({"w": {"dtype": 32, "shape": [1], "data_offsets": [0, 4]}})"), {"tensor 'w'", "'dtype' is not a string"});
  expectMentions(openError("{\"w\":" + entry("F32", "\"1\"", "[0,4]") + "}"), {"tensor 'w'", "'shape' is not an array"});
  expectMentions(openError("{\"w\":" + entry("F32", "[1.5]", "[0,4]") + "}"), {"tensor 'w'", "1.5 is not an integer"});
  expectMentions(openError("{\"w\":" + entry("F32", "[1]", "[4]") + "}"), {"tensor 'w'", "'data_offsets' must be [begin, end]"});
  expectMentions(openError("{\"w\":" + entry("F32", "[1]", "\"0-4\"") + "}"), {"tensor 'w'", "'data_offsets'"});
  expectMentions(openError("{\"w\":" + entry("F32", "[1]", "[-4,0]") + "}"), {"tensor 'w'", "non-negative integers"});
}

TEST_F(SafetensorsTest, RejectsUnsupportedDtypesByName) {
  for (const std::string dtype : {"I64", "F64", "U8", "BOOL"})
    expectMentions(openError("{\"w\":" + entry(dtype, "[1]", "[0,8]") + "}"), {"tensor 'w'", "unsupported dtype '" + dtype + "'"});
  expectMentions(openError("{\"w\":" + entry("Q7", "[1]", "[0,4]") + "}"), {"tensor 'w'", "unknown dtype 'Q7'"});
}

TEST_F(SafetensorsTest, RejectsNegativeDimension) {
  expectMentions(openError("{\"w\":" + entry("F32", "[-2,3]", "[0,24]") + "}"), {"tensor 'w'", "negative dimension -2"});
}

TEST_F(SafetensorsTest, RejectsShapeWhoseSizeOverflows) {
  expectMentions(openError("{\"w\":" + entry("F32", "[4294967296,4294967296]", "[0,4]") + "}"), {"tensor 'w'", "overflows"});
  expectMentions(openError("{\"w\":" + entry("F32", "[18446744073709551615]", "[0,4]") + "}"), {"tensor 'w'", "overflows"});
}

TEST_F(SafetensorsTest, RejectsOffsetsWithBeginAfterEnd) {
  expectMentions(openError("{\"w\":" + entry("F32", "[1]", "[8,4]") + "}"), {"tensor 'w'", "begin after end"});
}

TEST_F(SafetensorsTest, RejectsOffsetsOutsideTheDataArea) {
  expectMentions(openError("{\"w\":" + entry("F32", "[4]", "[0,16]") + "}", std::string(8, '\0')),
                 {"tensor 'w'", "data_offsets [0, 16]", "past the end of the data area (8 bytes)"});
}

TEST_F(SafetensorsTest, RejectsOverlappingTensors) {
  const std::string message = openError("{\"a\":" + entry("F32", "[2]", "[0,8]") + ",\"b\":" + entry("F32", "[2]", "[4,12]") + "}");
  expectMentions(message, {"tensor 'b'", "overlaps tensor 'a'"});
}

TEST_F(SafetensorsTest, EmptyTensorsDoNotCountAsOverlapping) {
  const std::string header = "{\"a\":" + entry("F32", "[2]", "[0,8]") + ",\"e\":" + entry("F32", "[0]", "[4,4]") + "}";
  writeBytes(path_, rawSafetensors(header, std::string(8, '\0')));
  EXPECT_NO_THROW(readEverything(SafetensorsFile(path_)));
}

TEST_F(SafetensorsTest, RejectsByteLengthThatDisagreesWithShape) {
  expectMentions(openError("{\"w\":" + entry("BF16", "[3]", "[0,8]") + "}"), {"tensor 'w'", "shape [3] of BF16 needs 6 bytes", "span 8"});
}

TEST_F(SafetensorsTest, RejectsDuplicateTensorNames) {
  expectMentions(openError("{\"w\":" + entry("F32", "[1]", "[0,4]") + ",\"w\":" + entry("F32", "[1]", "[4,8]") + "}"), {"duplicate tensor name 'w'"});
}

TEST_F(SafetensorsTest, RejectsDuplicateKeysInsideAnEntry) {
  expectMentions(openError(R"({"w": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}})"), {"duplicate key 'dtype'", "'w'"});
}

TEST_F(SafetensorsTest, RejectsMetadataThatIsNotAStringMap) {
  expectMentions(openError(R"({"__metadata__": {"format": 1}})"), {"'__metadata__' value of 'format' is not a string"});
  expectMentions(openError(R"({"__metadata__": "pt"})"), {"'__metadata__' is not a JSON object"});
}

TEST_F(SafetensorsTest, RejectsDeeplyNestedJson) {
  expectMentions(openError("{\"w\":" + entry("F32", "[[[[1]]]]", "[0,4]") + "}"), {"nested deeper"});
}

TEST_F(SafetensorsTest, ControlCharactersInNamesStayOnOneLine) {
  expectMentions(openError("{\"bad\\nname\":" + entry("I64", "[1]", "[0,8]") + "}"), {"'bad\\x0aname'"});
}

TEST_F(SafetensorsTest, MissingFileAndDirectoryAreReported) {
  expectMentions(errorMessage([&] { SafetensorsFile file(dir_.file("nope.safetensors")); }), {"nope.safetensors", "cannot open", "No such file"});
  fs::create_directory(dir_.file("folder"));
  expectMentions(errorMessage([&] { SafetensorsFile file(dir_.file("folder")); }), {"not a regular file"});
}

// Flips, overwrites and cuts bytes of a valid file at seeded positions: every outcome must be a
// successful read or a tscope::Error; ASan and UBSan builds also check that nothing reads out of bounds.
TEST_F(SafetensorsTest, FuzzedFilesLoadOrThrowButNeverCrash) {
  std::string data;
  for (int i = 0; i < 40; ++i) data += static_cast<char>(i * 37 + 11);
  const std::string header = R"({"__metadata__":{"format":"pt"},"a":)" + entry("F32", "[2,2]", "[0,16]") +
                             ",\"b\":" + entry("F16", "[3]", "[16,22]") + ",\"c\":" + entry("BF16", "[1,9]", "[22,40]") + "}";
  const std::string valid = rawSafetensors(header, data);
  const size_t headerEnd = 8 + header.size();
  std::mt19937 random(20240531);
  auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = valid;
    std::string mutation;
    switch (trial % 5) {
      case 0: {  // flip a bit, mostly in the length and header
        const size_t at = below(trial % 10 == 0 ? bytes.size() : headerEnd);
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(8)));
        mutation = "flip bit at " + std::to_string(at);
        break;
      }
      case 1: {  // overwrite a byte with anything
        const size_t at = below(bytes.size());
        bytes[at] = static_cast<char>(below(256));
        mutation = "overwrite byte " + std::to_string(at);
        break;
      }
      case 2:  // cut the file short
        bytes.resize(below(bytes.size()));
        mutation = "truncate to " + std::to_string(bytes.size());
        break;
      case 3: {  // change a digit in the header: shapes and offsets that still parse
        size_t at = 8 + below(header.size());
        while (at < headerEnd && !std::isdigit(static_cast<unsigned char>(bytes[at]))) ++at;
        if (at < headerEnd) bytes[at] = static_cast<char>('0' + below(10));
        mutation = "digit at " + std::to_string(at);
        break;
      }
      default: {  // several random bytes at once
        for (int k = 0; k < 4; ++k) bytes[below(headerEnd)] = static_cast<char>(below(256));
        mutation = "four bytes";
        break;
      }
    }
    writeBytes(path_, bytes);
    try {
      readEverything(SafetensorsFile(path_));
      ++loaded;
    } catch (const tscope::Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << " (" << mutation << ") threw a non-tscope exception: " << e.what();
    }
  }
  EXPECT_GT(loaded, 100) << "some mutations (data bytes, harmless digits) must still load";
  EXPECT_GT(rejected, 1000) << "most header mutations must be rejected";
}

// ---- the atomic writer ---------------------------------------------------------------------------

TEST_F(SafetensorsTest, WriterReplacesTheFileAndLeavesNoTemporary) {
  const float one = 1.0f, two = 2.0f;
  tscope::writeSafetensors(path_, {{"x", {1}, &one}});
  tscope::writeSafetensors(path_, {{"x", {1}, &two}});
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  EXPECT_EQ(SafetensorsFile(path_).readFloat("x"), std::vector<float>{2.0f});
}

TEST_F(SafetensorsTest, WriterRejectsNullDataAndKeepsTheOldFile) {
  const float one = 1.0f;
  tscope::writeSafetensors(path_, {{"x", {1}, &one}});
  const std::string before = readBytes(path_);
  expectMentions(errorMessage([&] {
                   tscope::writeSafetensors(path_, {{"x", {1}, &one}, {"y", {4}, nullptr}});
                 }),
                 {"tensor 'y'", "null data pointer"});
  EXPECT_EQ(readBytes(path_), before);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(SafetensorsTest, WriterRejectsDuplicateAndReservedNamesAndBadShapes) {
  const float values[4] = {1, 2, 3, 4};
  tscope::writeSafetensors(path_, {{"x", {1}, values}});
  const std::string before = readBytes(path_);
  expectMentions(errorMessage([&] { tscope::writeSafetensors(path_, {{"x", {1}, values}, {"x", {1}, values}}); }), {"duplicate tensor name 'x'"});
  expectMentions(errorMessage([&] { tscope::writeSafetensors(path_, {{"__metadata__", {1}, values}}); }), {"'__metadata__' cannot be a tensor name"});
  expectMentions(errorMessage([&] { tscope::writeSafetensors(path_, {{"x", {-1, 4}, values}}); }), {"tensor 'x'", "negative dimension"});
  EXPECT_EQ(readBytes(path_), before);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(SafetensorsTest, WriterFailingToRenameRemovesTheTemporary) {
  const std::string target = dir_.file("occupied");  // a non-empty directory cannot be renamed over
  fs::create_directory(target);
  writeBytes(target + "/keep", "x");
  const float one = 1.0f;
  expectMentions(errorMessage([&] { tscope::writeSafetensors(target, {{"x", {1}, &one}}); }), {target, "cannot rename"});
  EXPECT_FALSE(fs::exists(target + ".tmp"));
  EXPECT_EQ(readBytes(target + "/keep"), "x");
}

TEST_F(SafetensorsTest, WriterIntoAnUnusableDirectoryThrowsAndLeavesNothing) {
  writeBytes(dir_.file("plain"), "x");  // a file used as a directory fails even for root
  const float one = 1.0f;
  const std::string target = dir_.file("plain") + "/model.safetensors";
  expectMentions(errorMessage([&] { tscope::writeSafetensors(target, {{"x", {1}, &one}}); }), {target + ".tmp", "cannot create", "Not a directory"});
}

TEST_F(SafetensorsTest, WriterIntoAReadOnlyDirectoryThrowsAndKeepsTheOldFile) {
  const std::string folder = dir_.file("readonly"), target = folder + "/model.safetensors";
  fs::create_directory(folder);
  const float one = 1.0f, two = 2.0f;
  tscope::writeSafetensors(target, {{"x", {1}, &one}});
  const std::string before = readBytes(target);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  const bool permissionsBind = !std::ofstream(folder + "/probe").good();
  std::string message;
  if (permissionsBind) message = errorMessage([&] { tscope::writeSafetensors(target, {{"x", {1}, &two}}); });
  fs::permissions(folder, fs::perms::owner_all);  // so that the scratch directory can be removed
  if (!permissionsBind) GTEST_SKIP() << "running as root: permissions do not stop writes";
  expectMentions(message, {"cannot create", "Permission denied"});
  EXPECT_EQ(readBytes(target), before);
  EXPECT_FALSE(fs::exists(target + ".tmp"));
}

}  // namespace

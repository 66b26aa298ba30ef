// Tests for model/npy: the header layout numpy's format docs prescribe (numpy/lib/format.py),
// bit-exact round trips, version 2.0 and numpy-style headers, one test per rejected input, a
// seeded fuzz of byte flips and truncations, and writeFileAtomically's failure behaviour.
#include "model/io/npy.h"

#include <gtest/gtest.h>

#include "tests/test_files.h"
#include <unistd.h>

#include <bit>
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

using tscope::testing::readBytes;
using tscope::testing::writeBytes;

// A scratch directory for this file's tests.
using NpyScratchDir = tscope::testing::ScratchDir;

// A hand-made .npy file: magic, version major.0, header length (2 bytes for 1.0, else 4), dict, data.
std::string npyFile(int major, const std::string& dict, const std::string& data) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  const uint32_t length = static_cast<uint32_t>(dict.size());
  bytes.append(reinterpret_cast<const char*>(&length), major == 1 ? 2 : 4);
  return bytes + dict + data;
}

std::string floatBytes(std::initializer_list<float> values) {
  std::string out;
  for (float value : values) out.append(reinterpret_cast<const char*>(&value), 4);
  return out;
}

using tscope::testing::errorMessage;
using tscope::testing::expectMentions;

class NpyTest : public ::testing::Test {
 protected:
  std::string readError(const std::string& bytes) {
    writeBytes(path_, bytes);
    return errorMessage([&] { tscope::readNpy(path_); });
  }
  NpyScratchDir dir_;
  std::string path_ = dir_.file("array.npy");
};

TEST_F(NpyTest, HeaderLayoutFollowsTheNpyFormat) {
  const std::vector<float> values(12, 0.5f);
  tscope::writeNpy(path_, values.data(), {3, 4});
  const std::string bytes = readBytes(path_);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t headerLength = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + headerLength) % 64, 0u) << "data must start on a 64-byte boundary";
  const std::string header = bytes.substr(10, headerLength);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), header.size() - 1) << "padding is spaces";
  EXPECT_EQ(bytes.size(), 10 + headerLength + 12 * 4);
}

TEST_F(NpyTest, FloatRoundTripIsBitIdentical) {
  const std::vector<float> values = {1.0f, -0.0f, std::numeric_limits<float>::infinity(), std::bit_cast<float>(0x7fc0beefu), 0x1p-149f, 3.4e38f};
  tscope::writeNpy(path_, values.data(), {2, 3});
  const tscope::NpyArray array = tscope::readNpy(path_);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(array.data.size(), values.size());
  EXPECT_EQ(std::memcmp(array.data.data(), values.data(), values.size() * 4), 0) << "values differ bitwise";
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

TEST_F(NpyTest, Int32ArraysReadBackAsFloats) {
  const std::vector<int32_t> tokens = {0, -1, 50256, 1 << 24, -(1 << 24)};
  tscope::writeNpy(path_, tokens.data(), {5});
  EXPECT_NE(readBytes(path_).find("'descr': '<i4'"), std::string::npos);
  const tscope::NpyArray array = tscope::readNpy(path_);
  EXPECT_EQ(array.shape, std::vector<int64_t>{5});
  EXPECT_EQ(array.data, (std::vector<float>{0.0f, -1.0f, 50256.0f, 16777216.0f, -16777216.0f}));
}

TEST_F(NpyTest, OneDimensionalScalarAndEmptyShapes) {
  const float scalar = 7.0f;
  tscope::writeNpy(path_, &scalar, {});
  EXPECT_NE(readBytes(path_).find("'shape': (), }"), std::string::npos);
  EXPECT_EQ(tscope::readNpy(path_).data, std::vector<float>{7.0f});

  tscope::writeNpy(path_, &scalar, {1});
  EXPECT_NE(readBytes(path_).find("'shape': (1,), }"), std::string::npos) << "a 1-tuple needs its comma";
  EXPECT_EQ(tscope::readNpy(path_).shape, std::vector<int64_t>{1});

  tscope::writeNpy(path_, static_cast<const float*>(nullptr), {0, 3});
  const tscope::NpyArray empty = tscope::readNpy(path_);
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty.data.empty());
}

TEST_F(NpyTest, ReadsVersion2Headers) {
  writeBytes(path_, npyFile(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", floatBytes({1.5f, -2.0f})));
  const tscope::NpyArray array = tscope::readNpy(path_);
  EXPECT_EQ(array.shape, std::vector<int64_t>{2});
  EXPECT_EQ(array.data, (std::vector<float>{1.5f, -2.0f}));
}

TEST_F(NpyTest, ReadsNumpyStyleHeadersWithOtherKeyOrderAndGrowthPadding) {
  // Newer numpy leaves extra spaces so the shape can grow in place; old files may say 3L.
  const std::string dict = "{\"shape\": (1L, 2), 'fortran_order': False, 'descr': '<f4'}" + std::string(40, ' ') + "\n";
  writeBytes(path_, npyFile(1, dict, floatBytes({4.0f, 5.0f})));
  const tscope::NpyArray array = tscope::readNpy(path_);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(array.data, (std::vector<float>{4.0f, 5.0f}));
}

// ---- rejected inputs -----------------------------------------------------------------------------

const std::string kDict34 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n";

TEST_F(NpyTest, RejectsMissingFileAndEmptyFile) {
  expectMentions(errorMessage([&] { tscope::readNpy(dir_.file("absent.npy")); }), {"absent.npy", "No such file"});
  expectMentions(readError(""), {path_, "not a .npy file"});
}

TEST_F(NpyTest, RejectsBadMagic) { expectMentions(readError("\x93NUMPZ\x01\x00" + std::string(100, ' ')), {path_, "magic"}); }

TEST_F(NpyTest, RejectsUnknownVersion) {
  std::string bytes = npyFile(1, kDict34, std::string(48, '\0'));
  bytes[6] = 4;
  expectMentions(readError(bytes), {"unsupported .npy format version 4.0"});
}

TEST_F(NpyTest, RejectsUnsupportedDtypes) {
  for (const std::string descr : {"<f8", ">f4", "<i8", "|u1", "<f2"})
    expectMentions(readError(npyFile(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }\n", std::string(8, '\0'))),
                   {"unsupported dtype '" + descr + "'"});
}

TEST_F(NpyTest, RejectsFortranOrder) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n";
  expectMentions(readError(npyFile(1, dict, std::string(16, '\0'))), {"Fortran-order"});
}

TEST_F(NpyTest, RejectsTruncatedData) {
  expectMentions(readError(npyFile(1, kDict34, std::string(47, '\0'))), {"truncated", "(3, 4) needs 48 data bytes but the file has 47"});
}

TEST_F(NpyTest, RejectsTrailingData) { expectMentions(readError(npyFile(1, kDict34, std::string(52, '\0'))), {"trailing bytes", "the file has 52"}); }

TEST_F(NpyTest, RejectsHeaderLengthPastEnd) {
  expectMentions(readError(npyFile(1, kDict34, "").substr(0, 30)), {"truncated", "past the end"});
  expectMentions(readError(std::string("\x93NUMPY\x02\x00\x01", 9)), {"truncated", "header length"});
}

TEST_F(NpyTest, RejectsMalformedHeaders) {
  for (const std::string dict :
       {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), \n",  // no '}'
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 4), }\n", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, -4), }\n",
        "{'descr': '<f4 , 'fortran_order': False, 'shape': (3, 4), }\n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } extra\n",
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n"})
    expectMentions(readError(npyFile(1, dict, std::string(48, '\0'))), {"malformed .npy header"});
}

TEST_F(NpyTest, RejectsHeaderWithoutShape) {
  expectMentions(readError(npyFile(1, "{'descr': '<f4', 'fortran_order': False}\n", std::string(4, '\0'))),
                 {"malformed .npy header", "needs 'descr', 'fortran_order' and 'shape'"});
}

TEST_F(NpyTest, RejectsShapeWhoseSizeOverflows) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n";
  expectMentions(readError(npyFile(1, dict, "")), {"overflows"});
}

TEST_F(NpyTest, FuzzedFilesLoadOrThrowButNeverCrash) {
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  tscope::writeNpy(path_, values.data(), {2, 3});
  const std::string valid = readBytes(path_);
  std::mt19937 random(99);
  auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = valid;
    if (trial % 3 == 2) {
      bytes.resize(below(bytes.size()));
    } else {
      const size_t at = below(trial % 3 == 0 ? 72 : bytes.size());  // mostly the header
      bytes[at] = static_cast<char>(trial % 3 == 0 ? bytes[at] ^ (1 << below(8)) : below(256));
    }
    writeBytes(path_, bytes);
    try {
      const tscope::NpyArray array = tscope::readNpy(path_);
      EXPECT_LE(array.data.size() * 4 + 10, bytes.size()) << "trial " << trial;
      ++loaded;
    } catch (const tscope::Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << " threw a non-tscope exception: " << e.what();
    }
  }
  EXPECT_GT(loaded, 100);
  EXPECT_GT(rejected, 500);
}

// ---- atomic writes -------------------------------------------------------------------------------

TEST_F(NpyTest, WriteFileAtomicallyReplacesContentAndLeavesNoTemporary) {
  tscope::writeFileAtomically(path_, "first");
  tscope::writeFileAtomically(path_, "second");
  EXPECT_EQ(readBytes(path_), "second");
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  tscope::writeFileAtomically(path_, "");
  EXPECT_EQ(readBytes(path_), "");
}

TEST_F(NpyTest, WriteFileAtomicallyFailureLeavesNothingBehind) {
  writeBytes(dir_.file("plain"), "x");
  const std::string target = dir_.file("plain") + "/out.npy";  // a file used as a directory fails even for root
  expectMentions(errorMessage([&] { tscope::writeFileAtomically(target, "data"); }), {target + ".tmp", "Not a directory"});

  const std::string occupied = dir_.file("occupied");  // rename over a non-empty directory fails
  fs::create_directory(occupied);
  writeBytes(occupied + "/keep", "k");
  expectMentions(errorMessage([&] { tscope::writeFileAtomically(occupied, "data"); }), {occupied, "cannot rename"});
  EXPECT_FALSE(fs::exists(occupied + ".tmp"));
  EXPECT_EQ(readBytes(occupied + "/keep"), "k");
}

TEST_F(NpyTest, WriteNpyRejectsBadInputAndKeepsTheOldFile) {
  const float values[2] = {1, 2};
  tscope::writeNpy(path_, values, {2});
  const std::string before = readBytes(path_);
  expectMentions(errorMessage([&] { tscope::writeNpy(path_, static_cast<const float*>(nullptr), {2}); }), {"null data"});
  expectMentions(errorMessage([&] { tscope::writeNpy(path_, values, {-2}); }), {"negative dimension -2"});
  EXPECT_EQ(readBytes(path_), before);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

}  // namespace

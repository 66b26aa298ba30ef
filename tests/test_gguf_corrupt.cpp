// The GGUF reader (model/io/gguf.h) on broken and hostile files built byte by byte
// (tests/gguf_bytes.h): each is refused with one tscope::Error line that names the file and the
// problem, without reading past the bytes or allocating for counts the file cannot hold; and the
// typed metadata getters' refusals.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/io/gguf.h"
#include "tests/gguf_bytes.h"
#include "tests/test_files.h"

namespace tscope {
namespace {

using testing::errorMessage;
using testing::expectMentions;
using testing::GgufBytes;
using testing::ggufFile;
using testing::ggufKv;
using testing::ggufKvString;
using testing::ggufKvU32;
using testing::GgufSpec;
using testing::validGgufSpec;

GgufFile parse(const std::string& bytes) {
  // A copy of exactly `bytes` on the heap: AddressSanitizer sees any read past its end.
  auto copy = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  return GgufFile::fromBytes("model.gguf", copy, copy->data(), copy->size());
}

// The refusal of `bytes`: one line starting with the file's name and holding every part.
void expectRefused(const std::string& bytes, std::initializer_list<std::string> parts) {
  const std::string message = errorMessage([&] { parse(bytes); });
  EXPECT_EQ(message.rfind("model.gguf: ", 0), 0u) << message;
  expectMentions(message, parts);
}

TEST(Gguf, ParsesTheHandBuiltValidFile) {
  const GgufFile file = parse(ggufFile(validGgufSpec()));
  EXPECT_EQ(file.architecture(), "llama");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensor("b").bytes, 16u);
  EXPECT_EQ(file.tensorData(file.tensor("b"))[0], 32);  // data byte 32: its offset in the data
}

TEST(Gguf, RefusesEveryTruncation) {
  expectRefused("", {"truncated", "0 bytes", "24-byte GGUF header"});
  expectRefused(std::string("GGUF\x03\0\0\0", 8), {"truncated", "8 bytes"});
  const std::string whole = ggufFile(validGgufSpec());
  for (size_t size = 0; size < whole.size(); ++size) {
    const std::string message = errorMessage([&] { parse(whole.substr(0, size)); });
    ASSERT_NE(message.find("model.gguf: "), std::string::npos) << size;
    ASSERT_EQ(message.find('\n'), std::string::npos) << size;
  }
}

TEST(Gguf, RefusesABadMagic) {
  GgufSpec spec = validGgufSpec();
  spec.magic = "GGML";
  expectRefused(ggufFile(spec), {"not a GGUF file", "71 71 77 76"});
  expectRefused("{\"a\": 1}", {"not a GGUF file"});
}

TEST(Gguf, RefusesVersionsOtherThan2And3) {
  GgufSpec spec = validGgufSpec();
  spec.version = 1;
  expectRefused(ggufFile(spec), {"version 1", "not supported", "versions 2 and 3"});
  spec.version = 4;
  expectRefused(ggufFile(spec), {"version 4 is not supported"});
  spec.version = 0x03000000;  // a big-endian version 3
  expectRefused(ggufFile(spec), {"big-endian"});
}

TEST(Gguf, RefusesCountsTooLargeForTheFile) {
  GgufSpec spec = validGgufSpec();
  spec.kvCount = uint64_t{1} << 40;
  expectRefused(ggufFile(spec), {"metadata_kv_count 1099511627776", "cannot fit"});
  spec = validGgufSpec();
  spec.tensorCount = UINT64_MAX;
  expectRefused(ggufFile(spec), {"tensor_count 18446744073709551615", "cannot fit"});
  spec = validGgufSpec();
  spec.kvs.push_back(ggufKv("big", testing::kArray, GgufBytes().u32(testing::kU32).u64(uint64_t{1} << 60).out));
  expectRefused(ggufFile(spec), {"metadata key big", "1152921504606846976 UINT32 elements cannot fit"});
  spec.kvs.back() = ggufKv("names", testing::kArray, GgufBytes().u32(testing::kString).u64(100).out);  // 100 strings need 800 bytes
  expectRefused(ggufFile(spec), {"metadata key names", "100 STRING elements cannot fit"});
}

TEST(Gguf, RefusesMoreEntriesThanAnyModelFileHas) {
  GgufSpec spec = validGgufSpec();
  for (int i = 0; i < 65536; ++i) spec.kvs.push_back(ggufKv("k" + std::to_string(i), testing::kU8, "\x01"));
  expectRefused(ggufFile(spec), {"metadata_kv_count 65538 is more than tscope reads (65536)"});
  spec = validGgufSpec();
  const uint64_t arrays = (uint64_t{1} << 20) + 1;
  GgufBytes many;
  many.u32(testing::kArray).u64(arrays);
  for (uint64_t i = 0; i < arrays; ++i) many.u32(testing::kU8).u64(0);  // empty arrays of UINT8
  spec.kvs.push_back(ggufKv("many", testing::kArray, many.out));
  expectRefused(ggufFile(spec), {"metadata key many", "more than 1048576 arrays inside arrays"});
}

TEST(Gguf, RefusesAStringLengthPastTheEnd) {
  GgufSpec spec = validGgufSpec();
  spec.kvs[0] = GgufBytes().u64(uint64_t{1} << 50).raw("general.architecture").out;
  expectRefused(ggufFile(spec), {"truncated", "the key of metadata entry 0 of 2", "1125899906842624 bytes long", "past the end"});
  spec = validGgufSpec();
  spec.kvs[0] = ggufKv("general.architecture", testing::kString, GgufBytes().u64(5000).raw("llama").out);
  expectRefused(ggufFile(spec), {"STRING value of metadata key general.architecture", "5000 bytes long", "past the end"});
}

TEST(Gguf, RefusesAnUnalignedOffset) {
  GgufSpec spec = validGgufSpec();
  spec.tensors[1].offset = 36;
  expectRefused(ggufFile(spec), {"tensor b", "offset 36 is not a multiple of the alignment 32"});
}

TEST(Gguf, RefusesATensorPastTheEnd) {
  GgufSpec spec = validGgufSpec();
  spec.data.resize(40);  // "b" needs bytes 32..48
  expectRefused(ggufFile(spec), {"tensor b", "F16 [8], 16 bytes at offset 32", "reaches past the end of the file"});
  spec = validGgufSpec();
  spec.tensors[1].offset = UINT64_MAX - 31;  // aligned, and the data start plus it wraps around 64 bits
  expectRefused(ggufFile(spec), {"tensor b", "reaches past the end"});
}

TEST(Gguf, RefusesOverlappingTensors) {
  GgufSpec spec = validGgufSpec();
  spec.tensors[1].offset = 0;
  expectRefused(ggufFile(spec), {"overlaps", "tensor a", "tensor b"});
}

TEST(Gguf, RefusesAQ4KRowLengthThatIsNotWholeBlocks) {
  GgufSpec spec = validGgufSpec();
  spec.tensors.push_back({"q", {100, 2}, 12, 64});
  spec.data.resize(64 + 288);
  expectRefused(ggufFile(spec), {"tensor q is Q4_K", "rows of 100 values", "block of 256"});
}

TEST(Gguf, RefusesDuplicateKeysAndTensors) {
  GgufSpec spec = validGgufSpec();
  spec.kvs.push_back(ggufKvU32("llama.block_count", 3));
  expectRefused(ggufFile(spec), {"duplicate metadata key llama.block_count", "entries 1 and 2"});
  spec = validGgufSpec();
  spec.tensors[1].name = "a";
  expectRefused(ggufFile(spec), {"duplicate tensor name a"});
}

TEST(Gguf, RefusesABadAlignment) {
  for (const uint32_t alignment : {0u, 48u}) {
    GgufSpec spec = validGgufSpec();
    spec.kvs.push_back(ggufKvU32("general.alignment", alignment));
    expectRefused(ggufFile(spec), {"general.alignment " + std::to_string(alignment) + " is not a power of two"});
  }
  GgufSpec spec = validGgufSpec();
  spec.kvs.push_back(ggufKv("general.alignment", testing::kI32, GgufBytes().u32(64).out));
  expectRefused(ggufFile(spec), {"general.alignment is INT32 64", "UINT32"});
  spec.kvs.back() = ggufKvString("general.alignment", "32");
  expectRefused(ggufFile(spec), {"general.alignment is STRING"});
}

TEST(Gguf, RefusesBadDimensions) {
  GgufSpec spec = validGgufSpec();
  spec.tensors[0].dims = {1, 1, 1, 1, 32};
  expectRefused(ggufFile(spec), {"tensor a has 5 dimensions", "1 to 4"});
  spec.tensors[0].dims = {};
  expectRefused(ggufFile(spec), {"tensor a has 0 dimensions"});
  spec.tensors[0].dims = {uint64_t{1} << 32, uint64_t{1} << 32, 4};
  expectRefused(ggufFile(spec), {"tensor a", "dims [4294967296, 4294967296, 4]", "overflow"});
  spec.tensors[0].dims = {uint64_t{1} << 63};
  expectRefused(ggufFile(spec), {"tensor a", "9223372036854775808", "past 2^63 - 1"});
  spec.tensors[0].dims = {uint64_t{1} << 62};  // fits int64, but its F32 bytes overflow 64 bits
  expectRefused(ggufFile(spec), {"tensor a", "overflow 64-bit byte counts"});
}

TEST(Gguf, RefusesBadValuesAndTypes) {
  GgufSpec spec = validGgufSpec();
  spec.kvs.push_back(ggufKv("x", 13, "\x01"));
  expectRefused(ggufFile(spec), {"metadata key x has unknown value type 13"});
  spec.kvs.back() = ggufKv("flag", testing::kBool, "\x02");
  expectRefused(ggufFile(spec), {"metadata key flag", "BOOL value 2 is neither 0 nor 1"});
  spec.kvs.back() = ggufKv("flags", testing::kArray, GgufBytes().u32(testing::kBool).u64(2).u8(1).u8(7).out);
  expectRefused(ggufFile(spec), {"metadata key flags", "element 1 of a BOOL array is 7"});
  spec.kvs.back() = ggufKv("", testing::kU8, "\x01");
  expectRefused(ggufFile(spec), {"metadata entry 2 of 3 has an empty key"});
  spec = validGgufSpec();
  spec.tensors[1].ggmlType = 99;
  expectRefused(ggufFile(spec), {"tensor b has unknown ggml type 99"});
  spec.tensors[1].ggmlType = 1;
  spec.tensors[1].name = std::string(65, 'n');
  expectRefused(ggufFile(spec), {"the name of tensor info 1 of 2 is 65 bytes long", "at most 64"});
}

TEST(Gguf, RefusesArraysNestedTooDeeply) {
  std::string value = GgufBytes().u32(testing::kU8).u64(0).out;  // the innermost: an empty array of UINT8
  for (int level = 0; level < 9; ++level) value = GgufBytes().u32(testing::kArray).u64(1).raw(value).out;
  GgufSpec spec = validGgufSpec();
  spec.kvs.push_back(ggufKv("deep", testing::kArray, value));  // 10 levels in all
  expectRefused(ggufFile(spec), {"metadata key deep", "nested deeper than 8 levels"});
}

TEST(Gguf, GettersNameTheKeyAndTheType) {
  GgufSpec spec = validGgufSpec();
  spec.kvs.push_back(ggufKv("neg", testing::kI32, GgufBytes().u32(static_cast<uint32_t>(-3)).out));
  spec.kvs.push_back(ggufKv("huge", testing::kU64, GgufBytes().u64(UINT64_MAX).out));
  spec.kvs.push_back(ggufKv("scores", testing::kArray, GgufBytes().u32(testing::kF32).u64(1).put(1.5f).out));
  spec.kvs.push_back(ggufKv("ids", testing::kArray, GgufBytes().u32(testing::kU64).u64(1).u64(UINT64_MAX).out));
  const GgufFile file = parse(ggufFile(spec));
  expectMentions(errorMessage([&] { file.getString("nope"); }), {"model.gguf", "metadata key nope is missing"});
  expectMentions(errorMessage([&] { file.getString("llama.block_count"); }), {"llama.block_count is UINT32, not a STRING"});
  expectMentions(errorMessage([&] { file.getFloat("llama.block_count"); }), {"UINT32, not FLOAT32 or FLOAT64"});
  expectMentions(errorMessage([&] { file.getUint("general.architecture"); }), {"general.architecture is STRING, not an integer"});
  expectMentions(errorMessage([&] { file.getBool("neg"); }), {"neg is INT32, not a BOOL"});
  expectMentions(errorMessage([&] { file.getUint("neg"); }), {"neg is -3, not a non-negative integer"});
  expectMentions(errorMessage([&] { file.getInt("huge"); }), {"huge is 18446744073709551615, past 2^63 - 1"});
  expectMentions(errorMessage([&] { file.stringArray("scores"); }), {"scores is an array of FLOAT32, not of STRING"});
  expectMentions(errorMessage([&] { file.intArray("ids"); }), {"ids: element 0 is past 2^63 - 1"});
  expectMentions(errorMessage([&] { file.floatArray("neg"); }), {"neg is INT32, not an array"});
  EXPECT_EQ(file.getInt("neg"), -3);
  EXPECT_EQ(file.getUint("huge"), UINT64_MAX);
  EXPECT_EQ(file.floatArray("scores"), std::vector<double>{1.5});
  EXPECT_EQ(file.tryUint("nope"), std::nullopt);
  EXPECT_EQ(file.tryUint("llama.block_count"), 2u);
  EXPECT_EQ(file.tryString("general.architecture"), "llama");
  EXPECT_EQ(file.tryBool("nope"), std::nullopt);
  EXPECT_EQ(file.tryFloat("nope"), std::nullopt);
  EXPECT_EQ(file.tryInt("neg"), -3);
  EXPECT_THROW(file.tryUint("general.architecture"), Error);  // present but of another type: not "missing"
}

TEST(Gguf, AcceptsEdgeCasesTheSpecificationAllows) {
  GgufSpec spec;  // no metadata, no tensors: the header alone
  EXPECT_EQ(parse(ggufFile(spec)).tensors().size(), 0u);
  spec = validGgufSpec();
  spec.tensors.push_back({"empty", {0, 3}, 12, 0});  // no bytes: may share an offset
  spec.tensors.push_back({std::string(64, 'n'), {1}, 0, 64});
  spec.data.resize(68);
  spec.kvs.push_back(ggufKvU32("general.alignment", 1));  // 1 is a power of two
  spec.alignment = 1;
  const GgufFile file = parse(ggufFile(spec));
  EXPECT_EQ(file.alignment(), 1u);
  EXPECT_EQ(file.tensor("empty").bytes, 0u);
  EXPECT_EQ(file.tensor("empty").elements(), 0);
  EXPECT_EQ(file.tensor(std::string(64, 'n')).bytes, 4u);
}

}  // namespace
}  // namespace tscope

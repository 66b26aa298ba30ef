// The GGUF reader (model/io/gguf.h) on files written by tests/golden/gguf_writer.py, a writer made
// apart from it from the specification: every metadata value type, arrays (empty, of strings, of
// arrays), versions 2 and 3, alignments 8 and 64, tensors of every type tscope reads with their byte
// sizes and bytes, a type it does not read (listed, refused when read), and the float values of
// F32 / F16 / BF16 tensors. The corrupt files are in tests/test_gguf_corrupt.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/core/half.h"
#include "model/io/gguf.h"
#include "tests/test_files.h"

namespace tscope {
namespace {

using testing::errorMessage;
using testing::expectMentions;

std::string pythonWithNumpy() {
#ifdef TSCOPE_PYTHON_WITH_TORCH
  const std::string configured = TSCOPE_PYTHON_WITH_TORCH;
  if (!configured.empty()) return configured;
#endif
  return "/usr/bin/python3";  // Debian's, which has numpy
}

// The folder of gguf_writer.py's samples, written once per test process.
std::string sample(const std::string& name) {
  static testing::ScratchDir dir("tscope_gguf");
  static const bool written = [] {
    const std::string command = pythonWithNumpy() + " " + TSCOPE_SOURCE_DIR + "/tests/golden/gguf_writer.py " + dir.path().string();
    return std::system(command.c_str()) == 0;
  }();
  EXPECT_TRUE(written) << "tests/golden/gguf_writer.py failed (it needs a python3 with numpy)";
  return dir.file(name);
}

// Byte j of tensor `seed` in the samples: gguf_writer.py's pattern().
bool hasPattern(const uint8_t* bytes, uint64_t size, int seed) {
  for (uint64_t j = 0; j < size; ++j)
    if (bytes[j] != static_cast<uint8_t>((7 * j + seed) % 256)) return false;
  return true;
}

void expectEveryValueType(const GgufFile& file) {
  EXPECT_EQ(file.architecture(), "llama");
  EXPECT_EQ(file.getUint("test.uint8"), 200u);
  EXPECT_EQ(file.getInt("test.int8"), -100);
  EXPECT_EQ(file.getUint("test.uint16"), 60000u);
  EXPECT_EQ(file.getInt("test.int16"), -30000);
  EXPECT_EQ(file.getUint("test.uint32"), 4000000000u);
  EXPECT_EQ(file.getInt("test.uint32"), 4000000000);  // an unsigned value that fits int64
  EXPECT_EQ(file.getInt("test.int32"), -2000000000);
  EXPECT_EQ(file.getFloat("test.float32"), 1.5);
  EXPECT_TRUE(file.getBool("test.bool"));
  EXPECT_EQ(file.getString("test.string"), "caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd");
  EXPECT_EQ(file.getUint("test.uint64"), UINT64_MAX);
  EXPECT_EQ(file.getInt("test.int64"), -(int64_t{1} << 62));
  EXPECT_EQ(file.getFloat("test.float64"), -0.1);
  const std::pair<const char*, GgufValueType> types[] = {
      {"test.uint8", GgufValueType::UInt8},     {"test.int8", GgufValueType::Int8},     {"test.uint16", GgufValueType::UInt16},
      {"test.int16", GgufValueType::Int16},     {"test.uint32", GgufValueType::UInt32}, {"test.int32", GgufValueType::Int32},
      {"test.float32", GgufValueType::Float32}, {"test.bool", GgufValueType::Bool},     {"test.string", GgufValueType::String},
      {"test.uint64", GgufValueType::UInt64},   {"test.int64", GgufValueType::Int64},   {"test.float64", GgufValueType::Float64},
      {"test.nested", GgufValueType::Array}};
  for (const auto& [key, type] : types) EXPECT_EQ(file.value(key).type, type) << key;
}

void expectArrays(const GgufFile& file) {
  const GgufArray* empty = file.value("test.empty_array").array();
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->elementType, GgufValueType::UInt32);
  EXPECT_EQ(empty->count, 0u);
  EXPECT_TRUE(file.intArray("test.empty_array").empty());
  EXPECT_EQ(file.stringArray("tokenizer.ggml.tokens"), (std::vector<std::string>{"<s>", "", "\xc4\xa0the", "caf\xc3\xa9"}));
  EXPECT_EQ(file.floatArray("tokenizer.ggml.scores"), (std::vector<double>{0.0, -1.5, 2.25}));
  EXPECT_EQ(file.intArray("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(file.intArray("test.uint8_array"), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(file.floatArray("test.float64_array"), (std::vector<double>{0.1}));
  const GgufArray& bools = *file.value("test.bool_array").array();
  ASSERT_EQ(bools.count, 3u);
  EXPECT_EQ(bools.boolAt(0), true);
  EXPECT_EQ(bools.boolAt(1), false);
  EXPECT_EQ(bools.boolAt(3), std::nullopt);
  const GgufArray& nested = *file.value("test.nested").array();
  ASSERT_EQ(nested.elementType, GgufValueType::Array);
  ASSERT_EQ(nested.arrays.size(), 3u);
  EXPECT_EQ(nested.arrays[0].elementType, GgufValueType::Int16);
  EXPECT_EQ(nested.arrays[0].integerAt(1), 2);
  EXPECT_EQ(nested.arrays[1].strings, (std::vector<std::string_view>{"x"}));
  EXPECT_EQ(nested.arrays[2].count, 0u);
  EXPECT_EQ(ggufValueText(file.value("test.nested")), "[ARRAY x 3: [INT16 x 2: 1, 2], [STRING x 1: \"x\"], [UINT32 x 0]]");
  EXPECT_EQ(ggufValueText(file.value("tokenizer.ggml.tokens"), 2), "[STRING x 4: \"<s>\", \"\", ...]");
}

TEST(Gguf, ReadsMetadataOfEveryValueType) {
  const GgufFile file = GgufFile::open(sample("values-v3.gguf"));
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  expectEveryValueType(file);
  expectArrays(file);
  const std::vector<std::string> firstKeys(file.metadataKeys().begin(), file.metadataKeys().begin() + 3);
  EXPECT_EQ(firstKeys, (std::vector<std::string>{"general.architecture", "test.uint8", "test.int8"}));  // file order
  EXPECT_EQ(file.metadataKeys().size(), 21u);
  EXPECT_EQ(file.metadataKeys().back(), "test.nested");
  EXPECT_FALSE(file.has("general.alignment"));
}

TEST(Gguf, ReadsVersion2LikeVersion3) {
  const GgufFile v2 = GgufFile::open(sample("values-v2.gguf"));
  const GgufFile v3 = GgufFile::open(sample("values-v3.gguf"));
  EXPECT_EQ(v2.version(), 2u);
  expectEveryValueType(v2);
  expectArrays(v2);
  ASSERT_EQ(v2.metadataKeys(), v3.metadataKeys());
  for (const std::string& key : v2.metadataKeys()) EXPECT_EQ(ggufValueText(v2.value(key), 100), ggufValueText(v3.value(key), 100)) << key;
  ASSERT_EQ(v2.tensors().size(), 1u);
  const GgufTensorInfo& small = v2.tensor("small.weight");
  EXPECT_EQ(small.dims, (std::vector<int64_t>{3, 2}));
  float values[6];
  std::memcpy(values, v2.tensorData(small), sizeof values);
  EXPECT_EQ(values[0], -2.5f);
  EXPECT_EQ(values[5], 2.5f);
}

TEST(Gguf, ReadsTensorsOfEverySupportedTypeWithTheirByteSizes) {
  const GgufFile file = GgufFile::open(sample("types.gguf"));
  struct Expected {
    const char* name;
    uint32_t ggmlType;
    std::optional<WeightType> type;
    std::vector<int64_t> dims;
    uint64_t bytes;
  };
  const Expected expected[] = {{"f32", 0, WeightType::F32, {5, 2}, 40},
                               {"f16", 1, WeightType::F16, {3, 2}, 12},
                               {"bf16", 30, WeightType::BF16, {7, 2}, 28},
                               {"q8_0", 8, WeightType::Q8_0, {64, 2}, 4 * 34},
                               {"q4_0", 2, WeightType::Q4_0, {32, 3}, 3 * 18},
                               {"q4_k", 12, WeightType::Q4_K, {512, 2}, 4 * 144},
                               {"q5_k", 13, WeightType::Q5_K, {256, 2}, 2 * 176},
                               {"q6_k", 14, WeightType::Q6_K, {256, 3}, 3 * 210},
                               {"blk.0.attn_q.weight", 16, std::nullopt, {256, 2}, 2 * 66},
                               {"i32", 26, std::nullopt, {3}, 12}};
  ASSERT_EQ(file.tensors().size(), std::size(expected));
  uint64_t previousEnd = file.dataOffset();
  for (size_t i = 0; i < std::size(expected); ++i) {
    const Expected& want = expected[i];
    const GgufTensorInfo& tensor = file.tensors()[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(tensor.name, want.name);
    EXPECT_EQ(tensor.ggmlType, want.ggmlType);
    EXPECT_EQ(tensor.type, want.type);
    EXPECT_EQ(tensor.dims, want.dims);
    EXPECT_EQ(tensor.bytes, want.bytes);
    EXPECT_EQ(tensor.offset % 32, 0u);
    EXPECT_GE(tensor.offset, previousEnd);
    EXPECT_LT(tensor.offset - previousEnd, 32u);  // packed: only the alignment's padding between tensors
    previousEnd = tensor.offset + tensor.bytes;
    EXPECT_EQ(file.findTensor(want.name), &tensor);
    if (want.type) {
      EXPECT_TRUE(hasPattern(file.tensorData(tensor), tensor.bytes, static_cast<int>(i)));
      EXPECT_EQ(rowBytes(*want.type, want.dims[0]).value() * static_cast<uint64_t>(tensor.elements() / want.dims[0]), want.bytes);
    }
  }
  EXPECT_EQ(previousEnd, file.size());
  EXPECT_EQ(file.findTensor("missing"), nullptr);
  expectMentions(errorMessage([&] { file.tensor("missing"); }), {"types.gguf", "has no tensor missing"});
}

TEST(Gguf, ListsATypeItDoesNotReadButRefusesToReadIt) {
  const std::string bytes = testing::readBytes(sample("types.gguf"));
  const GgufFile file = GgufFile::fromBytes("model.gguf", nullptr, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const GgufTensorInfo& iq = file.tensor("blk.0.attn_q.weight");
  EXPECT_EQ(ggmlTypeName(iq.ggmlType), "IQ2_XXS");
  EXPECT_EQ(errorMessage([&] { file.tensorData(iq); }),
            "model.gguf: tensor blk.0.attn_q.weight is IQ2_XXS, which tscope does not read (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
  expectMentions(errorMessage([&] { file.tensorData(file.tensor("i32")); }), {"model.gguf", "tensor i32 is I32"});
  GgufTensorInfo foreign = file.tensor("f32");
  foreign.offset = bytes.size() - 8;  // not where this file's tensor lies: refused, not read past the end
  expectMentions(errorMessage([&] { file.tensorData(foreign); }), {"model.gguf", "tensor f32", "not inside this file"});
}

TEST(Gguf, HonoursAnAlignmentOtherThan32) {
  for (const uint32_t alignment : {8u, 64u}) {
    SCOPED_TRACE(alignment);
    const GgufFile file = GgufFile::open(sample("aligned-" + std::to_string(alignment) + ".gguf"));
    EXPECT_EQ(file.alignment(), alignment);
    EXPECT_EQ(file.getUint("general.alignment"), alignment);
    EXPECT_EQ(file.dataOffset() % alignment, 0u);
    ASSERT_EQ(file.tensors().size(), 3u);
    const uint64_t expectedBytes[] = {12, 10, 34};
    for (size_t i = 0; i < 3; ++i) {
      const GgufTensorInfo& tensor = file.tensors()[i];
      EXPECT_EQ(tensor.offset % alignment, 0u) << tensor.name;
      EXPECT_EQ(tensor.bytes, expectedBytes[i]);
      EXPECT_TRUE(hasPattern(file.tensorData(tensor), tensor.bytes, static_cast<int>(i) + 1)) << tensor.name;
    }
    // 12 bytes padded to the alignment, then 10: where "b" and "c" start depends on it.
    EXPECT_EQ(file.tensors()[1].offset - file.tensors()[0].offset, alignment == 8 ? 16u : 64u);
  }
}

TEST(Gguf, ReadsFloatTensorsAsTheWriterStoredThem) {
  const GgufFile file = GgufFile::open(sample("floats.gguf"));
  const float matrix[6] = {1.0f, -2.0f, 0.5f, 3.25f, 65504.0f, -0.0f};  // numpy (2, 3): dims [3, 2], row-major bytes
  const GgufTensorInfo& f32 = file.tensor("m.f32");
  EXPECT_EQ(f32.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::memcmp(file.tensorData(f32), matrix, sizeof matrix), 0);
  const GgufTensorInfo& f16 = file.tensor("m.f16");
  const GgufTensorInfo& bf16 = file.tensor("m.bf16");
  for (int i = 0; i < 6; ++i) {
    uint16_t half = 0, brain = 0;
    std::memcpy(&half, file.tensorData(f16) + 2 * i, 2);
    std::memcpy(&brain, file.tensorData(bf16) + 2 * i, 2);
    EXPECT_EQ(halfToFloat(half), matrix[i]) << i;
    EXPECT_EQ(bfloat16ToFloat(brain), i == 4 ? 65536.0f : matrix[i]) << i;  // 65504 rounds to BF16's 65536
  }
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
}

TEST(Gguf, MapsGgmlTypesOntoWeightTypes) {
  for (const WeightType type : kAllWeightTypes) {
    const uint32_t id = ggmlTypeOf(type);
    EXPECT_EQ(weightTypeOfGgml(id), type);
    EXPECT_EQ(ggmlTypeName(id), weightTypeInfo(type).name);
    EXPECT_EQ(ggmlTypeInfo(id)->blockBytes, static_cast<uint32_t>(weightTypeInfo(type).blockBytes));
  }
  EXPECT_EQ(ggmlTypeOf(WeightType::BF16), 30u);
  EXPECT_EQ(ggmlTypeOf(WeightType::Q6_K), 14u);
  EXPECT_EQ(ggmlTypeName(16), "IQ2_XXS");
  EXPECT_EQ(ggmlTypeName(23), "IQ4_XS");
  EXPECT_EQ(ggmlTypeInfo(23)->blockBytes, 136u);
  EXPECT_EQ(ggmlTypeName(4), "ggml type 4");     // Q4_2, removed
  EXPECT_EQ(weightTypeOfGgml(3), std::nullopt);  // Q4_1
  EXPECT_EQ(weightTypeOfGgml(99), std::nullopt);
  EXPECT_EQ(readableGgmlTypes(), "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K");
}

TEST(Gguf, LooksLikeGgufReadsTheMagicBytes) {
  EXPECT_TRUE(looksLikeGguf(sample("types.gguf")));
  testing::ScratchDir dir;
  testing::writeBytes(dir.file("model.safetensors"), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  testing::writeBytes(dir.file("short"), "GG");
  EXPECT_FALSE(looksLikeGguf(dir.file("model.safetensors")));
  EXPECT_FALSE(looksLikeGguf(dir.file("short")));
  EXPECT_FALSE(looksLikeGguf(dir.file("missing")));
  EXPECT_FALSE(looksLikeGguf(dir.path().string()));
  expectMentions(errorMessage([&] { GgufFile::open(dir.path().string()); }), {dir.path().string(), "directory"});
  expectMentions(errorMessage([&] { GgufFile::open(dir.file("missing")); }), {dir.file("missing"), "cannot open"});
  expectMentions(errorMessage([&] { GgufFile::open(dir.file("model.safetensors")); }), {"model.safetensors", "not a GGUF file"});
}

TEST(Gguf, TensorsKeepTheMappingAlive) {
  const uint8_t* data = nullptr;
  std::shared_ptr<const void> owner;
  {
    const GgufFile file = GgufFile::open(sample("types.gguf"));
    owner = file.owner();
    data = file.tensorData(file.tensor("q4_k"));
  }
  ASSERT_NE(owner, nullptr);
  EXPECT_TRUE(hasPattern(data, 576, 5));  // read after the GgufFile is gone: the owner holds the map
}

}  // namespace
}  // namespace tscope

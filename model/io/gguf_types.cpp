// What gguf.h knows beside the parser: the ggml tensor types (ids, names, block sizes) and their
// mapping onto tscope's WeightType, the metadata value types, reading elements of packed arrays,
// values as text, and the magic-byte check.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "model/core/error.h"
#include "model/io/gguf.h"

namespace tscope {
namespace {

// ggml_type ids with their block sizes: values per block and bytes per block, as ggml's gguf-py
// lists them (GGML_QUANT_SIZES, https://github.com/ggml-org/llama.cpp/blob/master/gguf-py/gguf/constants.py).
// Ids 4, 5 (Q4_2, Q4_3), 31..33 (Q4_0_4_4 ...) and 36..38 (IQ4_NL_4_4 ...) were removed from GGUF files.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},        {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},    {6, "Q5_0", 32, 22},
    {7, "Q5_1", 32, 24},     {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},    {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110},
    {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},   {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74}, {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50}, {20, "IQ4_NL", 32, 18}, {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},  {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},       {25, "I16", 1, 2},      {26, "I32", 1, 4},
    {27, "I64", 1, 8},       {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56}, {30, "BF16", 1, 2},     {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},    {40, "NVFP4", 64, 36},  {41, "Q1_0", 128, 18},
};

// The ggml type id of each WeightType (ggml.h's enum ggml_type).
constexpr uint32_t ggmlId(WeightType type) {
  switch (type) {
    case WeightType::F32: return 0;
    case WeightType::F16: return 1;
    case WeightType::BF16: return 30;
    case WeightType::Q8_0: return 8;
    case WeightType::Q4_0: return 2;
    case WeightType::Q4_K: return 12;
    case WeightType::Q5_K: return 13;
    case WeightType::Q6_K: return 14;
  }
  return UINT32_MAX;
}

// Each WeightType's ggml entry has its name and block sizes: the two tables cannot drift apart.
constexpr bool tablesAgree() {
  for (const WeightType type : kAllWeightTypes) {
    bool found = false;
    for (const GgmlTypeInfo& info : kGgmlTypes) {
      if (info.id != ggmlId(type)) continue;
      const WeightTypeInfo ours = weightTypeInfo(type);
      if (info.name != ours.name || info.blockValues != static_cast<uint32_t>(ours.blockValues) ||
          info.blockBytes != static_cast<uint32_t>(ours.blockBytes))
        return false;
      found = true;
    }
    if (!found) return false;
  }
  return true;
}
static_assert(tablesAgree(), "weight_type.h and the ggml type table disagree");

}  // namespace

size_t ggufPackedBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::UInt8:
    case GgufValueType::Int8:
    case GgufValueType::Bool: return 1;
    case GgufValueType::UInt16:
    case GgufValueType::Int16: return 2;
    case GgufValueType::UInt32:
    case GgufValueType::Int32:
    case GgufValueType::Float32: return 4;
    case GgufValueType::UInt64:
    case GgufValueType::Int64:
    case GgufValueType::Float64: return 8;
    default: return 0;
  }
}

namespace {

template <typename T>
T loadAt(const uint8_t* packed, uint64_t i) {
  T value;
  std::memcpy(&value, packed + i * sizeof(T), sizeof(T));  // little-endian (gguf.cpp checks the host)
  return value;
}

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string quoted(std::string_view text) { return "\"" + oneLine(text, 40) + "\""; }

std::string arrayText(const GgufArray& array, size_t maxItems) {
  std::string out = "[" + ggufValueTypeName(array.elementType) + " x " + std::to_string(array.count);
  const uint64_t shown = std::min<uint64_t>(array.count, maxItems);
  for (uint64_t i = 0; i < shown; ++i) {
    out += i == 0 ? ": " : ", ";
    if (array.elementType == GgufValueType::String) out += quoted(array.strings[i]);
    else if (array.elementType == GgufValueType::Array) out += arrayText(array.arrays[i], maxItems);
    else if (array.elementType == GgufValueType::Bool) out += *array.boolAt(i) ? "true" : "false";
    else if (isGgufFloat(array.elementType)) out += numberText(*array.floatAt(i));
    else if (auto integer = array.integerAt(i)) out += std::to_string(*integer);
    else out += std::to_string(loadAt<uint64_t>(array.packed, i));  // a UINT64 past INT64_MAX
  }
  if (array.count > shown) out += ", ...";
  return out + "]";
}

}  // namespace

std::optional<GgmlTypeInfo> ggmlTypeInfo(uint32_t id) {
  for (const GgmlTypeInfo& info : kGgmlTypes)
    if (info.id == id) return info;
  return std::nullopt;
}

std::string ggmlTypeName(uint32_t id) {
  const std::optional<GgmlTypeInfo> info = ggmlTypeInfo(id);
  return info ? std::string(info->name) : "ggml type " + std::to_string(id);
}

std::optional<WeightType> weightTypeOfGgml(uint32_t id) {
  for (const WeightType type : kAllWeightTypes)
    if (ggmlId(type) == id) return type;
  return std::nullopt;
}

uint32_t ggmlTypeOf(WeightType type) { return ggmlId(type); }

std::string readableGgmlTypes() {
  std::string out;
  for (const WeightType type : kAllWeightTypes) out += (out.empty() ? "" : ", ") + std::string(weightTypeInfo(type).name);
  return out;
}

std::string ggufValueTypeName(GgufValueType type) {
  static constexpr const char* kNames[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                           "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
  const auto id = static_cast<uint32_t>(type);
  return id < std::size(kNames) ? kNames[id] : "value type " + std::to_string(id);
}

bool isGgufInteger(GgufValueType type) { return ggufPackedBytes(type) != 0 && type != GgufValueType::Bool && !isGgufFloat(type); }

bool isGgufFloat(GgufValueType type) { return type == GgufValueType::Float32 || type == GgufValueType::Float64; }

std::optional<int64_t> GgufArray::integerAt(uint64_t i) const {
  if (i >= count || !packed) return std::nullopt;
  switch (elementType) {
    case GgufValueType::UInt8: return loadAt<uint8_t>(packed, i);
    case GgufValueType::Int8: return loadAt<int8_t>(packed, i);
    case GgufValueType::UInt16: return loadAt<uint16_t>(packed, i);
    case GgufValueType::Int16: return loadAt<int16_t>(packed, i);
    case GgufValueType::UInt32: return loadAt<uint32_t>(packed, i);
    case GgufValueType::Int32: return loadAt<int32_t>(packed, i);
    case GgufValueType::Int64: return loadAt<int64_t>(packed, i);
    case GgufValueType::UInt64: {
      const uint64_t value = loadAt<uint64_t>(packed, i);
      if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(value);
    }
    default: return std::nullopt;
  }
}

std::optional<double> GgufArray::floatAt(uint64_t i) const {
  if (i >= count || !packed) return std::nullopt;
  if (elementType == GgufValueType::Float32) return loadAt<float>(packed, i);
  if (elementType == GgufValueType::Float64) return loadAt<double>(packed, i);
  if (elementType == GgufValueType::UInt64) return static_cast<double>(loadAt<uint64_t>(packed, i));
  if (const std::optional<int64_t> integer = integerAt(i)) return static_cast<double>(*integer);
  return std::nullopt;
}

std::optional<bool> GgufArray::boolAt(uint64_t i) const {
  if (i >= count || !packed || elementType != GgufValueType::Bool) return std::nullopt;
  return packed[i] != 0;
}

std::string ggufValueText(const GgufValue& value, size_t maxItems) {
  if (const auto* number = std::get_if<uint64_t>(&value.value)) return std::to_string(*number);
  if (const auto* number = std::get_if<int64_t>(&value.value)) return std::to_string(*number);
  if (const auto* number = std::get_if<double>(&value.value)) return numberText(*number);
  if (const auto* flag = std::get_if<bool>(&value.value)) return *flag ? "true" : "false";
  if (const auto* text = std::get_if<std::string_view>(&value.value)) return quoted(*text);
  return arrayText(std::get<GgufArray>(value.value), maxItems);
}

int64_t GgufTensorInfo::elements() const {
  int64_t count = 1;
  for (const int64_t dim : dims) count *= dim;  // the parser checked that the product fits
  return count;
}

bool looksLikeGguf(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;  // a FIFO would block the open
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return false;
  char magic[4] = {};
  const bool read = std::fread(magic, 1, 4, file) == 4;
  std::fclose(file);  // read-only: nothing to flush
  return read && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace tscope

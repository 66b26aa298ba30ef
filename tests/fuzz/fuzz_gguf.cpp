// Fuzzes the GGUF reader (GgufFile::fromBytes, what GgufFile::open runs on its mapping) on whole
// files held in memory. A refusal must be one tscope::Error line naming the file. An accepted file
// must hold what the reader promises: version 2 or 3, a power-of-two alignment, every metadata
// value readable (every element of every array, as text too) with the typed getters answering or
// refusing in one line, and every tensor aligned, inside the file, sized by its type and dims and
// overlapping no other; tensorData hands out those bytes for the types tscope reads (every byte is
// read here, so AddressSanitizer sees a range that leaves the input) and refuses the others.
#include <algorithm>
#include <bit>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/core/quant.h"
#include "model/io/gguf.h"
#include "model/io/gguf_model.h"
#include "model/io/gguf_tokenizer.h"

using namespace tscope;

namespace {

// Where the bytes read are summed, so that the reads are not optimised away.
volatile unsigned gSink = 0;

void checkOneLine(const std::string& message) {
  FUZZ_CHECK(message.rfind("fuzz.gguf: ", 0) == 0, "a message that does not start with the file's name: " + message);
  FUZZ_CHECK(message.find('\n') == std::string::npos, "a message of more than one line: " + message);
}

// Runs `read`; a tscope::Error is a refusal and must be one line. Returns whether it answered.
template <typename Read>
bool answers(const Read& read) {
  try {
    read();
    return true;
  } catch (const Error& e) {
    checkOneLine(e.what());
    return false;
  }
}

bool inside(const uint8_t* data, size_t size, std::string_view text) {
  const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
  return text.empty() || (begin >= data && text.size() <= size && begin <= data + size - text.size());
}

// Every element of an array: strings inside the input, numbers read from their packed bytes.
unsigned walkArray(const GgufArray& array, const uint8_t* data, size_t size, int depth) {
  FUZZ_CHECK(depth <= 8, "arrays nested deeper than the reader allows");
  unsigned sum = 0;
  if (array.elementType == GgufValueType::String) {
    FUZZ_CHECK(array.strings.size() == array.count, "string count");
    for (const std::string_view text : array.strings) {
      FUZZ_CHECK(inside(data, size, text), "a string outside the input");
      for (const char ch : text) sum += static_cast<unsigned char>(ch);
    }
  } else if (array.elementType == GgufValueType::Array) {
    FUZZ_CHECK(array.arrays.size() == array.count, "array count");
    for (const GgufArray& inner : array.arrays) sum += walkArray(inner, data, size, depth + 1);
  } else {
    const size_t elementBytes = ggufPackedBytes(array.elementType);
    FUZZ_CHECK(elementBytes > 0, "a packed array of an unknown type");
    FUZZ_CHECK(array.count == 0 || inside(data, size, std::string_view(reinterpret_cast<const char*>(array.packed), array.count * elementBytes)),
               "packed elements outside the input");
    for (uint64_t i = 0; i < array.count; ++i) {
      if (array.elementType == GgufValueType::Bool) FUZZ_CHECK(array.boolAt(i).has_value(), "a BOOL element that cannot be read");
      else FUZZ_CHECK(array.floatAt(i).has_value(), "a number element that cannot be read");
      if (isGgufInteger(array.elementType) && array.elementType != GgufValueType::UInt64)
        FUZZ_CHECK(array.integerAt(i).has_value(), "an integer element that cannot be read");
    }
    FUZZ_CHECK(!array.floatAt(array.count).has_value(), "an element past the end was read");
  }
  return sum;
}

void checkMetadata(const GgufFile& file, const uint8_t* data, size_t size) {
  std::vector<std::string> keys = file.metadataKeys();
  for (const std::string& key : keys) {
    FUZZ_CHECK(!key.empty(), "an empty key");
    const GgufValue* value = file.find(key);
    FUZZ_CHECK(value != nullptr, key + ": listed but not found");
    const std::string text = ggufValueText(*value);
    FUZZ_CHECK(text.find('\n') == std::string::npos, key + ": its text spans lines");
    if (const GgufArray* array = value->array()) gSink = gSink + walkArray(*array, data, size, 1);
    if (value->type == GgufValueType::String) {
      FUZZ_CHECK(inside(data, size, std::get<std::string_view>(value->value)), key + ": a string outside the input");
      FUZZ_CHECK(answers([&] { file.getString(key); }), key + ": getString refused a STRING");
    }
    if (isGgufInteger(value->type)) FUZZ_CHECK(answers([&] { file.getInt(key); }) || answers([&] { file.getUint(key); }), key + ": an integer");
    if (isGgufFloat(value->type)) FUZZ_CHECK(answers([&] { file.getFloat(key); }), key + ": getFloat refused a float");
    if (value->type == GgufValueType::Bool) FUZZ_CHECK(answers([&] { file.getBool(key); }), key + ": getBool refused a BOOL");
    answers([&] { file.stringArray(key); });
    answers([&] { file.floatArray(key); });
    answers([&] { file.intArray(key); });
  }
  std::sort(keys.begin(), keys.end());
  FUZZ_CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end(), "a duplicate key was accepted");
  if (file.has("general.alignment")) FUZZ_CHECK(file.getUint("general.alignment") == file.alignment(), "general.alignment not applied");
}

void checkTensors(const GgufFile& file, const uint8_t* data, size_t size) {
  std::vector<const GgufTensorInfo*> byOffset;
  for (const GgufTensorInfo& tensor : file.tensors()) {
    FUZZ_CHECK(file.findTensor(tensor.name) == &tensor, tensor.name + ": not found by name (a duplicate?)");
    FUZZ_CHECK(tensor.name.size() <= 64, tensor.name + ": a name past 64 bytes");
    FUZZ_CHECK(!tensor.dims.empty() && tensor.dims.size() <= 4, tensor.name + ": 1 to 4 dims");
    const std::optional<GgmlTypeInfo> type = ggmlTypeInfo(tensor.ggmlType);
    FUZZ_CHECK(type.has_value(), tensor.name + ": an unknown type was accepted");
    FUZZ_CHECK(tensor.type == weightTypeOfGgml(tensor.ggmlType), tensor.name + ": type");
    FUZZ_CHECK(tensor.dims[0] % type->blockValues == 0, tensor.name + ": rows not whole blocks");
    FUZZ_CHECK(tensor.bytes == static_cast<uint64_t>(tensor.elements()) / type->blockValues * type->blockBytes, tensor.name + ": byte count");
    FUZZ_CHECK(tensor.offset >= file.dataOffset() && (tensor.offset - file.dataOffset()) % file.alignment() == 0, tensor.name + ": unaligned");
    FUZZ_CHECK(tensor.offset <= size && tensor.bytes <= size - tensor.offset, tensor.name + ": outside the file");
    if (tensor.type) {
      const uint8_t* bytes = file.tensorData(tensor);
      FUZZ_CHECK(bytes == data + tensor.offset, tensor.name + ": tensorData points elsewhere");
      unsigned sum = 0;
      for (uint64_t i = 0; i < tensor.bytes; ++i) sum += bytes[i];
      gSink = gSink + sum;
    } else {
      FUZZ_CHECK(!answers([&] { file.tensorData(tensor); }), tensor.name + ": a type tscope does not read was handed out");
    }
    if (tensor.bytes > 0) byOffset.push_back(&tensor);
  }
  std::sort(byOffset.begin(), byOffset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    FUZZ_CHECK(byOffset[i]->offset >= byOffset[i - 1]->offset + byOffset[i - 1]->bytes, byOffset[i]->name + ": overlaps " + byOffset[i - 1]->name);
}

}  // namespace

// What the model loader reads from an accepted file (gguf_model.h, gguf_tokenizer.h): the config
// and the tokenizer answer or refuse in one line; a tokenizer encodes text and decodes its ids;
// every tensor of a type tscope reads dequantizes (its first row), with no read outside the input.
void checkModelReaders(const GgufFile& file) {
  answers([&] { (void)ggufHfConfig(file); });
  std::unique_ptr<Tokenizer> tokenizer;
  if (answers([&] { tokenizer = ggufTokenizer(file); }) && tokenizer) {
    const std::vector<int> ids = tokenizer->encode("Hello, world! caf\xc3\xa9 \xff 12345");
    for (const int id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer->vocabSize(), "an id outside the vocabulary");
    (void)tokenizer->decode(ids);
  }
  std::vector<float> row;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (!t.type || t.dims.empty() || t.dims[0] <= 0 || t.dims[0] > (1 << 20) || t.elements() < t.dims[0]) continue;
    row.resize(static_cast<size_t>(t.dims[0]));
    dequantizeRow(*t.type, file.tensorData(t), row.data(), t.dims[0]);
    for (const float v : row) gSink = gSink + (v == v ? 1u : 0u);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<GgufFile> file;
  try {
    file.emplace(GgufFile::fromBytes("fuzz.gguf", nullptr, data, size));
  } catch (const Error& e) {
    checkOneLine(e.what());  // refused with a message: what a bad file must get
    return 0;
  }
  FUZZ_CHECK(file->version() == 2 || file->version() == 3, "version");
  FUZZ_CHECK(std::has_single_bit(file->alignment()), "alignment not a power of two");
  FUZZ_CHECK(file->dataOffset() % file->alignment() == 0, "data offset unaligned");
  checkMetadata(*file, data, size);
  checkTensors(*file, data, size);
  checkModelReaders(*file);
  return 0;
}

// Fuzzes llama2.c's two files. The first byte chooses: even, the rest is a checkpoint (any header
// version: legacy, "ak42" version 1 or 2); odd, the next two bytes are the model's vocab size
// (little-endian) and the rest a tokenizer.bin. Whatever loads must hold together: a valid config
// whose matrices the file could hold; a tokenizer whose ids are in range and which gives every byte
// of a text back (after the dummy prefix) whenever it needed no <unk>.
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "model/core/config.h"
#include "model/core/error.h"
#include "model/io/llama2c.h"
#include "model/tokenize/tokenizer_spm.h"

using namespace tscope;

namespace {

void fuzzCheckpoint(const uint8_t* data, size_t size) {
  // The reader reads float32 in place, as from its memory map: give it an aligned copy.
  std::vector<float> aligned((size + sizeof(float) - 1) / sizeof(float));
  if (size) std::memcpy(aligned.data(), data, size);
  try {
    const Weights weights = llama2cCheckpointFromBytes("fuzz.bin", reinterpret_cast<const uint8_t*>(aligned.data()), size);
    const ModelConfig& c = weights.config();
    FUZZ_CHECK(validateConfig(c).empty(), validateConfig(c));
    // Every query matrix value comes from at least one byte of the file (int8 in version 2).
    FUZZ_CHECK(static_cast<uint64_t>(c.n_layer) * c.n_embd * c.n_embd <= size, "more weights than the file holds");
  } catch (const Error&) {
  }
}

void fuzzTokenizer(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int vocab = data[0] | (data[1] << 8);
  const std::string bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = llama2cTokenizerFromBytes("fuzz.bin", bytes, vocab);
  } catch (const Error&) {
    return;
  }
  FUZZ_CHECK(tokenizer->vocabSize() == vocab, "vocab size");
  for (const std::string& text :
       {std::string("hello world"), std::string(" a  b\n"), std::string("caf\xC3\xA9 \xE4\xB8\xAD \xFF\x80"), bytes.substr(0, 64)}) {
    const std::vector<int> ids = tokenizer->encode(text);
    bool unknown = false;
    for (int id : ids) {
      FUZZ_CHECK(id >= 0 && id < vocab, "id " + std::to_string(id) + " outside the vocab");
      unknown = unknown || id == 0;
    }
    const std::string decoded = tokenizer->decode(ids);
    if (!unknown) FUZZ_CHECK(decoded == (text.empty() ? "" : " " + text), "decode(encode(text)) lost bytes");
    FUZZ_CHECK(tokenizer->encode(text) == ids, "encode is not deterministic");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) fuzzCheckpoint(data + 1, size - 1);
  else fuzzTokenizer(data + 1, size - 1);
  return 0;
}

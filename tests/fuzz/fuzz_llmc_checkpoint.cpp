// Fuzzes llm.c's .bin checkpoint (256 int32 header, then 16 float32 tensors). Whatever loads must
// have a valid config; nothing may be allocated from the header before the file size confirms it.
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "model/core/config.h"
#include "model/core/error.h"
#include "model/io/model_io.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The loader reads floats in place, as from its memory map: give it an aligned copy.
  std::vector<float> aligned((size + sizeof(float) - 1) / sizeof(float));
  if (size) std::memcpy(aligned.data(), data, size);
  try {
    const Weights weights = llmcCheckpointFromBytes("fuzz.bin", reinterpret_cast<const uint8_t*>(aligned.data()), size);
    FUZZ_CHECK(validateConfig(weights.config()).empty(), validateConfig(weights.config()));
    FUZZ_CHECK(weights.totalFloats() * sizeof(float) <= size, "more weights than the file holds");
  } catch (const Error&) {
  }
  return 0;
}

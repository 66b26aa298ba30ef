// Fuzzes the safetensors header parser on whole files held in memory: whatever it accepts must
// describe tensors that lie inside the data area with byte counts matching shape x dtype, and the
// file-based reader (SafetensorsFile::readFloat, through a file under /dev/shm) must give the same
// floats as converting those bytes here.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/io/safetensors.h"

using namespace tscope;

namespace {

size_t bytesPerElement(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

// The floats of one tensor converted from the input bytes (every byte of its range is read, so
// AddressSanitizer sees any range that leaves the input).
std::vector<float> floatsFromBytes(const uint8_t* first, const TensorInfo& tensor) {
  std::vector<float> out(tensor.numel());
  for (size_t i = 0; i < out.size(); ++i) {
    if (tensor.dtype == DType::F32) {
      std::memcpy(&out[i], first + 4 * i, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, first + 2 * i, 2);
      out[i] = tensor.dtype == DType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
    }
  }
  return out;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SafetensorsHeader header;
  try {
    header = parseSafetensorsHeader("fuzz.safetensors", data, size);
  } catch (const Error&) {
    return 0;  // refused with a message: what a bad file must get
  }
  FUZZ_CHECK(header.dataStart >= 8 && header.dataStart <= size, "data area starts outside the file");
  const size_t dataBytes = size - header.dataStart;
  std::vector<std::vector<float>> expected;
  for (const auto& [name, tensor] : header.tensors) {
    FUZZ_CHECK(tensor.name == name, name);
    FUZZ_CHECK(tensor.begin <= tensor.end && tensor.end <= dataBytes, name + ": range outside the data area");
    FUZZ_CHECK(tensor.end - tensor.begin == tensor.numel() * bytesPerElement(tensor.dtype), name + ": byte count");
    expected.push_back(floatsFromBytes(data + header.dataStart + tensor.begin, tensor));
  }

  // The same bytes through the file-based reader, which must accept them and read the same floats.
  static const std::string path = "/dev/shm/tscope-fuzz-safetensors-" + std::to_string(::getpid());
  FILE* file = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(file != nullptr, "cannot create " + path);
  FUZZ_CHECK(std::fwrite(data, 1, size, file) == size, "cannot write " + path);
  FUZZ_CHECK(std::fclose(file) == 0, "cannot close " + path);
  SafetensorsFile mapped(path);
  FUZZ_CHECK(mapped.tensors().size() == header.tensors.size(), "the file reader saw other tensors");
  size_t index = 0;
  for (const auto& [name, tensor] : header.tensors) FUZZ_CHECK(sameBits(mapped.readFloat(name), expected[index++]), name + ": readFloat differs");
  std::remove(path.c_str());
  return 0;
}

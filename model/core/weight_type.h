// The element types a weight matrix can be held in: float32, the two 16-bit floats and the block
// quantizations of GGML / GGUF files that tscope reads (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). A quantized
// row is a run of blocks, each `blockValues` weights in `blockBytes` bytes (scales included), so a
// row of n weights (n a multiple of blockValues) takes n / blockValues * blockBytes bytes.
// Block sizes: the block structs of ggml (the library behind llama.cpp), as the GGUF specification lists them.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace tscope {

enum class WeightType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };
inline constexpr WeightType kAllWeightTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16, WeightType::Q8_0,
                                                 WeightType::Q4_0, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};

struct WeightTypeInfo {
  std::string_view name;  // as GGUF tools print it: "F32", "Q4_K", ...
  int blockValues;        // weights per block (1 for the float types)
  int blockBytes;         // bytes per block
  bool quantized;         // a block quantization (not a float type)
};

constexpr WeightTypeInfo weightTypeInfo(WeightType type) {
  switch (type) {
    case WeightType::F32: return {"F32", 1, 4, false};
    case WeightType::F16: return {"F16", 1, 2, false};
    case WeightType::BF16: return {"BF16", 1, 2, false};
    case WeightType::Q8_0: return {"Q8_0", 32, 34, true};    // fp16 d, int8 qs[32]
    case WeightType::Q4_0: return {"Q4_0", 32, 18, true};    // fp16 d, uint8 qs[16]
    case WeightType::Q4_K: return {"Q4_K", 256, 144, true};  // fp16 d, dmin, uint8 scales[12], qs[128]
    case WeightType::Q5_K: return {"Q5_K", 256, 176, true};  // fp16 d, dmin, uint8 scales[12], qh[32], qs[128]
    case WeightType::Q6_K: return {"Q6_K", 256, 210, true};  // uint8 ql[128], qh[64], int8 scales[16], fp16 d
  }
  return {"?", 1, 4, false};
}

// Bits per weight, scales included: 32, 16, 16, 8.5, 4.5, 4.5, 5.5, 6.5625.
constexpr double bitsPerWeight(WeightType type) {
  const WeightTypeInfo info = weightTypeInfo(type);
  return 8.0 * info.blockBytes / info.blockValues;
}

// Bytes of a row of `values` weights; nullopt when `values` is not a whole number of blocks.
constexpr std::optional<uint64_t> rowBytes(WeightType type, int64_t values) {
  const WeightTypeInfo info = weightTypeInfo(type);
  if (values < 0 || values % info.blockValues != 0) return std::nullopt;
  return static_cast<uint64_t>(values / info.blockValues) * static_cast<uint64_t>(info.blockBytes);
}

// The type named `name` ("Q4_K", case as above), or nullopt.
constexpr std::optional<WeightType> weightTypeNamed(std::string_view name) {
  for (const WeightType type : kAllWeightTypes)
    if (weightTypeInfo(type).name == name) return type;
  return std::nullopt;
}

}  // namespace tscope

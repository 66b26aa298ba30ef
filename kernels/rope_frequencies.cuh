// RoPE's pair frequencies as a kernel argument, passed by value so recorded decode steps need no
// device copy: Llama 3's scaled table (AttentionShape::ropeFrequencies, from positional.h's
// ropeInverseFrequencies), or none (count 0) for the plain base^(-2i/D) computed on the device.
#pragma once
#include <string>

#include "kernels/cuda_check.h"
#include "model/nn/backend.h"

namespace tscope::cuda {

struct RopeFrequencies {
  static constexpr int kMaxPairs = 128;  // head dimension 256, the attention kernels' limit
  double base = 0;                       // 0: no RoPE
  int count = 0;                         // 0: plain base^(-2i/D); else D/2 scaled values
  double values[kMaxPairs];
};

// The shape's RoPE (host side); a scaled table longer than kMaxPairs throws.
inline RopeFrequencies ropeFrequenciesOf(const AttentionShape& s) {
  RopeFrequencies f{};
  f.base = s.ropeBase;
  if (s.ropeBase > 0 && s.ropeFrequencies) {
    if (s.headDim / 2 > RopeFrequencies::kMaxPairs)
      throw Error("attention: scaled RoPE takes head dimensions up to " + std::to_string(2 * RopeFrequencies::kMaxPairs) + " on CUDA");
    f.count = s.headDim / 2;
    for (int i = 0; i < f.count; ++i) f.values[i] = s.ropeFrequencies[i];
  }
  return f;
}

// The angle per position of pair i of a D-value head, in double as positional.cpp computes it.
__device__ inline double ropePairFrequency(const RopeFrequencies& f, int i, int D) { return f.count > 0 ? f.values[i] : pow(f.base, -2.0 * i / D); }

}  // namespace tscope::cuda

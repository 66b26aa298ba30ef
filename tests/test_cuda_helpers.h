// What every tests/test_cuda_*.cpp needs: the CUDA backend or a skip with the reason (the tests
// are compiled in every build and report SKIPPED where the build has no CUDA backend or the
// machine has no device), seeded random inputs, and host <-> backend copies (toDevice and toHost,
// from test_backward_helpers.h). Plain C++: no CUDA header, so the CPU-only (and sanitizer) builds
// compile these tests too.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/select/backend_select.h"
#include "model/core/error.h"
#include "model/generate/sampling.h"
#include "model/nn/positional.h"
#include "tests/test_backward_helpers.h"

namespace tscope::testing {

// make() (the CUDA backend or training device), or null with *why set.
template <class Make>
auto cudaOrNull(std::string* why, Make make) -> decltype(make()) {
  try {
    return make();
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
}
inline std::unique_ptr<Backend> cudaOrNull(std::string* why) {
  return cudaOrNull(why, [] { return makeBackend("cuda"); });
}

// A Llama 3-scaled RoPE table of 128 pairs (D 256, base 100, factor 8, original context 64: kept,
// blended and divided pairs). A head of D < 256 reads its first D/2 entries, a table unlike its
// plain base^(-2i/D), which is what the kernels must honour.
inline const double* scaledRopeTable() {
  static const std::vector<double> table = ropeInverseFrequencies(256, 100.0, RopeScaling{8.0, 1.0, 4.0, 64.0});
  return table.data();
}

// n floats uniform in [-scale, scale) from Rng(seed).
inline std::vector<float> randomValues(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * (2.0 * rng.uniform() - 1.0));
  return v;
}

}  // namespace tscope::testing

// Declares `backend` (the CUDA backend) or skips the test, saying why.
#define REQUIRE_CUDA(backend)                                \
  std::string whyNoCuda_;                                    \
  auto backend = ::tscope::testing::cudaOrNull(&whyNoCuda_); \
  if (!backend) GTEST_SKIP() << "no CUDA backend: " << whyNoCuda_

// Declares `device` (the CUDA training Device) and `backend` (its forward ops and memory), or
// skips the test, saying why.
#define REQUIRE_CUDA_DEVICE(device, backend)                                                             \
  std::string whyNoCuda_;                                                                                \
  auto device = ::tscope::testing::cudaOrNull(&whyNoCuda_, [] { return ::tscope::makeDevice("cuda"); }); \
  if (!device) GTEST_SKIP() << "no CUDA device: " << whyNoCuda_;                                         \
  [[maybe_unused]] ::tscope::Backend& backend = device->forward()

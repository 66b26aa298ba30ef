// What every fuzz target shares: FUZZ_CHECK, which turns a broken invariant into a crash that
// libFuzzer records (a parser that returns wrong data is as much a finding as one that crashes),
// and the input as a std::string.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, what)                                                             \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s (%s)\n", __FILE__, __LINE__, #condition, \
                   std::string(what).c_str());                                                  \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)

namespace tscope::fuzz {

inline std::string asString(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace tscope::fuzz

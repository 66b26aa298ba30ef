// The seeded random generator of the whole engine: weight initialisation, sampling, random
// projections and hashing directions draw from it, so a seed gives the same numbers everywhere.
#pragma once
#include <cstdint>

namespace tscope {

// A small, fully specified PRNG (xoshiro256**, seeded through splitmix64) so the same seed gives
// the same text on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t next();
  double uniform();  // [0, 1) with 53 random bits
  // A standard normal draw by Box-Muller from two uniform() draws (the first kept above 1e-300),
  // so seeded weights and random projections are the same on every platform.
  double normal();
  // The four state words (for a device copy of the generator, e.g. CUDA sampling).
  const uint64_t* state() const { return s_; }
  void setState(const uint64_t words[4]) {
    for (int i = 0; i < 4; ++i) s_[i] = words[i];
  }

 private:
  uint64_t s_[4];
};

}  // namespace tscope

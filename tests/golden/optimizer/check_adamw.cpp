// Golden AdamW check: replays make_reference.py's parameters, gradients, mask and per-step lr
// through tscope::AdamW and compares every parameter after every step with torch.optim.AdamW.
// Usage: check_adamw REF_DIR. Exit 0 when every element is within 1e-6 relative, 1 otherwise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "model/io/npy.h"
#include "model/train/optimizer.h"

namespace {

constexpr double kRelativeTolerance = 1e-6;

tscope::NpyArray load(const std::string& dir, const char* name, size_t rank) {
  tscope::NpyArray a = tscope::readNpy(dir + "/" + name);
  if (a.shape.size() != rank) throw std::runtime_error(std::string(name) + ": unexpected rank");
  return a;
}

int run(const std::string& dir) {
  const tscope::NpyArray params0 = load(dir, "params0.npy", 1), mask = load(dir, "mask.npy", 1), grads = load(dir, "grads.npy", 2),
                         lrs = load(dir, "lrs.npy", 1), hyper = load(dir, "hyper.npy", 1), expected = load(dir, "expected.npy", 2);
  const size_t n = params0.data.size();
  const size_t steps = lrs.data.size();
  if (mask.data.size() != n || hyper.data.size() != 4 || grads.shape[0] != int64_t(steps) || grads.shape[1] != int64_t(n) ||
      expected.shape != grads.shape)
    throw std::runtime_error("reference arrays have inconsistent shapes");

  std::vector<uint8_t> decayMask(n);
  for (size_t i = 0; i < n; ++i) decayMask[i] = mask.data[i] != 0.0f;
  const tscope::AdamWConfig config{
      .lr = lrs.data[0], .beta1 = hyper.data[0], .beta2 = hyper.data[1], .eps = hyper.data[2], .weightDecay = hyper.data[3]};
  tscope::AdamW opt(n, config);
  std::vector<float> params = params0.data;
  bool ok = true;
  for (size_t s = 0; s < steps; ++s) {
    opt.step(params.data(), grads.data.data() + s * n, decayMask.data(), lrs.data[s]);
    const float* want = expected.data.data() + s * n;
    double worst = 0, worstAbs = 0;
    size_t where = 0;
    for (size_t i = 0; i < n; ++i) {
      const double diff = std::fabs(double(params[i]) - want[i]);
      const double rel = want[i] != 0 ? diff / std::fabs(double(want[i])) : diff;
      if (!(rel <= worst)) {  // also catches NaN
        worst = std::isnan(rel) ? INFINITY : rel;
        worstAbs = diff;
        where = i;
      }
    }
    const bool stepOk = worst <= kRelativeTolerance;
    ok = ok && stepOk;
    std::printf("step %zu lr %g: max relative difference %.3g (|diff| %.3g at %zu: ours %.9g torch %.9g) %s\n", s + 1, double(lrs.data[s]), worst,
                worstAbs, where, double(params[where]), double(want[where]), stepOk ? "ok" : "FAIL");
  }
  std::printf("%s: tscope::AdamW vs torch.optim.AdamW, %zu steps of %zu parameters, tolerance %g relative\n", ok ? "PASS" : "FAIL", steps, n,
              kRelativeTolerance);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: check_adamw REF_DIR\n");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_adamw: %s\n", e.what());
    return 1;
  }
}

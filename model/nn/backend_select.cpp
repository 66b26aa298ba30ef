// makeBackend: the run-time choice between the CPU backends and CUDA. The CUDA entry points come
// from kernels/cuda_backend.h (plain C++) and only when TSCOPE_HAVE_CUDA is defined, so this file
// builds, and "auto" falls back to the CPU, on machines without the CUDA toolkit.
#include "model/nn/backend_select.h"

#include <vector>

#include "model/core/error.h"

#ifdef TSCOPE_HAVE_CUDA
#include "kernels/cuda_backend.h"
#include "kernels/cuda_backward.h"
#endif

namespace tscope {

bool buildHasCuda() {
#ifdef TSCOPE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Backend> makeBackend(const std::string& name, int threads, std::string* note) {
  if (note) note->clear();
  if (name == "cpu") return makeCpuBackend(threads);
  if (name == "reference") return makeReferenceBackend();
  if (name != "cuda" && name != "auto") throw Error("unknown backend '" + name + "' (expected cpu, reference, cuda or auto)");
#ifdef TSCOPE_HAVE_CUDA
  std::string reason;
  if (cudaDeviceAvailable(&reason)) {
    std::string description;
    auto backend = makeCudaBackend(0, &description);
    if (note) *note = "CUDA: " + description;
    return backend;
  }
  if (name == "cuda") throw Error("no CUDA device (" + reason + ")");
  if (note) *note = "CPU: no CUDA device (" + reason + ")";
#else
  if (name == "cuda") throw Error("this build has no CUDA backend (the CUDA toolkit was not found at build time)");
  if (note) *note = "CPU (no CUDA in this build)";
#endif
  return makeCpuBackend(threads);
}

std::unique_ptr<BackwardOps> makeBackwardOps(Backend& forward, int threads) {
  const std::string name = forward.name();
  if (name == "reference") return makeReferenceBackwardOps();
  if (name == "cpu") return makeCpuBackwardOps(threads);
#ifdef TSCOPE_HAVE_CUDA
  if (name == "cuda") return makeCudaBackwardOps(forward);
#endif
  throw Error("no backward ops for the '" + name + "' backend");
}

namespace {

#ifdef TSCOPE_HAVE_CUDA
class DeviceAdamW : public BackendAdamW {
 public:
  DeviceAdamW(Backend& backend, size_t n, AdamWConfig config) : adamw_(backend, n, config) {}
  void setDecayMask(const uint8_t* hostMask) override { adamw_.setDecayMask(hostMask); }
  void step(float* params, const float* grads, float lr) override { adamw_.step(params, grads, lr); }
  float clipGradNorm(float* grads, size_t n, float maxNorm) override { return adamw_.clipGradNorm(grads, n, maxNorm); }
  void scale(float* x, size_t n, float factor) override { adamw_.scale(x, n, factor); }
  int64_t stepCount() const override { return adamw_.stepCount(); }
  AdamWState saveState() const override { return adamw_.saveState(); }
  void loadState(const AdamWState& state) override { adamw_.loadState(state); }

 private:
  CudaAdamW adamw_;
};
#endif

}  // namespace

std::unique_ptr<BackendAdamW> makeAdamW(Backend& backend, size_t n, AdamWConfig config) {
  if (backend.isHost()) return makeHostAdamW(n, config);
#ifdef TSCOPE_HAVE_CUDA
  if (backend.name() == "cuda") return std::make_unique<DeviceAdamW>(backend, n, config);
#endif
  throw Error("no AdamW for the '" + backend.name() + "' backend");
}

TrainCompute makeTrainCompute(const std::string& name, int threads, std::string* note) {
  TrainCompute compute;
  compute.forward = makeBackend(name, threads, note);
  compute.backward = makeBackwardOps(*compute.forward, threads);
  compute.makeAdamW = [](Backend& backend, size_t n, AdamWConfig config) { return makeAdamW(backend, n, config); };
  return compute;
}

}  // namespace tscope

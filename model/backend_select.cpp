// makeBackend: the run-time choice between the CPU backends and CUDA. The CUDA entry points come
// from kernels/cuda_backend.h (plain C++) and only when TSCOPE_HAVE_CUDA is defined, so this file
// builds, and "auto" falls back to the CPU, on machines without the CUDA toolkit.
#include "model/backend_select.h"

#include "model/error.h"

#ifdef TSCOPE_HAVE_CUDA
#include "kernels/cuda_backend.h"
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

}  // namespace tscope

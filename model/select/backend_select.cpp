// makeBackend and makeDevice: the run-time choice between the CPU backends and CUDA, made once in
// choose(). The CUDA entry points come from kernels/ (plain C++ headers) and only when
// TSCOPE_HAVE_CUDA is defined, so this file builds, and "auto" falls back to the CPU, on machines
// without the CUDA toolkit.
#include "model/select/backend_select.h"

#include "model/core/error.h"

#ifdef TSCOPE_HAVE_CUDA
#include "kernels/cublas_loader.h"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_device.h"
#endif

namespace tscope {

namespace {

enum class Choice { Cpu, Reference, Cuda };

// Which of the three `name` means on this machine (throws tscope::Error as makeBackend says).
Choice choose(const std::string& name, std::string* note) {
  if (note) note->clear();
  if (name == "cpu") return Choice::Cpu;
  if (name == "reference") return Choice::Reference;
  if (name != "cuda" && name != "auto") throw Error("unknown backend '" + name + "' (expected cpu, reference, cuda or auto)");
#ifdef TSCOPE_HAVE_CUDA
  std::string reason;
  if (cudaDeviceAvailable(&reason)) return Choice::Cuda;
  if (name == "cuda") throw Error("no CUDA device (" + reason + ")");
  if (note) *note = "CPU: no CUDA device (" + reason + ")";
#else
  if (name == "cuda") throw Error("this build has no CUDA backend (the CUDA toolkit was not found at build time)");
  if (note) *note = "CPU (no CUDA in this build)";
#endif
  return Choice::Cpu;
}

#ifdef TSCOPE_HAVE_CUDA
// The CUDA backend or device on device 0, from make(0, &description); *note names the device.
template <class Make>
auto makeCuda(Make make, std::string* note) {
  std::string description;
  auto made = make(0, &description);
  if (note) *note = "CUDA: " + description;
  return made;
}
#endif

}  // namespace

bool buildHasCuda() {
#ifdef TSCOPE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string cudaLibraryProblem() {
#ifdef TSCOPE_HAVE_CUDA
  return cublasLoadProblem();
#else
  return "this build has no CUDA backend (the CUDA toolkit was not found at build time)";
#endif
}

std::unique_ptr<Backend> makeBackend(const std::string& name, int threads, std::string* note) {
  const Choice choice = choose(name, note);
  if (choice == Choice::Reference) return makeReferenceBackend();
#ifdef TSCOPE_HAVE_CUDA
  if (choice == Choice::Cuda) return makeCuda(makeCudaBackend, note);
#endif
  return makeCpuBackend(threads);
}

std::unique_ptr<Device> makeDevice(const std::string& name, int threads, std::string* note) {
  const Choice choice = choose(name, note);
  if (choice == Choice::Reference) return makeReferenceDevice();
#ifdef TSCOPE_HAVE_CUDA
  if (choice == Choice::Cuda) return makeCuda(makeCudaDevice, note);
#endif
  return makeCpuDevice(threads);
}

}  // namespace tscope

namespace tscope {

std::unique_ptr<Device> makeTrainingDevice(const std::string& name, std::string* note) {
  if (name == "cpu") {
    if (note) note->clear();
    return nullptr;
  }
  std::unique_ptr<Device> device = makeDevice(name, 0, note);
  if (device->isHost()) return nullptr;  // "auto" without a usable GPU, or "reference"
  return device;
}

}  // namespace tscope

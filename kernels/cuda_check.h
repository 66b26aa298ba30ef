// Checks for every CUDA runtime and cuBLAS call and every kernel launch: a failure throws
// tscope::Error naming the call, the error and the file and line, so a bad launch is reported
// where it happened rather than at the next synchronisation.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "model/core/error.h"

namespace tscope::cuda {

[[noreturn]] inline void throwCudaError(cudaError_t error, const char* call, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cudaGetErrorName(error) + " (" +
              cudaGetErrorString(error) + ")");
}

[[noreturn]] inline void throwCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cublasGetStatusName(status) + " (" +
              cublasGetStatusString(status) + ")");
}

// TSCOPE_CUDA_SYNC=1 (opt-in, slow): every launch check also waits for the kernel, so a fault is
// reported at the launch that made it, not at a later synchronisation (CUDA errors are sticky:
// every call after a fault fails). Skipped while this thread captures a CUDA graph (a wait is
// illegal there): CudaBackend counts its captures in capturesInProgress().
inline bool syncEveryLaunch() {
  static const bool on = [] {
    const char* value = std::getenv("TSCOPE_CUDA_SYNC");
    return value != nullptr && std::string(value) == "1";
  }();
  return on;
}
inline int& capturesInProgress() {
  static thread_local int captures = 0;
  return captures;
}
inline void checkLaunch(const char* file, int line) {
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess) throwCudaError(launch, "kernel launch", file, line);
  if (!syncEveryLaunch() || capturesInProgress() > 0) return;
  const cudaError_t run = cudaDeviceSynchronize();
  if (run != cudaSuccess) throwCudaError(run, "the kernel launched here (TSCOPE_CUDA_SYNC=1)", file, line);
}

}  // namespace tscope::cuda

#define TSCOPE_CUDA_CHECK(call)                                                                                       \
  do {                                                                                                                \
    const cudaError_t tscopeCudaError_ = (call);                                                                      \
    if (tscopeCudaError_ != cudaSuccess) ::tscope::cuda::throwCudaError(tscopeCudaError_, #call, __FILE__, __LINE__); \
  } while (0)

#define TSCOPE_CUBLAS_CHECK(call)                                                                                                       \
  do {                                                                                                                                  \
    const cublasStatus_t tscopeCublasStatus_ = (call);                                                                                  \
    if (tscopeCublasStatus_ != CUBLAS_STATUS_SUCCESS) ::tscope::cuda::throwCublasError(tscopeCublasStatus_, #call, __FILE__, __LINE__); \
  } while (0)

// After a <<<...>>> launch: reports a bad configuration (grid, shared memory) at once, and with
// TSCOPE_CUDA_SYNC=1 a fault of the kernel itself.
#define TSCOPE_LAUNCH_CHECK() ::tscope::cuda::checkLaunch(__FILE__, __LINE__)

// Checks for every CUDA runtime and cuBLAS call and every kernel launch: a failure throws
// tscope::Error naming the call, the error and the file and line, so a bad launch is reported
// where it happened rather than at the next synchronisation.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

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

}  // namespace tscope::cuda

#define TSCOPE_CUDA_CHECK(call)                                                                   \
  do {                                                                                            \
    const cudaError_t tscopeCudaError_ = (call);                                                  \
    if (tscopeCudaError_ != cudaSuccess) ::tscope::cuda::throwCudaError(tscopeCudaError_, #call, __FILE__, __LINE__); \
  } while (0)

#define TSCOPE_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                              \
    const cublasStatus_t tscopeCublasStatus_ = (call);                                              \
    if (tscopeCublasStatus_ != CUBLAS_STATUS_SUCCESS)                                               \
      ::tscope::cuda::throwCublasError(tscopeCublasStatus_, #call, __FILE__, __LINE__);              \
  } while (0)

// After a <<<...>>> launch: reports a bad configuration (grid, shared memory) at once.
#define TSCOPE_LAUNCH_CHECK() TSCOPE_CUDA_CHECK(cudaGetLastError())

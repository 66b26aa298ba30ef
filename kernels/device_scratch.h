// A growable device byte area (RAII, move-only), the scratch of the CUDA backend and of the
// training ops. Growing first waits for `stream`, so work already enqueued never reads freed memory;
// the old area is freed, so callers that recorded its address (a CUDA graph) must not grow it.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda_check.h"

namespace tscope::cuda {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch() {
    if (data_) cudaFree(data_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  // At least `bytes` bytes (the same area while it is large enough).
  void* reserve(size_t bytes, cudaStream_t stream) {
    if (bytes <= bytes_) return data_;
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (data_) TSCOPE_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    bytes_ = 0;
    TSCOPE_CUDA_CHECK(cudaMalloc(&data_, bytes));
    bytes_ = bytes;
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tscope::cuda

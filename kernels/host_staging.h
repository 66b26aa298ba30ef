// Host arguments (token ids, MoE rows and gates, cross-entropy targets) on their way to the device.
// A copy from pageable memory makes the driver stage it through its own pinned buffer, and
// cudaMemcpyAsync from pageable memory may wait for the stream; a MoE layer stages rows per expert,
// so that would wait once per expert. Here the values are copied (memcpy) into a pinned host ring,
// and one asynchronous copy moves them into the same slice of a device ring: no wait until the
// ring wraps (then one cudaStreamSynchronize, so no slice still being read is overwritten) or
// grows. A returned device address stays valid for the work enqueued on `stream` after it.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/cuda_check.h"

namespace tscope::cuda {

class HostStaging {
 public:
  HostStaging() = default;
  ~HostStaging() { release(); }
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `bytes` bytes from `host` and returns their device address (256-byte aligned).
  void* put(const void* host, size_t bytes, cudaStream_t stream) {
    const size_t slice = std::max<size_t>(alignUp(bytes), kAlign);
    if (slice > capacity_) {
      grow(std::max(slice, std::max(capacity_ * 2, kInitialBytes)), stream);
    } else if (offset_ + slice > capacity_) {
      TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // every slice enqueued so far has been read
      offset_ = 0;
      ++wraps_;
    }
    char* hostSlice = host_ + offset_;
    char* deviceSlice = device_ + offset_;
    if (bytes) {
      std::memcpy(hostSlice, host, bytes);
      TSCOPE_CUDA_CHECK(cudaMemcpyAsync(deviceSlice, hostSlice, bytes, cudaMemcpyHostToDevice, stream));
    }
    offset_ += slice;
    return deviceSlice;
  }
  size_t capacity() const { return capacity_; }
  size_t wraps() const { return wraps_; }  // waits so far (tests: a wrap keeps every value)

 private:
  static constexpr size_t kAlign = 256;
  static constexpr size_t kInitialBytes = size_t(1) << 20;
  static size_t alignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  void grow(size_t bytes, cudaStream_t stream) {
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    release();
    TSCOPE_CUDA_CHECK(cudaMallocHost(&host_, bytes));
    TSCOPE_CUDA_CHECK(cudaMalloc(&device_, bytes));
    capacity_ = bytes;
    offset_ = 0;
  }
  void release() {
    if (host_) cudaFreeHost(host_);
    if (device_) cudaFree(device_);
    host_ = nullptr;
    device_ = nullptr;
    capacity_ = 0;
  }
  char* host_ = nullptr;  // pinned
  char* device_ = nullptr;
  size_t capacity_ = 0, offset_ = 0, wraps_ = 0;
};

}  // namespace tscope::cuda

// Buffer's RAII plumbing and the host memory shared by the CPU backends (the ops live in
// backend_reference.cpp and backend_cpu.cpp).
#include "model/backend.h"

#include <cstring>

namespace tscope {

Buffer::~Buffer() {
  if (owner_ && data_) owner_->release(data_);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (owner_ && data_) owner_->release(data_);
    owner_ = other.owner_;
    data_ = other.data_;
    count_ = other.count_;
    other.owner_ = nullptr;
    other.data_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

Buffer HostBackend::allocate(size_t count) { return Buffer(this, count ? new float[count]() : nullptr, count); }
void HostBackend::release(float* data) { delete[] data; }
void HostBackend::upload(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void HostBackend::download(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void HostBackend::copy(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

}  // namespace tscope

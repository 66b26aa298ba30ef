// Buffer's RAII plumbing (the ops live in backend_reference.cpp and backend_cpu.cpp).
#include "model/backend.h"

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

}  // namespace tscope

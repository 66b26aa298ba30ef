// KV cache storage and bookkeeping.
#include "model/nn/kv_cache.h"

#include "model/core/error.h"

namespace tscope {

KVCache::KVCache(Backend& backend, const ModelConfig& config, int capacity)
    : backend_(&backend), L_(config.n_layer), C_(config.kvDim()), capacity_(capacity > 0 ? capacity : config.n_positions) {
  if (capacity_ > config.n_positions)
    throw Error("KV cache capacity " + std::to_string(capacity_) + " exceeds the context length " + std::to_string(config.n_positions));
  k_ = backend.allocate((size_t)L_ * capacity_ * C_);
  v_ = backend.allocate((size_t)L_ * capacity_ * C_);
}

void KVCache::truncate(int length) {
  if (length < 0 || length > length_) throw Error("KV cache: cannot truncate to " + std::to_string(length));
  length_ = length;
}

void KVCache::copyFrom(const KVCache& other) {
  if (other.L_ != L_ || other.C_ != C_ || other.capacity_ != capacity_) throw Error("KV cache: copy between different shapes");
  const size_t rows = (size_t)other.length_ * C_;
  for (int l = 0; l < L_; ++l) {
    const size_t offset = (size_t)l * capacity_ * C_;
    backend_->copy(k_.data() + offset, other.k_.data() + offset, rows);
    backend_->copy(v_.data() + offset, other.v_.data() + offset, rows);
  }
  length_ = other.length_;
}

}  // namespace tscope

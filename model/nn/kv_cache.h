// The KV cache: keys and values of every layer for the tokens seen so far, in backend memory,
// so decoding one more token costs one row of attention instead of a whole forward.
#pragma once
#include <cstddef>

#include "model/nn/backend.h"
#include "model/core/config.h"

namespace tscope {

class KVCache {
 public:
  KVCache(Backend& backend, const ModelConfig& config, int capacity = 0);  // 0 = n_positions
  int length() const { return length_; }
  int capacity() const { return capacity_; }
  float* keys(int layer) { return k_.data() + (size_t)layer * capacity_ * C_; }    // (capacity, Hkv D)
  float* values(int layer) { return v_.data() + (size_t)layer * capacity_ * C_; }  // (capacity, Hkv D)
  size_t bytesUsed() const { return 2 * sizeof(float) * (size_t)L_ * length_ * C_; }
  size_t bytesPerToken() const { return 2 * sizeof(float) * (size_t)L_ * C_; }
  void clear() { length_ = 0; }
  void truncate(int length);                       // forget everything past `length`
  void copyFrom(const KVCache& other);             // same config and capacity; copies the used rows
  void advance(int tokens) { length_ += tokens; }  // called by Transformer::forward

 private:
  Backend* backend_;
  int L_, C_, capacity_, length_ = 0;  // C_: row width Hkv * D (= C without grouped-query attention)
  Buffer k_, v_;                       // (L, capacity, Hkv D) each
};

}  // namespace tscope

// A 64-byte aligned allocator for float arrays. Eigen's vectorised kernels treat the unaligned
// head of an array with scalar code, which rounds differently, so results would depend on where
// malloc put a buffer; aligned storage keeps training bit-for-bit reproducible run to run.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace tscope {

template <typename T, size_t Alignment = 64>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) noexcept {}
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(Alignment))); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t(Alignment)); }
  bool operator==(const AlignedAllocator&) const noexcept { return true; }
  bool operator!=(const AlignedAllocator&) const noexcept { return false; }
};

using AlignedFloats = std::vector<float, AlignedAllocator<float>>;

}  // namespace tscope

// Shared pieces of the attention kernels (attention.cu, attention_decode.cu, attention_maps.cu):
// the argument block, the visible key range of a query, and the 64 x 64 score tile the fused
// forward and the map kernel both compute. Q and K tiles sit in shared memory transposed, (D, 64),
// with an XOR swizzle on 4-float groups, so the 16-byte reads of the score loop and the
// transposing stores of the tile loads are both free of bank conflicts (see loadTransposed).
#pragma once
#include <cuda_runtime.h>

#include "model/nn/backend.h"

namespace tscope::cuda {

constexpr int kTile = 64;                      // queries per block and keys per shared-memory tile
constexpr int kTileThreads = 256;              // 16 x 16 threads, each owning a 4 x 4 patch of the score tile
constexpr float kLog2e = 1.4426950408889634f;  // scores are kept in base 2 so exp2f does the exponentials
constexpr float kLn2 = 0.6931471805599453f;

// One attention call as the kernels see it (built by attentionParams() in attention.cu).
struct AttentionParams {
  int T, pos0, H, D, Tk, kvDim, rowWidth, group, window;
  int causal;
  float scale;  // 1 / sqrt(D)
};

// The parameters of `shape` (attention.cu); Tk and pos0 are bounds when shape.stepPosition.
AttentionParams attentionParams(const AttentionShape& shape);

// The visible keys of a query at position p are one contiguous range [first, last] (causal: no
// key after p; window w: |p - j| < w). Both ends never decrease as p grows, so the keys of a run
// of queries span [first(p_first), last(p_last)].
__device__ inline int firstVisibleKey(const AttentionParams& a, int p) { return a.window > 0 ? max(0, p - a.window + 1) : 0; }
__device__ inline int lastVisibleKey(const AttentionParams& a, int p, int Tk) {
  int last = a.causal ? p : Tk - 1;
  if (a.window > 0) last = min(last, p + a.window - 1);
  return min(last, Tk - 1);
}

// Index of element (d, row) of a transposed (D, 64) tile: the 4-row group is XORed with bits 2..4
// of d. A load warp writes 8 consecutive 4-column chunks of 4 rows (below), which then land in 32
// different banks; a 16-byte read of 4 consecutive rows at one d stays one aligned float4.
__device__ inline int swizzled(int d, int row) { return d * kTile + ((((row >> 2) ^ (d >> 2)) & 15) << 2) + (row & 3); }
__device__ inline int swizzledGroup(int d, int group) { return d * kTile + (((group ^ (d >> 2)) & 15) << 2); }

// dst (D, 64) transposed + swizzled = src rows [0, rows) (row r at src + r * rowStride, D floats);
// rows >= rows are zero. Thread mapping: lane = rr + 4 * cc reads 16 bytes of row 4g + rr at chunk
// 8b + cc, so each row's 8 lanes read one whole 128-byte line. kVector: one float4 load per chunk
// (needs D % 4 == 0 and 16-byte aligned rows); else four guarded scalar loads (any D).
template <bool kVector>
__device__ inline void loadTransposed(float* dst, const float* src, size_t rowStride, int rows, int D) {
  const int chunkBlocks = (D + 31) / 32;
  const int total = (kTile / 4) * chunkBlocks * 32;
  for (int index = threadIdx.x; index < total; index += blockDim.x) {
    const int rr = index & 3, cc = (index >> 2) & 7, rest = index >> 5;
    const int chunk = (rest % chunkBlocks) * 8 + cc, row = (rest / chunkBlocks) * 4 + rr;
    if (4 * chunk >= D) continue;
    if constexpr (kVector) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (row < rows) v = *reinterpret_cast<const float4*>(src + row * rowStride + 4 * chunk);
      dst[swizzled(4 * chunk + 0, row)] = v.x;
      dst[swizzled(4 * chunk + 1, row)] = v.y;
      dst[swizzled(4 * chunk + 2, row)] = v.z;
      dst[swizzled(4 * chunk + 3, row)] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int d = 4 * chunk + e;
        if (d < D) dst[swizzled(d, row)] = row < rows ? src[row * rowStride + d] : 0.0f;
      }
    }
  }
}

// dst (64, D) row-major = src rows [0, rows), zero past them (same alignment rules as above).
__device__ inline void loadRows(float* dst, const float* src, size_t rowStride, int rows, int D) {
  const int chunks = D / 4, total = kTile * chunks;
  for (int index = threadIdx.x; index < total; index += blockDim.x) {
    const int row = index / chunks, chunk = index % chunks;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) v = *reinterpret_cast<const float4*>(src + row * rowStride + 4 * chunk);
    *reinterpret_cast<float4*>(dst + row * D + 4 * chunk) = v;
  }
}

// s[i][j] = q(row 4ty + i) . k(key 4tx + j) over D, from the transposed tiles: per d, one float4
// of Q (a broadcast: a warp holds two values of ty) and one of K (16 consecutive float4s).
__device__ inline void scoreTile(float (&s)[4][4], const float* Qt, const float* Kt, int D, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) s[i][j] = 0.0f;
#pragma unroll 4
  for (int d = 0; d < D; ++d) {
    const float4 q = *reinterpret_cast<const float4*>(Qt + swizzledGroup(d, ty));
    const float4 k = *reinterpret_cast<const float4*>(Kt + swizzledGroup(d, tx));
    const float qs[4] = {q.x, q.y, q.z, q.w}, ks[4] = {k.x, k.y, k.z, k.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qs[i], ks[j], s[i][j]);
  }
}

}  // namespace tscope::cuda

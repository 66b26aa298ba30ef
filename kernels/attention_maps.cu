// The attention maps the UI draws, recomputed after the forward instead of written by it: scores
// (scaled q.k, ALiBi included, -inf where masked) and probs = exp(score - lse) (0 where masked),
// from the rotated Q in qkv, the cache's K and the per-row log-sum-exp the forward left behind, so
// the fused forward never writes a T x Tk array at all.
#include <cstdint>
#include <string>

#include "kernels/attention_tile.cuh"
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"

namespace tscope::cuda {
namespace {

// grid (key tiles, query tiles, heads), 256 threads; thread (ty, tx) writes rows 4ty..+3,
// keys 4tx..+3 of the tile: each row's 16 threads write 256 contiguous bytes. Tiles no query of
// the block can see are written (-inf, 0) without loading anything. probs or scores may be null.
template <bool kVector>
__global__ void __launch_bounds__(kTileThreads) attentionMapsKernel(float* probs, float* scores, const float* qkv, const float* kCache,
                                                                    const float* lse, const float* alibiSlopes, AttentionParams a) {
  extern __shared__ float4 sharedTiles[];  // Qt, Kt: (D rounded up to 4, 64) each
  float* Qt = reinterpret_cast<float*>(sharedTiles);
  float* Kt = Qt + kTile * ((a.D + 3) / 4 * 4);
  const int h = blockIdx.z, kvHead = h / a.group;
  const int k0 = blockIdx.x * kTile, q0 = blockIdx.y * kTile;
  const int rows = min(kTile, a.T - q0), keys = min(kTile, a.Tk - k0);
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int keyBegin = firstVisibleKey(a, a.pos0 + q0), keyEnd = lastVisibleKey(a, a.pos0 + q0 + rows - 1, a.Tk);
  const bool anyVisible = k0 <= keyEnd && k0 + keys - 1 >= keyBegin;  // uniform over the block
  float s[4][4] = {};
  if (anyVisible) {
    loadTransposed<kVector>(Qt, qkv + static_cast<size_t>(q0) * a.rowWidth + h * a.D, a.rowWidth, rows, a.D);
    loadTransposed<kVector>(Kt, kCache + static_cast<size_t>(k0) * a.kvDim + static_cast<size_t>(kvHead) * a.D, a.kvDim, keys, a.D);
    __syncthreads();
    scoreTile(s, Qt, Kt, a.D, ty, tx);
  }
  const float slope = alibiSlopes ? alibiSlopes[h] : 0.0f;
  // Float4 stores when every row of the map starts 16-byte aligned (Tk % 4 == 0, aligned bases).
  const bool vectorStores = a.Tk % 4 == 0 && reinterpret_cast<uintptr_t>(probs) % 16 == 0 && reinterpret_cast<uintptr_t>(scores) % 16 == 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * ty + i;
    if (row >= rows) continue;
    const int t = q0 + row, p = a.pos0 + t;
    const int first = firstVisibleKey(a, p), last = lastVisibleKey(a, p, a.Tk);
    const float rowLse = anyVisible ? lse[static_cast<size_t>(h) * a.T + t] : 0.0f;
    float score[4], prob[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int key = k0 + 4 * tx + j;
      const bool visible = key >= first && key <= last;
      score[j] = visible ? s[i][j] * a.scale - slope * static_cast<float>(abs(p - key)) : -INFINITY;
      prob[j] = visible ? expf(score[j] - rowLse) : 0.0f;
    }
    const size_t base = (static_cast<size_t>(h) * a.T + t) * a.Tk + k0 + 4 * tx;
    if (4 * tx >= keys) continue;
    if (vectorStores && 4 * tx + 3 < keys) {
      if (scores) *reinterpret_cast<float4*>(scores + base) = make_float4(score[0], score[1], score[2], score[3]);
      if (probs) *reinterpret_cast<float4*>(probs + base) = make_float4(prob[0], prob[1], prob[2], prob[3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (4 * tx + j >= keys) break;
        if (scores) scores[base + j] = score[j];
        if (probs) probs[base + j] = prob[j];
      }
    }
  }
}

constexpr int kMaxMapHeadDim = 256;
size_t mapSharedBytes(int D) { return 2 * static_cast<size_t>(kTile) * ((D + 3) / 4 * 4) * sizeof(float); }

}  // namespace

void launchAttentionMaps(float* probs, float* scores, const float* qkv, const float* kCache, const float* lse, const AttentionShape& s,
                         const float* alibiSlopes, cudaStream_t stream) {
  if (!probs && !scores) return;
  if (s.T <= 0) return;
  if (s.stepPosition) throw Error("attention maps: a recorded decode step has no host-known key count (request no maps there)");
  if (s.T > 65535 * kTile) throw Error("attention maps: too many new tokens in one call");
  if (s.nHead > 65535) throw Error("attention maps: more heads than one launch's grid takes");
  const AttentionParams a = attentionParams(s);
  const int D = s.headDim;
  const bool vector = D % 4 == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0 && reinterpret_cast<uintptr_t>(kCache) % 16 == 0;
  if (D > kMaxMapHeadDim) throw Error("attention maps: head dimension " + std::to_string(D) + " is above the CUDA backend's limit of 256");
  static const bool optedIn = [] {  // above 48 KiB (D > 96) a kernel must opt in
    for (const void* kernel : {reinterpret_cast<const void*>(attentionMapsKernel<true>), reinterpret_cast<const void*>(attentionMapsKernel<false>)})
      TSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(mapSharedBytes(kMaxMapHeadDim))));
    return true;
  }();
  (void)optedIn;
  const size_t dynamicShared = mapSharedBytes(D);
  const dim3 grid((s.keys() + kTile - 1) / kTile, (s.T + kTile - 1) / kTile, s.nHead);
  if (vector) attentionMapsKernel<true><<<grid, kTileThreads, dynamicShared, stream>>>(probs, scores, qkv, kCache, lse, alibiSlopes, a);
  else attentionMapsKernel<false><<<grid, kTileThreads, dynamicShared, stream>>>(probs, scores, qkv, kCache, lse, alibiSlopes, a);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

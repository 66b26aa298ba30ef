// Multi-head attention with a KV cache in every AttentionShape variant (causal or bidirectional,
// sliding window, grouped-query heads, RoPE, ALiBi). RoPE rotates Q and K in place (angles in
// double, as the reference does), the new K and V rows go to the cache, then a fused flash-style
// forward (online softmax over 64-key tiles in shared memory, fp32 throughout; Dao et al. 2022,
// "FlashAttention", algorithm 1) writes out (T, C) and the log-sum-exp of every score row, so the
// maps (attention_maps.cu) can be recomputed for only the heads the UI shows. Few queries (decode)
// go to the split-key kernels of attention_decode.cu instead.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention_tile.cuh"
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"
#include "kernels/rope_frequencies.cuh"

namespace tscope::cuda {
namespace {

constexpr int kDecodeMaxT = 16;  // at most this many queries: the split-key kernels keep more SMs busy

// The position of the first new token: *devicePosition in a recorded step, else pos0.
__device__ inline int firstPosition(int pos0, const int* devicePosition) { return devicePosition ? *devicePosition : pos0; }

// Rotates pair i of every Q head (H) and K head (Hkv) of row t by (pos0 + t) * f_i, f_i =
// base^(-2i/D) or Llama 3's scaled table (model/nn/positional.cpp; RoFormer, Su et al. 2021), in
// double as the reference does.
// One thread per (t, head, pair); qkv rows are rowWidth floats apart, K heads start at column C.
__global__ void ropeKernel(float* qkv, int T, int H, int kvHeads, int D, int rowWidth, int pos0, const int* devicePosition, RopeFrequencies rope) {
  const int pairs = D / 2, heads = H + kvHeads;
  const int start = firstPosition(pos0, devicePosition);
  const size_t total = static_cast<size_t>(T) * heads * pairs;
  for (size_t index = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(index % pairs);
    const int head = static_cast<int>((index / pairs) % heads);
    const int t = static_cast<int>(index / (static_cast<size_t>(pairs) * heads));
    const int column = head < H ? head * D : H * D + (head - H) * D;
    float* pair = qkv + static_cast<size_t>(t) * rowWidth + column + 2 * i;
    const double angle = (static_cast<double>(start) + t) * ropePairFrequency(rope, i, D);
    double sine, cosine;
    sincos(angle, &sine, &cosine);
    const double x0 = pair[0], x1 = pair[1];
    pair[0] = static_cast<float>(x0 * cosine - x1 * sine);
    pair[1] = static_cast<float>(x0 * sine + x1 * cosine);
  }
}

// kCache, vCache rows start .. start+T-1 (kvDim each) = the K and V parts of the new qkv rows.
__global__ void appendKvKernel(float* kCache, float* vCache, const float* qkv, int T, int C, int kvDim, int rowWidth, int pos0,
                               const int* devicePosition) {
  const int start = firstPosition(pos0, devicePosition);
  const size_t total = static_cast<size_t>(T) * kvDim;
  for (size_t index = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(index / kvDim), c = static_cast<int>(index % kvDim);
    const float* row = qkv + static_cast<size_t>(t) * rowWidth;
    kCache[static_cast<size_t>(start + t) * kvDim + c] = row[C + c];
    vCache[static_cast<size_t>(start + t) * kvDim + c] = row[C + kvDim + c];
  }
}

// grid (query tiles, H), 256 threads; thread (ty, tx) = (threadIdx.x / 16, threadIdx.x % 16) owns
// query rows 4ty .. 4ty+3 of the tile, keys 4tx .. 4tx+3 of each key tile and output columns
// 4tx + 64m (m < kColumnGroups = ceil(D / 64)). Shared memory: Qt (D, 64), then K (D, 64) reused
// for P (64 keys, 64 rows) once the scores are in registers, then V (64, D). The running max and
// the row sums live per thread (a row's 16 threads share the max through shuffles); the row sums
// are added up once at the end. Needs D % 4 == 0, D <= 64 * kColumnGroups, 16-byte aligned rows.
template <int kColumnGroups>
__global__ void __launch_bounds__(kTileThreads, 2) flashAttentionKernel(float* out, float* lse, const float* qkv, const float* kCache,
                                                                        const float* vCache, const float* alibiSlopes, AttentionParams a) {
  extern __shared__ float4 sharedTiles[];
  float* Qt = reinterpret_cast<float*>(sharedTiles);
  float* KPt = Qt + kTile * a.D;              // K tile, then the probabilities
  float* Vs = KPt + kTile * max(a.D, kTile);  // V tile
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const int h = blockIdx.y, kvHead = h / a.group;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kTile;  // the longest (last) causal tiles start first
  const int rows = min(kTile, a.T - q0);
  const float slope = alibiSlopes ? alibiSlopes[h] * kLog2e : 0.0f;
  const float scale = a.scale * kLog2e;
  loadTransposed<true>(Qt, qkv + static_cast<size_t>(q0) * a.rowWidth + h * a.D, a.rowWidth, rows, a.D);

  const int keyBegin = firstVisibleKey(a, a.pos0 + q0), keyEnd = lastVisibleKey(a, a.pos0 + q0 + rows - 1, a.Tk);
  float rowMax[4], rowSum[4], acc[4][kColumnGroups][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    rowMax[i] = -INFINITY;
    rowSum[i] = 0.0f;
#pragma unroll
    for (int m = 0; m < kColumnGroups; ++m)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][m][e] = 0.0f;
  }
  const size_t kvOffset = static_cast<size_t>(kvHead) * a.D;
  for (int k0 = keyBegin; k0 <= keyEnd; k0 += kTile) {
    const int keys = min(kTile, keyEnd - k0 + 1);
    __syncthreads();  // the previous tile's P and V are no longer read
    loadTransposed<true>(KPt, kCache + static_cast<size_t>(k0) * a.kvDim + kvOffset, a.kvDim, keys, a.D);
    loadRows(Vs, vCache + static_cast<size_t>(k0) * a.kvDim + kvOffset, a.kvDim, keys, a.D);
    __syncthreads();
    float s[4][4];
    scoreTile(s, Qt, KPt, a.D, ty, tx);
    // Scale, ALiBi and mask (base-2 units), then the online softmax update per row.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = 4 * ty + i, p = a.pos0 + q0 + row;
      const int first = firstVisibleKey(a, p), last = row < rows ? lastVisibleKey(a, p, a.Tk) : -1;
      float tileMax = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int key = k0 + 4 * tx + j;
        s[i][j] = key >= first && key <= last ? s[i][j] * scale - slope * static_cast<float>(abs(p - key)) : -INFINITY;
        tileMax = fmaxf(tileMax, s[i][j]);
      }
      for (int offset = 8; offset > 0; offset >>= 1) tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, offset));
      const float newMax = fmaxf(rowMax[i], tileMax);
      const float reference = newMax == -INFINITY ? 0.0f : newMax;  // a row with nothing visible yet: exp2f(-inf) = 0
      const float rescale = exp2f(rowMax[i] - reference);
      rowMax[i] = newMax;
      rowSum[i] *= rescale;
#pragma unroll
      for (int m = 0; m < kColumnGroups; ++m)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][m][e] *= rescale;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[i][j] = exp2f(s[i][j] - reference);
        rowSum[i] += s[i][j];
      }
    }
    __syncthreads();  // every thread is done reading K: the tile area now takes P
#pragma unroll
    for (int j = 0; j < 4; ++j) *reinterpret_cast<float4*>(KPt + swizzledGroup(4 * tx + j, ty)) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    __syncthreads();
    // acc[i][m] += sum_k P(row 4ty+i, k) V(k, 4tx + 64m .. +3)
#pragma unroll 4
    for (int k = 0; k < keys; ++k) {
      const float4 p4 = *reinterpret_cast<const float4*>(KPt + swizzledGroup(k, ty));
      const float ps[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
      for (int m = 0; m < kColumnGroups; ++m) {
        const int column = 4 * tx + 64 * m;
        if (column >= a.D) continue;
        const float4 v = *reinterpret_cast<const float4*>(Vs + k * a.D + column);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          acc[i][m][0] = fmaf(ps[i], v.x, acc[i][m][0]);
          acc[i][m][1] = fmaf(ps[i], v.y, acc[i][m][1]);
          acc[i][m][2] = fmaf(ps[i], v.z, acc[i][m][2]);
          acc[i][m][3] = fmaf(ps[i], v.w, acc[i][m][3]);
        }
      }
    }
  }
  // Row sums over the 16 threads of a row, then out = acc / sum and lse = ln(sum e^score).
  const int C = a.H * a.D;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float sum = rowSum[i];
    for (int offset = 8; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const int row = 4 * ty + i;
    if (row >= rows) continue;
    const int t = q0 + row;
    const float inverse = 1.0f / sum;
#pragma unroll
    for (int m = 0; m < kColumnGroups; ++m) {
      const int column = 4 * tx + 64 * m;
      if (column >= a.D) continue;
      *reinterpret_cast<float4*>(out + static_cast<size_t>(t) * C + h * a.D + column) =
          make_float4(acc[i][m][0] * inverse, acc[i][m][1] * inverse, acc[i][m][2] * inverse, acc[i][m][3] * inverse);
    }
    if (tx == 0) lse[static_cast<size_t>(h) * a.T + t] = (rowMax[i] + log2f(sum)) * kLn2;
  }
}

bool aligned16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

// Whether the tiled kernel applies: float4 rows (D % 4, 16-byte aligned bases) and D <= 128.
bool flashApplies(const float* out, const float* qkv, const float* kCache, const float* vCache, const AttentionShape& s) {
  return s.headDim % 4 == 0 && s.headDim <= 2 * kTile && aligned16(out) && aligned16(qkv) && aligned16(kCache) && aligned16(vCache);
}

size_t flashSharedBytes(int D) { return (static_cast<size_t>(2 * kTile) * D + static_cast<size_t>(kTile) * std::max(D, kTile)) * sizeof(float); }

template <int kColumnGroups>
void launchFlash(float* out, float* lse, const float* qkv, const float* kCache, const float* vCache, const float* alibiSlopes,
                 const AttentionParams& a, cudaStream_t stream) {
  // Above 48 KiB a kernel must opt in; 96 KiB (D = 128) still fits two blocks per SM on sm_90.
  static const bool optedIn = [] {
    TSCOPE_CUDA_CHECK(cudaFuncSetAttribute(flashAttentionKernel<kColumnGroups>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(flashSharedBytes(64 * kColumnGroups))));
    return true;
  }();
  (void)optedIn;
  const dim3 grid((a.T + kTile - 1) / kTile, a.H);
  flashAttentionKernel<kColumnGroups><<<grid, kTileThreads, flashSharedBytes(a.D), stream>>>(out, lse, qkv, kCache, vCache, alibiSlopes, a);
  TSCOPE_LAUNCH_CHECK();
}

bool usesSplitKeys(const float* out, const float* qkv, const float* kCache, const float* vCache, const AttentionShape& s) {
  return s.stepPosition || s.T <= kDecodeMaxT || !flashApplies(out, qkv, kCache, vCache, s);
}

}  // namespace

AttentionParams attentionParams(const AttentionShape& s) {
  AttentionParams a{};
  a.T = s.T;
  a.pos0 = s.pos0;
  a.H = s.nHead;
  a.D = s.headDim;
  a.Tk = s.keys();
  a.kvDim = s.kvDim();
  a.rowWidth = s.qkvDim();
  a.group = s.nHead / s.kvHeads();
  // |p - j| < Tk always, so clamping changes no mask and keeps p + window - 1 from overflowing.
  a.window = s.window > 0 ? std::min(s.window, s.keys()) : 0;
  a.causal = s.causal ? 1 : 0;
  a.scale = static_cast<float>(s.scale());
  return a;
}

// lse (H, T), then the split-key partials when the split kernels run.
size_t attentionScratchFloats(const AttentionShape& s, const float* out, const float* qkv, const float* kCache, const float* vCache) {
  const size_t lse = static_cast<size_t>(s.nHead) * s.T;
  return lse + (usesSplitKeys(out, qkv, kCache, vCache, s) ? attentionSplitFloats(s) : 0);
}

void launchAttention(float* out, float* qkv, float* kCache, float* vCache, const AttentionShape& s, const float* alibiSlopes,
                     const int* devicePosition, float* scratch, cudaStream_t stream) {
  const int H = s.nHead, D = s.headDim, C = H * D, T = s.T, kvDim = s.kvDim(), rowWidth = s.qkvDim();
  if (T <= 0) return;
  if (s.ropeBase > 0) {
    const size_t pairs = static_cast<size_t>(T) * (H + s.kvHeads()) * (D / 2);
    ropeKernel<<<blocksFor(pairs, 256), 256, 0, stream>>>(qkv, T, H, s.kvHeads(), D, rowWidth, s.pos0, devicePosition, ropeFrequenciesOf(s));
    TSCOPE_LAUNCH_CHECK();
  }
  const size_t appended = static_cast<size_t>(T) * kvDim;
  appendKvKernel<<<blocksFor(appended, 256), 256, 0, stream>>>(kCache, vCache, qkv, T, C, kvDim, rowWidth, s.pos0, devicePosition);
  TSCOPE_LAUNCH_CHECK();
  const AttentionParams a = attentionParams(s);
  float* lse = scratch;
  if (usesSplitKeys(out, qkv, kCache, vCache, s)) {
    launchAttentionSplit(out, lse, scratch + static_cast<size_t>(H) * T, qkv, kCache, vCache, s, alibiSlopes, devicePosition, stream);
  } else if (D <= kTile) {
    launchFlash<1>(out, lse, qkv, kCache, vCache, alibiSlopes, a, stream);
  } else {
    launchFlash<2>(out, lse, qkv, kCache, vCache, alibiSlopes, a, stream);
  }
}

}  // namespace tscope::cuda

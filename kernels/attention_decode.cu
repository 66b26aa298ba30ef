// Attention for few queries over many keys ("flash decoding", Dao et al. 2023): each query's
// visible keys are split into chunks, one block per (chunk, head, query) keeps a partial softmax
// (max, sum, unnormalised accumulator), and a combine kernel merges the chunks, so a single token
// over a 1024-key cache still spreads over the whole GPU. Also the fallback for head dimensions
// the tiled kernel does not take (any D up to 256). In a recorded step the position comes from
// device memory; grid sizes use only host bounds, and chunks past the position hold no visible
// key: they still run and write an empty partial (max -inf, sum 0, accumulator 0), which the
// combine kernel skips.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/attention_tile.cuh"
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"

namespace tscope::cuda {
namespace {

constexpr int kSplitThreads = 128;  // 16 groups of 8 lanes, a group per key
constexpr int kGroups = kSplitThreads / 8;
constexpr int kMinChunkKeys = 32;  // below this, a block spends more on its combine than on keys
constexpr int kMaxChunks = 256;    // the combine kernel keeps one weight per chunk in shared memory

// Lane `sub` of a group owns columns 32 * slot + 4 * sub .. +3 of a head (kSlots = ceil(D / 32)),
// so a group's 8 lanes read a 128-byte run of a key or value row per slot.
template <bool kVector>
__device__ inline void loadSlot(float (&v)[4], const float* row, int column, int D) {
  if constexpr (kVector) {
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (column < D) x = *reinterpret_cast<const float4*>(row + column);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = column + e < D ? row[column + e] : 0.0f;
  }
}

// grid (chunks, H, T), 128 threads. partials ((T, H, chunks), 2 + D): base-2 max, sum, then the
// accumulator relative to that max; with one chunk the block writes out and lse itself.
template <int kSlots, bool kVector>
__global__ void __launch_bounds__(kSplitThreads)
    splitAttentionKernel(float* out, float* lse, float* partials, const float* qkv, const float* kCache, const float* vCache,
                         const float* alibiSlopes, const int* devicePosition, AttentionParams a, int chunkKeys) {
  __shared__ float groupMax[kGroups], groupSum[kGroups];
  extern __shared__ float groupAcc[];  // (kGroups, D + 1): the +1 spreads the groups over the banks
  const int chunk = blockIdx.x, h = blockIdx.y, t = blockIdx.z, kvHead = h / a.group;
  const int group = threadIdx.x / 8, sub = threadIdx.x % 8;
  const int pos0 = devicePosition ? *devicePosition : a.pos0;
  const int Tk = devicePosition ? pos0 + a.T : a.Tk;
  const int p = pos0 + t;
  const int first = firstVisibleKey(a, p), last = lastVisibleKey(a, p, Tk);
  const int begin = first + chunk * chunkKeys, end = min(last, begin + chunkKeys - 1);  // empty past the visible keys
  const float scale = a.scale * kLog2e, slope = alibiSlopes ? alibiSlopes[h] * kLog2e : 0.0f;

  float q[kSlots][4], acc[kSlots][4];
  const float* qRow = qkv + static_cast<size_t>(t) * a.rowWidth + h * a.D;
#pragma unroll
  for (int slot = 0; slot < kSlots; ++slot) {
    loadSlot<kVector>(q[slot], qRow, 32 * slot + 4 * sub, a.D);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[slot][e] = 0.0f;
  }
  float runningMax = -INFINITY, runningSum = 0.0f;
  const size_t kvOffset = static_cast<size_t>(kvHead) * a.D;
  // The trip count is the same for the whole block (the shuffles below need every lane of the
  // warp); a group whose key is past the chunk loads nothing and skips the update.
  for (int j0 = begin; j0 <= end; j0 += kGroups) {
    const int j = j0 + group;
    const bool valid = j <= end;
    const float* kRow = kCache + static_cast<size_t>(valid ? j : begin) * a.kvDim + kvOffset;
    const float* vRow = vCache + static_cast<size_t>(valid ? j : begin) * a.kvDim + kvOffset;
    float k[kSlots][4], v[kSlots][4];
#pragma unroll
    for (int slot = 0; slot < kSlots; ++slot) {
      loadSlot<kVector>(k[slot], kRow, 32 * slot + 4 * sub, valid ? a.D : 0);
      loadSlot<kVector>(v[slot], vRow, 32 * slot + 4 * sub, valid ? a.D : 0);  // issued with K: both loads in flight at once
    }
    float dot = 0.0f;
#pragma unroll
    for (int slot = 0; slot < kSlots; ++slot)
#pragma unroll
      for (int e = 0; e < 4; ++e) dot = fmaf(q[slot][e], k[slot][e], dot);
    for (int offset = 4; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, offset);  // the group's 8 lanes
    if (!valid) continue;
    const float score = dot * scale - slope * static_cast<float>(abs(p - j));
    const float newMax = fmaxf(runningMax, score);
    const float rescale = exp2f(runningMax - newMax), weight = exp2f(score - newMax);  // first key: exp2f(-inf) = 0
    runningMax = newMax;
    runningSum = runningSum * rescale + weight;
#pragma unroll
    for (int slot = 0; slot < kSlots; ++slot)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[slot][e] = fmaf(weight, v[slot][e], acc[slot][e] * rescale);
  }

  // Merge the 16 groups: rescale each to the block's max, add the accumulators in shared memory.
  if (sub == 0) {
    groupMax[group] = runningMax;
    groupSum[group] = runningSum;
  }
  __syncthreads();
  float blockMax = -INFINITY;
  for (int g = 0; g < kGroups; ++g) blockMax = fmaxf(blockMax, groupMax[g]);
  const float reference = blockMax == -INFINITY ? 0.0f : blockMax;  // an empty chunk: everything stays 0
  const float own = exp2f(runningMax - reference);
  const int stride = a.D + 1;
#pragma unroll
  for (int slot = 0; slot < kSlots; ++slot)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int column = 32 * slot + 4 * sub + e;
      if (column < a.D) groupAcc[group * stride + column] = acc[slot][e] * own;
    }
  float total = 0.0f;
  for (int g = 0; g < kGroups; ++g) total += groupSum[g] * exp2f(groupMax[g] - reference);
  __syncthreads();
  const bool direct = gridDim.x == 1;
  float* partial = direct ? nullptr : partials + ((static_cast<size_t>(t) * a.H + h) * gridDim.x + chunk) * (2 + a.D);
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float value = 0.0f;
    for (int g = 0; g < kGroups; ++g) value += groupAcc[g * stride + d];
    if (direct) out[static_cast<size_t>(t) * a.H * a.D + h * a.D + d] = value / total;
    else partial[2 + d] = value;
  }
  if (threadIdx.x == 0) {
    if (direct) {
      lse[static_cast<size_t>(h) * a.T + t] = (blockMax + log2f(total)) * kLn2;
    } else {
      partial[0] = blockMax;
      partial[1] = total;
    }
  }
}

// grid (H, T): out (t, h) = sum_c acc_c 2^(m_c - M) / sum_c l_c 2^(m_c - M), M = max_c m_c; empty
// chunks (m = -inf, l = 0) weigh 0. lse = (M + log2 L) ln 2.
__global__ void combineChunksKernel(float* out, float* lse, const float* partials, int T, int H, int D, int chunks) {
  __shared__ float weight[kMaxChunks];
  __shared__ float totalShared;
  const int h = blockIdx.x, t = blockIdx.y;
  const float* base = partials + (static_cast<size_t>(t) * H + h) * chunks * (2 + D);
  float M = -INFINITY;
  for (int c = 0; c < chunks; ++c) M = fmaxf(M, base[static_cast<size_t>(c) * (2 + D)]);
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) weight[c] = exp2f(base[static_cast<size_t>(c) * (2 + D)] - M);
  __syncthreads();
  if (threadIdx.x == 0) {
    float L = 0.0f;
    for (int c = 0; c < chunks; ++c) L += base[static_cast<size_t>(c) * (2 + D) + 1] * weight[c];
    totalShared = L;
    lse[static_cast<size_t>(h) * T + t] = (M + log2f(L)) * kLn2;
  }
  __syncthreads();
  const float inverse = 1.0f / totalShared;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float value = 0.0f;
    for (int c = 0; c < chunks; ++c)  // empty chunks (weight 0) are skipped: 0 * anything stays out
      if (weight[c] != 0.0f) value = fmaf(base[static_cast<size_t>(c) * (2 + D) + 2 + d], weight[c], value);
    out[static_cast<size_t>(t) * H * D + h * D + d] = value * inverse;
  }
}

int multiprocessorCount() {
  static const int count = [] {
    int device = 0, sms = 0;
    TSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    TSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  }();
  return count;
}

struct SplitPlan {
  int chunks = 1;     // blocks per query
  int chunkKeys = 0;  // keys per block
};

// Enough chunks for about four blocks per SM over all (head, query) pairs, each of at least 32
// keys; from host bounds only (shape.keys() is the cache bound in a recorded step).
SplitPlan splitPlan(const AttentionShape& s) {
  int visible = s.keys();
  if (s.window > 0) visible = static_cast<int>(std::min<long long>(visible, s.causal ? s.window : 2LL * s.window - 1));
  visible = std::max(visible, 1);
  const long long pairs = static_cast<long long>(s.nHead) * s.T;
  const int wanted = static_cast<int>(std::min<long long>(kMaxChunks, std::max<long long>(1, (4LL * multiprocessorCount() + pairs - 1) / pairs)));
  SplitPlan plan;
  plan.chunkKeys = std::max(kMinChunkKeys, (visible + wanted - 1) / wanted);
  plan.chunkKeys = (plan.chunkKeys + kGroups - 1) / kGroups * kGroups;
  plan.chunks = (visible + plan.chunkKeys - 1) / plan.chunkKeys;
  return plan;
}

template <int kSlots>
void launchSplitKernel(float* out, float* lse, float* partials, const float* qkv, const float* kCache, const float* vCache, const float* alibiSlopes,
                       const int* devicePosition, const AttentionParams& a, const SplitPlan& plan, bool vector, cudaStream_t stream) {
  const dim3 grid(plan.chunks, a.H, a.T);
  const size_t shared = static_cast<size_t>(kGroups) * (a.D + 1) * sizeof(float);
  if (vector)
    splitAttentionKernel<kSlots, true>
        <<<grid, kSplitThreads, shared, stream>>>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan.chunkKeys);
  else
    splitAttentionKernel<kSlots, false>
        <<<grid, kSplitThreads, shared, stream>>>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan.chunkKeys);
  TSCOPE_LAUNCH_CHECK();
}

bool aligned16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

}  // namespace

size_t attentionSplitFloats(const AttentionShape& s) {
  const SplitPlan plan = splitPlan(s);
  return plan.chunks > 1 ? static_cast<size_t>(s.T) * s.nHead * plan.chunks * (2 + s.headDim) : 0;
}

void launchAttentionSplit(float* out, float* lse, float* partials, const float* qkv, const float* kCache, const float* vCache,
                          const AttentionShape& s, const float* alibiSlopes, const int* devicePosition, cudaStream_t stream) {
  const int D = s.headDim;
  if (D > 8 * 32) throw Error("attention: head dimension " + std::to_string(D) + " is above the CUDA backend's limit of 256");
  if (s.T > 65535) throw Error("attention: more than 65535 new tokens in one call");
  const AttentionParams a = attentionParams(s);
  const SplitPlan plan = splitPlan(s);
  const bool vector = D % 4 == 0 && aligned16(qkv) && aligned16(kCache) && aligned16(vCache);
  const int slots = (D + 31) / 32;
  if (slots <= 1) launchSplitKernel<1>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan, vector, stream);
  else if (slots <= 2) launchSplitKernel<2>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan, vector, stream);
  else if (slots <= 3) launchSplitKernel<3>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan, vector, stream);
  else if (slots <= 4) launchSplitKernel<4>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan, vector, stream);
  else launchSplitKernel<8>(out, lse, partials, qkv, kCache, vCache, alibiSlopes, devicePosition, a, plan, vector, stream);
  if (plan.chunks > 1) {
    combineChunksKernel<<<dim3(s.nHead, s.T), 128, 0, stream>>>(out, lse, partials, s.T, s.nHead, D, plan.chunks);
    TSCOPE_LAUNCH_CHECK();
  }
}

}  // namespace tscope::cuda

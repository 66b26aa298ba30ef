// Multi-head attention with a KV cache in every AttentionShape variant (causal or bidirectional,
// sliding window, grouped-query heads, RoPE, ALiBi). Written to be correct and simple, not fast:
// RoPE rotates Q and K in place (angles in double, as the reference does), the new K and V rows
// are appended to the cache, then one block per (head, query row) runs a two-pass softmax over
// that row held in global memory (the caller's probability map, or scratch) and sums the values.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kAttentionThreads = 128;

// Rotates pair i of every Q head (H) and K head (Hkv) of row t by (pos0 + t) * base^(-2i/D).
// One thread per (t, head, pair); qkv rows are rowWidth floats apart, K heads start at column C.
__global__ void ropeKernel(float* qkv, int T, int H, int kvHeads, int D, int rowWidth, int pos0, double base) {
  const int pairs = D / 2, heads = H + kvHeads;
  const size_t total = static_cast<size_t>(T) * heads * pairs;
  for (size_t index = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(index % pairs);
    const int head = static_cast<int>((index / pairs) % heads);
    const int t = static_cast<int>(index / (static_cast<size_t>(pairs) * heads));
    const int column = head < H ? head * D : H * D + (head - H) * D;
    float* pair = qkv + static_cast<size_t>(t) * rowWidth + column + 2 * i;
    const double angle = (static_cast<double>(pos0) + t) * pow(base, -2.0 * i / D);
    double sine, cosine;
    sincos(angle, &sine, &cosine);
    const double x0 = pair[0], x1 = pair[1];
    pair[0] = static_cast<float>(x0 * cosine - x1 * sine);
    pair[1] = static_cast<float>(x0 * sine + x1 * cosine);
  }
}

// kCache, vCache rows pos0 .. pos0+T-1 (kvDim each) = the K and V parts of the new qkv rows.
__global__ void appendKvKernel(float* kCache, float* vCache, const float* qkv, int T, int C, int kvDim, int rowWidth, int pos0) {
  const size_t total = static_cast<size_t>(T) * kvDim;
  for (size_t index = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const int t = static_cast<int>(index / kvDim), c = static_cast<int>(index % kvDim);
    const float* row = qkv + static_cast<size_t>(t) * rowWidth;
    kCache[static_cast<size_t>(pos0 + t) * kvDim + c] = row[C + c];
    vCache[static_cast<size_t>(pos0 + t) * kvDim + c] = row[C + kvDim + c];
  }
}

struct AttentionArgs {
  int T, pos0, H, D, Tk, kvDim, rowWidth, group, window;
  bool causal;
  float scale;
};

// grid (H, T): one block per (head h, query row t). probs (H, T, Tk) receives the row; scores
// (H, T, Tk) may be null. Masked keys: probability 0, score -inf.
__global__ void attentionKernel(float* out, float* probs, float* scores, const float* qkv, const float* kCache, const float* vCache,
                                const float* alibiSlopes, AttentionArgs a) {
  extern __shared__ float query[];  // (D)
  const int h = blockIdx.x, t = blockIdx.y, kvHead = h / a.group, position = a.pos0 + t;
  // The visible keys form one contiguous range [first, last].
  int first = 0, last = a.causal ? position : a.Tk - 1;
  if (a.window > 0) {
    first = max(0, position - a.window + 1);
    last = min(last, position + a.window - 1);
  }
  const float slope = alibiSlopes ? alibiSlopes[h] : 0.0f;
  const size_t mapRow = (static_cast<size_t>(h) * a.T + t) * a.Tk;
  float* row = probs + mapRow;
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) query[d] = qkv[static_cast<size_t>(t) * a.rowWidth + h * a.D + d];
  __syncthreads();

  // Pass 1: scaled scores (ALiBi included) and their maximum.
  float localMax = -INFINITY;
  for (int j = threadIdx.x; j < a.Tk; j += blockDim.x) {
    float score = -INFINITY;
    if (j >= first && j <= last) {
      const float* key = kCache + static_cast<size_t>(j) * a.kvDim + kvHead * a.D;
      float dot = 0.0f;
      for (int d = 0; d < a.D; ++d) dot += query[d] * key[d];
      score = dot * a.scale - slope * static_cast<float>(abs(position - j));
      localMax = fmaxf(localMax, score);
    }
    row[j] = score;
    if (scores) scores[mapRow + j] = score;
  }
  const float rowMax = blockMax(localMax);
  // Pass 2: exponentials and their sum, then normalise (masked keys give exp(-inf) = 0).
  float localSum = 0.0f;
  for (int j = threadIdx.x; j < a.Tk; j += blockDim.x) {
    const float e = (j >= first && j <= last) ? expf(row[j] - rowMax) : 0.0f;
    row[j] = e;
    localSum += e;
  }
  const float inverse = 1.0f / blockSum(localSum);
  for (int j = threadIdx.x; j < a.Tk; j += blockDim.x) row[j] *= inverse;
  __syncthreads();  // the whole row is written before any thread reads it below
  // out (t, h*D + d) = sum_j p_j v_j[d]
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = first; j <= last; ++j) acc += row[j] * vCache[static_cast<size_t>(j) * a.kvDim + kvHead * a.D + d];
    out[static_cast<size_t>(t) * (a.H * a.D) + h * a.D + d] = acc;
  }
}

}  // namespace

void launchAttention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s,
                     const float* alibiSlopes, float* rowScratch, cudaStream_t stream) {
  const int H = s.nHead, D = s.headDim, C = H * D, T = s.T, kvDim = s.kvDim(), rowWidth = s.qkvDim();
  if (T <= 0) return;
  if (s.ropeBase > 0) {
    const size_t pairs = static_cast<size_t>(T) * (H + s.kvHeads()) * (D / 2);
    ropeKernel<<<blocksFor(pairs, 256), 256, 0, stream>>>(qkv, T, H, s.kvHeads(), D, rowWidth, s.pos0, s.ropeBase);
    TSCOPE_LAUNCH_CHECK();
  }
  const size_t appended = static_cast<size_t>(T) * kvDim;
  appendKvKernel<<<blocksFor(appended, 256), 256, 0, stream>>>(kCache, vCache, qkv, T, C, kvDim, rowWidth, s.pos0);
  TSCOPE_LAUNCH_CHECK();
  AttentionArgs args{T, s.pos0, H, D, s.keys(), kvDim, rowWidth, H / s.kvHeads(), s.window, s.causal, 1.0f / sqrtf(static_cast<float>(D))};
  const dim3 grid(H, T);
  attentionKernel<<<grid, kAttentionThreads, D * sizeof(float), stream>>>(out, probs ? probs : rowScratch, scores, qkv, kCache, vCache,
                                                                          alibiSlopes, args);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

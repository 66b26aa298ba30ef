// Attention backward on the device for every AttentionShape variant (causal or bidirectional,
// sliding window, GQA/MQA, RoPE, ALiBi), one sequence at a time, deterministic (no atomics).
// Simple and correct rather than flash-style: per sequence,
//   1. one block per (head, query row) recomputes the scores from qkv exactly as the forward
//      does, their softmax P and dS = P (dP - sum P dP) * scale (dP_j = dy . v_j), keeps P and
//      dS in scratch (H, T, T) each, and adds dq = sum_j dS_j k_j;
//   2. one block per (kv head, key row) sums over the queries (and the query heads of its group)
//      dk = sum dS q and dv = sum P dy.
// With RoPE, Q and K in qkv are the rotated ones; their gradients are turned back by the same
// angle (a rotation is orthogonal: g0 cos + g1 sin, -g0 sin + g1 cos), angles in double as the
// forward's ropeKernel computes them. Derivation in model/train/backward_reference.cpp.
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"
#include "kernels/rope_frequencies.cuh"

namespace tscope::cuda {
namespace {

constexpr int kThreads = 128;

struct BackwardArgs {
  int T, H, D, C, kvDim, width, group, window;
  bool causal;
  float scale;
  RopeFrequencies rope;  // base 0: no RoPE
};

// The contiguous range of keys query t sees, and of queries that see key j (AttentionShape::visible).
__device__ inline void keyRange(const BackwardArgs& a, int t, int* first, int* last) {
  *first = a.window > 0 ? max(0, t - a.window + 1) : 0;
  *last = a.causal ? t : (a.window > 0 ? min(a.T - 1, t + a.window - 1) : a.T - 1);
}
__device__ inline void queryRange(const BackwardArgs& a, int j, int* first, int* last) {
  *first = a.causal ? j : (a.window > 0 ? max(0, j - a.window + 1) : 0);
  *last = a.window > 0 ? min(a.T - 1, j + a.window - 1) : a.T - 1;
}

// Adds the gradient g (D, shared) of a rotated head at position `position` to dst, turned back.
__device__ inline void addRotatedBack(float* dst, const float* g, int D, int position, const RopeFrequencies& rope) {
  if (rope.base <= 0) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) dst[d] += g[d];
    return;
  }
  for (int i = threadIdx.x; i < D / 2; i += blockDim.x) {
    const double angle = static_cast<double>(position) * ropePairFrequency(rope, i, D);
    double sine, cosine;
    sincos(angle, &sine, &cosine);
    const double g0 = g[2 * i], g1 = g[2 * i + 1];
    dst[2 * i] += static_cast<float>(g0 * cosine + g1 * sine);
    dst[2 * i + 1] += static_cast<float>(-g0 * sine + g1 * cosine);
  }
}

// grid (H, T), one sequence: x (T, width) its qkv, dy (T, C) its dout, dx (T, width) its dqkv.
// probs, dscores (H, T, T): this kernel writes every entry of its row (0 where masked).
__global__ void attentionQueryBackwardKernel(float* dx, float* probs, float* dscores, const float* x, const float* dy, const float* alibiSlopes,
                                             BackwardArgs a) {
  extern __shared__ float shared[];  // query (D) | dyRow (D) | dq (D)
  float* query = shared;
  float* dyRow = shared + a.D;
  float* dq = shared + 2 * a.D;
  const int h = blockIdx.x, t = blockIdx.y, kvHead = h / a.group;
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    query[d] = x[static_cast<size_t>(t) * a.width + h * a.D + d];
    dyRow[d] = dy[static_cast<size_t>(t) * a.C + h * a.D + d];
  }
  __syncthreads();
  float* p = probs + (static_cast<size_t>(h) * a.T + t) * a.T;
  float* ds = dscores + (static_cast<size_t>(h) * a.T + t) * a.T;
  int first, last;
  keyRange(a, t, &first, &last);
  const float slope = alibiSlopes ? alibiSlopes[h] : 0.0f;
  // Scores (into p for now) and their maximum; each thread owns keys j = threadIdx.x + k blockDim.
  float maxScore = -INFINITY;
  for (int j = threadIdx.x; j < a.T; j += blockDim.x) {
    if (j < first || j > last) continue;
    const float* key = x + static_cast<size_t>(j) * a.width + a.C + kvHead * a.D;
    float dot = 0.0f;
    for (int d = 0; d < a.D; ++d) dot += query[d] * key[d];
    const float score = dot * a.scale - slope * fabsf(static_cast<float>(t - j));
    p[j] = score;
    maxScore = fmaxf(maxScore, score);
  }
  maxScore = blockMax(maxScore);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < a.T; j += blockDim.x) {
    const float e = (j < first || j > last) ? 0.0f : expf(p[j] - maxScore);
    p[j] = e;
    sum += e;
  }
  const float inverse = 1.0f / blockSum(sum);
  // P and dP_j = dy . v_j (into ds for now), and sum_j P_j dP_j.
  float weighted = 0.0f;
  for (int j = threadIdx.x; j < a.T; j += blockDim.x) {
    const float pj = p[j] * inverse;
    p[j] = pj;
    float dp = 0.0f;
    if (j >= first && j <= last) {
      const float* value = x + static_cast<size_t>(j) * a.width + a.C + a.kvDim + kvHead * a.D;
      for (int d = 0; d < a.D; ++d) dp += dyRow[d] * value[d];
    }
    ds[j] = dp;
    weighted += pj * dp;
  }
  weighted = blockSum(weighted);
  for (int j = threadIdx.x; j < a.T; j += blockDim.x) ds[j] = p[j] * (ds[j] - weighted) * a.scale;
  __syncthreads();  // every ds[j] of this row is written (global writes are visible within the block)
  // dq = sum_j dS_j k_j (the rotated keys: the gradient of the rotated query)
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = first; j <= last; ++j) acc += ds[j] * x[static_cast<size_t>(j) * a.width + a.C + kvHead * a.D + d];
    dq[d] = acc;
  }
  __syncthreads();
  addRotatedBack(dx + static_cast<size_t>(t) * a.width + h * a.D, dq, a.D, t, a.rope);
}

// grid (Hkv, T): key/value row j of kv head g: dk = sum over the group's heads h and the queries t
// that see j of dS[h, t, j] q[t, h]; dv = sum of P[h, t, j] dy[t, h].
__global__ void attentionKeyBackwardKernel(float* dx, const float* probs, const float* dscores, const float* x, const float* dy, BackwardArgs a) {
  extern __shared__ float dk[];  // (D)
  const int kvHead = blockIdx.x, j = blockIdx.y;
  int first, last;
  queryRange(a, j, &first, &last);
  float* dvRow = dx + static_cast<size_t>(j) * a.width + a.C + a.kvDim + kvHead * a.D;
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float accK = 0.0f, accV = 0.0f;
    for (int h = kvHead * a.group; h < (kvHead + 1) * a.group; ++h)
      for (int t = first; t <= last; ++t) {
        const size_t entry = (static_cast<size_t>(h) * a.T + t) * a.T + j;
        accK += dscores[entry] * x[static_cast<size_t>(t) * a.width + h * a.D + d];
        accV += probs[entry] * dy[static_cast<size_t>(t) * a.C + h * a.D + d];
      }
    dk[d] = accK;
    dvRow[d] += accV;
  }
  __syncthreads();
  addRotatedBack(dx + static_cast<size_t>(j) * a.width + a.C + kvHead * a.D, dk, a.D, j, a.rope);
}

}  // namespace

size_t attentionBackwardScratchFloats(const AttentionShape& s) {
  return 2 * static_cast<size_t>(s.nHead) * s.T * s.T;  // probs | dscores of one sequence
}

void launchAttentionBackward(float* dqkv, const float* dout, const float* qkv, const AttentionShape& s, int batch, const float* alibiSlopes,
                             float* scratch, cudaStream_t stream) {
  if (s.pos0 != 0) throw Error("attention backward: training attention has no cache (pos0 must be 0)");
  if (s.T <= 0 || batch <= 0) return;
  if (s.nKvHead > 0 && s.nHead % s.nKvHead != 0) throw Error("attention backward: nKvHead must divide nHead");
  if (s.ropeBase > 0 && s.headDim % 2 != 0) throw Error("attention backward: RoPE needs an even head dimension");
  BackwardArgs a{};
  a.T = s.T;
  a.H = s.nHead;
  a.D = s.headDim;
  a.C = s.nHead * s.headDim;
  a.kvDim = s.kvDim();
  a.width = s.qkvDim();
  a.group = s.nHead / s.kvHeads();
  a.window = s.window;
  a.causal = s.causal;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.headDim)));
  a.rope = ropeFrequenciesOf(s);
  float* probs = scratch;
  float* dscores = scratch + static_cast<size_t>(s.nHead) * s.T * s.T;
  const size_t queryShared = 3 * static_cast<size_t>(a.D) * sizeof(float), keyShared = static_cast<size_t>(a.D) * sizeof(float);
  for (int b = 0; b < batch; ++b) {
    const float* x = qkv + static_cast<size_t>(b) * s.T * a.width;
    const float* dy = dout + static_cast<size_t>(b) * s.T * a.C;
    float* dx = dqkv + static_cast<size_t>(b) * s.T * a.width;
    attentionQueryBackwardKernel<<<dim3(a.H, a.T), kThreads, queryShared, stream>>>(dx, probs, dscores, x, dy, alibiSlopes, a);
    TSCOPE_LAUNCH_CHECK();
    attentionKeyBackwardKernel<<<dim3(s.kvHeads(), a.T), kThreads, keyShared, stream>>>(dx, probs, dscores, x, dy, a);
    TSCOPE_LAUNCH_CHECK();
  }
}

}  // namespace tscope::cuda

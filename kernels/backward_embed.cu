// Embedding backward on the device, deterministic without atomics: the caller buckets the (host)
// token ids, so each vocabulary row that occurs gets one block that sums its rows of dout in row
// order; the positions' gradient sums the B sequences' rows of each position in order.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

// grid (buckets, column tiles): dwte[bucketTokens[u], c] += sum of dout[r, c] over the bucket's rows.
__global__ void embedTokensBackwardKernel(float* dwte, const float* dout, const int* bucketTokens, const int* bucketStarts, const int* bucketRows,
                                          int C) {
  const int u = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sum = 0.0f;
  for (int i = bucketStarts[u]; i < bucketStarts[u + 1]; ++i) sum += dout[static_cast<size_t>(bucketRows[i]) * C + c];
  dwte[static_cast<size_t>(bucketTokens[u]) * C + c] += sum;
}

// One thread per (t, c): dpositions[t, c] += sum over b of dout[b*T + t, c].
__global__ void embedPositionsBackwardKernel(float* dpositions, const float* dout, int sequences, int T, int C) {
  const size_t total = static_cast<size_t>(T) * C;
  for (size_t index = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int b = 0; b < sequences; ++b) sum += dout[static_cast<size_t>(b) * T * C + index];
    dpositions[index] += sum;
  }
}

}  // namespace

void launchEmbedTokensBackward(float* dwte, const float* dout, const int* bucketTokens, const int* bucketStarts, const int* bucketRows, int buckets,
                               int C, cudaStream_t stream) {
  if (buckets <= 0 || C <= 0) return;
  constexpr int threads = 256;
  const dim3 grid(buckets, (C + threads - 1) / threads);
  embedTokensBackwardKernel<<<grid, threads, 0, stream>>>(dwte, dout, bucketTokens, bucketStarts, bucketRows, C);
  TSCOPE_LAUNCH_CHECK();
}

void launchEmbedPositionsBackward(float* dpositions, const float* dout, int rows, int T, int C, cudaStream_t stream) {
  if (rows <= 0 || T <= 0 || C <= 0) return;
  const size_t total = static_cast<size_t>(T) * C;
  embedPositionsBackwardKernel<<<blocksFor(total, 256), 256, 0, stream>>>(dpositions, dout, rows / T, T, C);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

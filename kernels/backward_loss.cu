// Softmax cross-entropy and its gradient on the device: one block per row of logits finds the
// maximum and the sum of exponentials (block reductions), then writes dlogits. Every thread reads
// only the entries it later overwrites, and the target's logit is read before any write, so
// dlogits may alias logits (the training pass computes it in place).
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kThreads = 256;

// grid (rows): rowLoss[r] = logsumexp(row) - row[target] (0 unscored);
// drow[v] = scale (softmax_v - [v == target]) (0 unscored).
__global__ void crossEntropyBackwardKernel(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int V, float scale,
                                           double* rowLoss) {
  const size_t r = blockIdx.x;
  const float* row = logits + r * V;
  float* drow = dlogits + r * V;
  if (scored && !scored[r]) {
    for (int v = threadIdx.x; v < V; v += blockDim.x) drow[v] = 0.0f;
    if (threadIdx.x == 0) rowLoss[r] = 0.0;
    return;
  }
  const int target = targets[r];
  float maxLogit = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) maxLogit = fmaxf(maxLogit, row[v]);
  maxLogit = blockMax(maxLogit);
  float sum = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) sum += expf(row[v] - maxLogit);
  const float logSum = logf(blockSum(sum)) + maxLogit;  // blockSum's barriers order every read above before the writes below
  const float targetLogit = row[target];
  __syncthreads();  // the target's logit is read by all threads before its owner overwrites it
  if (threadIdx.x == 0) rowLoss[r] = static_cast<double>(logSum) - static_cast<double>(targetLogit);
  for (int v = threadIdx.x; v < V; v += blockDim.x) drow[v] = scale * (expf(row[v] - logSum) - (v == target ? 1.0f : 0.0f));
}

}  // namespace

void launchCrossEntropyBackward(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale,
                                double* rowLoss, cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return;
  crossEntropyBackwardKernel<<<rows, kThreads, 0, stream>>>(dlogits, logits, targets, scored, V, scale, rowLoss);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

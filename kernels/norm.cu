// LayerNorm and RMSNorm over the last axis: one block per row, block reductions in float with
// the mean subtracted before squaring (two passes over the row, which stays in L1/L2).
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kNormThreads = 256;

// out (T, C) = (x - mean) / sqrt(var + eps) * weight + bias; grid (T).
__global__ void layerNormKernel(float* out, const float* in, const float* weight, const float* bias, int C, float eps) {
  const float* x = in + static_cast<size_t>(blockIdx.x) * C;
  float* o = out + static_cast<size_t>(blockIdx.x) * C;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += x[c];
  const float mean = blockSum(sum) / static_cast<float>(C);
  float squares = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) squares += (x[c] - mean) * (x[c] - mean);
  const float rstd = rsqrtf(blockSum(squares) / static_cast<float>(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = (x[c] - mean) * rstd * weight[c] + (bias ? bias[c] : 0.0f);
}

// out (T, C) = x / sqrt(mean(x^2) + eps) * weight; grid (T).
__global__ void rmsNormKernel(float* out, const float* in, const float* weight, int C, float eps) {
  const float* x = in + static_cast<size_t>(blockIdx.x) * C;
  float* o = out + static_cast<size_t>(blockIdx.x) * C;
  float squares = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) squares += x[c] * x[c];
  const float rrms = rsqrtf(blockSum(squares) / static_cast<float>(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * rrms * weight[c];
}

}  // namespace

void launchLayerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps, cudaStream_t stream) {
  if (T <= 0) return;
  layerNormKernel<<<T, kNormThreads, 0, stream>>>(out, in, weight, bias, C, eps);
  TSCOPE_LAUNCH_CHECK();
}

void launchRmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps, cudaStream_t stream) {
  if (T <= 0) return;
  rmsNormKernel<<<T, kNormThreads, 0, stream>>>(out, in, weight, C, eps);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

// The optimizer on the device: AdamW's element-wise update (model/train/optimizer.h, torch.optim.AdamW's
// order of operations) and the global gradient norm for clipping. The update uses the explicitly
// rounded intrinsics (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn), which nvcc never contracts into
// an FMA, so each element is computed with the same float roundings as the CPU loop. The squared
// norm is summed in double in a fixed order (per-block partials, then one block adds them in
// order), so it is deterministic (though summed in a different order than the CPU's index order).
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kSumBlocks = 1024;  // partials of the squared norm

__global__ void adamwKernel(float* params, const float* grads, float* m, float* v, const uint8_t* decayMask, size_t n, AdamWScalars s) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float g = grads[i];
    float p = params[i];
    if (decayMask == nullptr || decayMask[i] != 0) p = __fmul_rn(p, s.decayFactor);
    const float mi = __fadd_rn(__fmul_rn(m[i], s.b1), __fmul_rn(s.oneMinusB1, g));
    const float vi = __fadd_rn(__fmul_rn(v[i], s.b2), __fmul_rn(__fmul_rn(s.oneMinusB2, g), g));  // (1 - b2) * g * g, left to right
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.biasCorrection2Sqrt), s.eps);
    params[i] = __fsub_rn(p, __fmul_rn(s.stepSize, __fdiv_rn(mi, denom)));
  }
}

// Double-precision block sum (reduce.cuh's is float): warp shuffles, then one value per warp.
__device__ inline double blockSumDouble(double value) {
  __shared__ double partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  __syncthreads();
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  value = lane < warps ? partial[lane] : 0.0;
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// grid (kSumBlocks): partials[block] = sum of x[i]^2 over the block's grid-stride elements.
__global__ void sumSquaresPartialKernel(double* partials, const float* x, size_t n) {
  double sum = 0.0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  sum = blockSumDouble(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// One block: *result = sum of the partials.
__global__ void sumSquaresFinishKernel(double* result, const double* partials, int count) {
  double sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = blockSumDouble(sum);
  if (threadIdx.x == 0) *result = sum;
}

__global__ void scaleKernel(float* x, size_t n, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = __fmul_rn(x[i], scale);
}

}  // namespace

void launchAdamW(float* params, const float* grads, float* m, float* v, const uint8_t* decayMask, size_t n, const AdamWScalars& scalars,
                 cudaStream_t stream) {
  if (n == 0) return;
  adamwKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(params, grads, m, v, decayMask, n, scalars);
  TSCOPE_LAUNCH_CHECK();
}

size_t sumSquaresScratchDoubles() { return kSumBlocks; }

void launchSumSquares(double* result, const float* x, size_t n, double* scratch, cudaStream_t stream) {
  sumSquaresPartialKernel<<<kSumBlocks, kThreads, 0, stream>>>(scratch, x, n);
  TSCOPE_LAUNCH_CHECK();
  sumSquaresFinishKernel<<<1, kThreads, 0, stream>>>(result, scratch, kSumBlocks);
  TSCOPE_LAUNCH_CHECK();
}

void launchScale(float* x, size_t n, float scale, cudaStream_t stream) {
  if (n == 0) return;
  scaleKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(x, n, scale);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

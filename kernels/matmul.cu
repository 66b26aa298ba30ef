// Matrix products through cuBLAS SGEMM (FP32, cuBLAS's default math mode: no TF32). cuBLAS is
// column-major; a row-major (R, C) matrix is the column-major (C, R) matrix, its transpose, so
// out = in . W is computed as out^T = W^T . in^T with the operands swapped and nothing copied.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

// out (T, N) += bias (N), grid-stride over T * N.
__global__ void addBiasKernel(float* out, const float* bias, size_t total, int N) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] += bias[i % N];
}

}  // namespace

void launchMatmul(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                  cudaStream_t stream) {
  if (T <= 0 || N <= 0) return;
  const float one = 1.0f, zero = 0.0f;
  // Column-major: out^T (N, T) = weight^T (N, K; stored as row-major (K, N), ld N) . in^T (K, T; ld K).
  TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, N, T, K, &one, weight, N, in, K, &zero, out, N));
  if (bias) {
    const size_t total = static_cast<size_t>(T) * N;
    addBiasKernel<<<blocksFor(total, 256), 256, 0, stream>>>(out, bias, total, N);
    TSCOPE_LAUNCH_CHECK();
  }
}

void launchMatmulTransposed(cublasHandle_t cublas, float* out, const float* in, const float* weight, int T, int K, int N) {
  if (T <= 0 || N <= 0) return;
  const float one = 1.0f, zero = 0.0f;
  // Column-major: out^T (N, T) = weight (N, K) . in^T (K, T); row-major weight (N, K) is the
  // column-major (K, N) matrix with ld K, so cuBLAS transposes it back (OP_T).
  TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, weight, K, in, K, &zero, out, N));
}

}  // namespace tscope::cuda

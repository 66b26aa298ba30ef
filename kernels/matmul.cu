// Matrix products through cuBLAS SGEMM (FP32, cuBLAS's default math mode: no TF32). cuBLAS is
// column-major; a row-major (R, C) matrix is the column-major (C, R) matrix, its transpose, so
// out = in . W is computed as out^T = W^T . in^T with the operands swapped and nothing copied.
// Bias (and activation, for matmulActivate) is one vectorised pass after the product.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

// out (T, N) = in (T, K) . weight (K, N), no bias. T == 1 (a decode step) is a GEMV: with the
// row-major weight seen as the column-major (N, K) matrix, out = W_cm . in is cublasSgemv OP_N,
// whose threads walk down columns of W_cm (consecutive n) so every weight byte is read once,
// coalesced; that is the floor for batch-1 decode (the weight read). GEMM with n = 1 would
// usually be routed to a GEMV too, but saying so removes the dependence on cuBLAS's heuristics.
void product(cublasHandle_t cublas, float* out, const float* in, const float* weight, int T, int K, int N) {
  const float one = 1.0f, zero = 0.0f;
  if (T == 1 && K > 0) {  // (K == 0: GEMM writes zeros, GEMV would return without writing)
    TSCOPE_CUBLAS_CHECK(cublasSgemv(cublas, CUBLAS_OP_N, N, K, &one, weight, N, in, 1, &zero, out, 1));
    return;
  }
  // Column-major: out^T (N, T) = weight^T (N, K; stored as row-major (K, N), ld N) . in^T (K, T; ld K).
  // cuBLAS wants every leading dimension >= 1, also for K == 0 (then out = 0).
  const int ldIn = K > 0 ? K : 1;
  TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, N, T, K, &one, weight, N, in, ldIn, &zero, out, N));
}

}  // namespace

void launchMatmul(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                  cudaStream_t stream) {
  if (T <= 0 || N <= 0) return;
  product(cublas, out, in, weight, T, K, N);
  launchBiasActivate(out, bias, T, N, false, Activation::Relu, stream);  // bias only; nothing when bias is null
}

// The bias and the activation are one pass over out after the product (T N floats read and
// written once). cuBLASLt's GELU_BIAS epilogue would save that pass but is the tanh form only,
// and its FP32 kernels are chosen by heuristics this project does not pin; see the report.
void launchMatmulActivate(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                          Activation activation, cudaStream_t stream) {
  if (T <= 0 || N <= 0) return;
  product(cublas, out, in, weight, T, K, N);
  launchBiasActivate(out, bias, T, N, true, activation, stream);
}

void launchMatmulTransposed(cublasHandle_t cublas, float* out, const float* in, const float* weight, int T, int K, int N) {
  if (T <= 0 || N <= 0) return;
  const float one = 1.0f, zero = 0.0f;
  if (T == 1 && K > 0) {
    // The unembedding of a decode step: out (N) = weight (N, K) . in; the row-major weight is the
    // column-major (K, N) matrix, so this is GEMV OP_T (one dot product per contiguous weight row).
    TSCOPE_CUBLAS_CHECK(cublasSgemv(cublas, CUBLAS_OP_T, K, N, &one, weight, K, in, 1, &zero, out, 1));
    return;
  }
  // Column-major: out^T (N, T) = weight (N, K) . in^T (K, T); row-major weight (N, K) is the
  // column-major (K, N) matrix with ld K, so cuBLAS transposes it back (OP_T). Leading dimensions
  // >= 1 also for K == 0 (then out = 0).
  const int ldK = K > 0 ? K : 1;
  TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, weight, ldK, in, ldK, &zero, out, N));
}

}  // namespace tscope::cuda

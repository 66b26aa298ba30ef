// Matmul backward on the device: the two products of each backward through cuBLAS SGEMM with
// beta = 1, so they ACCUMULATE into the gradients, and the bias gradient (column sums of dout) as
// a deterministic two-stage column reduction. Row-major data is column-major transposed, so a
// row-major X (R, N) is the column-major N x R matrix X^T with leading dimension N; each call
// below is written as the column-major product of those transposes.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kColumnThreads = 128;
constexpr int kChunkRows = 64;

int chunksFor(int rows) { return (rows + kChunkRows - 1) / kChunkRows; }

// grid (chunks, column tiles): chunks on x, whose limit is 2^31 - 1 (y stops at 65535): partial[chunk, n] = sum over the chunk's rows of dout[r, n].
__global__ void columnSumPartialKernel(float* partial, const float* dout, int rows, int N) {
  const int n = blockIdx.y * blockDim.x + threadIdx.x, chunk = blockIdx.x;
  if (n >= N) return;
  const int first = chunk * kChunkRows, last = min(rows, first + kChunkRows);
  float sum = 0.0f;
  for (int r = first; r < last; ++r) sum += dout[static_cast<size_t>(r) * N + n];
  partial[static_cast<size_t>(chunk) * N + n] = sum;
}

// dbias[n] += sum over chunks, in order, of partial[chunk, n].
__global__ void columnSumFinishKernel(float* dbias, const float* partial, int chunks, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float sum = 0.0f;
  for (int k = 0; k < chunks; ++k) sum += partial[static_cast<size_t>(k) * N + n];
  dbias[n] += sum;
}

}  // namespace

size_t matmulBackwardScratchFloats(int rows, int N) {
  if (rows <= 0 || N <= 0) return 0;
  return static_cast<size_t>(chunksFor(rows)) * N;
}

void launchMatmulBackward(cublasHandle_t cublas, float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight,
                          int rows, int K, int N, float* scratch, cudaStream_t stream) {
  if (rows <= 0 || K <= 0 || N <= 0) return;
  const float one = 1.0f;
  // din (rows, K) += dout (rows, N) . W^T: column-major din^T (K x rows) += W^T-stored(N x K)^T . dout^T (N x rows)
  if (din) TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, K, rows, N, &one, weight, N, dout, N, &one, din, K));
  // dW (K, N) += in^T . dout: column-major dW^T (N x K) += dout^T (N x rows) . (in^T (K x rows))^T
  if (dweight) TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, N, K, rows, &one, dout, N, in, K, &one, dweight, N));
  if (dbias) {
    const int chunks = chunksFor(rows);
    const unsigned tiles = (N + kColumnThreads - 1) / kColumnThreads;
    columnSumPartialKernel<<<dim3(chunks, tiles), kColumnThreads, 0, stream>>>(scratch, dout, rows, N);
    TSCOPE_LAUNCH_CHECK();
    columnSumFinishKernel<<<tiles, kColumnThreads, 0, stream>>>(dbias, scratch, chunks, N);
    TSCOPE_LAUNCH_CHECK();
  }
}

void launchMatmulTransposedBackward(cublasHandle_t cublas, float* din, float* dweight, const float* dout, const float* in, const float* weight,
                                    int rows, int K, int N) {
  if (rows <= 0 || K <= 0 || N <= 0) return;
  const float one = 1.0f;
  // out = in . W^T with W (N, K). din (rows, K) += dout . W: column-major din^T (K x rows) += W^T (K x N) . dout^T (N x rows)
  if (din) TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, K, rows, N, &one, weight, K, dout, N, &one, din, K));
  // dW (N, K) += dout^T . in: column-major dW^T (K x N) += in^T (K x rows) . (dout^T (N x rows))^T
  if (dweight) TSCOPE_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_T, K, N, rows, &one, in, K, dout, N, &one, dweight, K));
}

}  // namespace tscope::cuda

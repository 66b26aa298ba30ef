// Row gather and weighted scatter-add, the mixture-of-experts dispatch (the row lists and gates
// come from host routing and were copied to the device by the backend). The scatter walks the
// rows in order within each column, so repeated rows add up exactly as in the reference, with
// no atomics and the same result on every run.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"

namespace tscope::cuda {
namespace {

// out (n, C) = in[rows[i]]; grid (n).
__global__ void gatherRowsKernel(float* out, const float* in, const int* rows, int C) {
  const float* source = in + static_cast<size_t>(rows[blockIdx.x]) * C;
  float* o = out + static_cast<size_t>(blockIdx.x) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = source[c];
}

// out[rows[i]] += weights[i] * in (i); one thread per column c, rows in order.
__global__ void scatterAddRowsKernel(float* out, const float* in, const int* rows, const float* weights, int n, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(rows[i]) * C + c] += weights[i] * in[static_cast<size_t>(i) * C + c];
}

}  // namespace

void launchGatherRows(float* out, const float* in, const int* rows, int n, int C, cudaStream_t stream) {
  if (n <= 0) return;
  gatherRowsKernel<<<n, 256, 0, stream>>>(out, in, rows, C);
  TSCOPE_LAUNCH_CHECK();
}

void launchScatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C, cudaStream_t stream) {
  if (n <= 0) return;
  scatterAddRowsKernel<<<(C + 127) / 128, 128, 0, stream>>>(out, in, rows, weights, n, C);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

// Token embedding plus the additive position table (learned wpe or sinusoidal), one block per
// token row; the token ids were copied to the device by the backend.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"

namespace tscope::cuda {
namespace {

// out (T, C) = wte[tokens[t]] + positions[pos0 + t]; grid (T), threads stride over C.
__global__ void embedKernel(float* out, const int* tokens, const float* wte, const float* positions, int C, int pos0) {
  const int t = blockIdx.x;
  const float* tokenRow = wte + static_cast<size_t>(tokens[t]) * C;
  const float* positionRow = positions ? positions + static_cast<size_t>(pos0 + t) * C : nullptr;
  float* o = out + static_cast<size_t>(t) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = tokenRow[c] + (positionRow ? positionRow[c] : 0.0f);
}

// out (1, C) = wte[*token] + positions[*position]: a recorded decode step's embedding, both read
// from device memory at run time so the launch can be replayed from a CUDA graph. One block.
__global__ void embedStepKernel(float* out, const int* token, const int* position, const float* wte, const float* positions, int C) {
  const float* tokenRow = wte + static_cast<size_t>(*token) * C;
  const float* positionRow = positions ? positions + static_cast<size_t>(*position) * C : nullptr;
  for (int c = threadIdx.x; c < C; c += blockDim.x) out[c] = tokenRow[c] + (positionRow ? positionRow[c] : 0.0f);
}

}  // namespace

void launchEmbedStep(float* out, const int* token, const int* position, const float* wte, const float* positions, int C, cudaStream_t stream) {
  embedStepKernel<<<1, 256, 0, stream>>>(out, token, position, wte, positions, C);
  TSCOPE_LAUNCH_CHECK();
}

void launchEmbed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0, cudaStream_t stream) {
  if (T <= 0) return;
  embedKernel<<<T, 256, 0, stream>>>(out, tokens, wte, positions, C, pos0);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

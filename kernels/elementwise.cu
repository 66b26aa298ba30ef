// Elementwise ops: the activations (GELU in its tanh and erf forms, ReLU), SwiGLU's gate and the
// residual add; grid-stride loops, one float per thread per step.
#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kThreads = 256;

#define TSCOPE_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void geluTanhKernel(float* x, size_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  TSCOPE_GRID_STRIDE(i, n) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
  }
}

__global__ void geluErfKernel(float* x, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f));
}

__global__ void reluKernel(float* x, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) x[i] = fmaxf(x[i], 0.0f);
}

// value = silu(gate) * value, silu(g) = g / (1 + exp(-g)).
__global__ void swigluKernel(float* value, const float* gate, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) {
    const float g = gate[i];
    value[i] = value[i] * g / (1.0f + expf(-g));
  }
}

__global__ void addKernel(float* x, const float* y, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) x[i] += y[i];
}

}  // namespace

void launchActivate(float* x, size_t n, Activation activation, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = blocksFor(n, kThreads);
  switch (activation) {
    case Activation::GeluTanh: geluTanhKernel<<<blocks, kThreads, 0, stream>>>(x, n); break;
    case Activation::GeluErf: geluErfKernel<<<blocks, kThreads, 0, stream>>>(x, n); break;
    case Activation::Relu: reluKernel<<<blocks, kThreads, 0, stream>>>(x, n); break;
    case Activation::SwiGlu: return;  // applied by swiglu(), which needs the gate
  }
  TSCOPE_LAUNCH_CHECK();
}

void launchSwiglu(float* value, const float* gate, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  swigluKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(value, gate, n);
  TSCOPE_LAUNCH_CHECK();
}

void launchAdd(float* x, const float* y, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  addKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(x, y, n);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

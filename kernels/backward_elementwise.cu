// Element-wise backward passes on the device: GELU (tanh and erf forms), ReLU and SwiGLU, each
// din += f'(in) * dout with one thread per element (grid-stride). The derivatives are those of
// model/train/backward_reference.cpp, evaluated in float.
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

#define TSCOPE_GRID_STRIDE(i, n) \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<size_t>(gridDim.x) * blockDim.x)

// gelu_tanh(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi) (Hendrycks & Gimpel 2016):
// derivative 0.5 (1 + th) + 0.5 x (1 - th^2) k (1 + 3 * 0.044715 x^2)
__global__ void geluTanhBackwardKernel(float* din, const float* dout, const float* in, size_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  TSCOPE_GRID_STRIDE(i, n) {
    const float x = in[i], th = tanhf(k * (x + 0.044715f * x * x * x));
    const float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * k * (1.0f + 3.0f * 0.044715f * x * x);
    din[i] += grad * dout[i];
  }
}

// gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2)): derivative 0.5 (1 + erf(x / sqrt 2)) + x phi(x)
__global__ void geluErfBackwardKernel(float* din, const float* dout, const float* in, size_t n) {
  const float invSqrt2 = 0.7071067811865476f, invSqrt2Pi = 0.3989422804014327f;
  TSCOPE_GRID_STRIDE(i, n) {
    const float x = in[i];
    const float grad = 0.5f * (1.0f + erff(x * invSqrt2)) + x * invSqrt2Pi * expf(-0.5f * x * x);
    din[i] += grad * dout[i];
  }
}

// relu'(x) = 1 for x > 0, else 0 (0 at x = 0, as the reference)
__global__ void reluBackwardKernel(float* din, const float* dout, const float* in, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) {
    if (in[i] > 0.0f) din[i] += dout[i];
  }
}

// out = silu(g) v, silu(g) = g s(g): dv += dout silu(g); dg += dout v s(g) (1 + g (1 - s(g)))
__global__ void swigluBackwardKernel(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) {
    const float g = gate[i], sigmoid = 1.0f / (1.0f + expf(-g)), dy = dout[i];
    dvalue[i] += dy * g * sigmoid;
    dgate[i] += dy * value[i] * sigmoid * (1.0f + g * (1.0f - sigmoid));
  }
}

#undef TSCOPE_GRID_STRIDE

constexpr int kThreads = 256;

}  // namespace

void launchActivationBackward(float* din, const float* dout, const float* in, size_t n, Activation activation, cudaStream_t stream) {
  if (n == 0) return;
  switch (activation) {
    case Activation::GeluTanh: geluTanhBackwardKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(din, dout, in, n); break;
    case Activation::GeluErf: geluErfBackwardKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(din, dout, in, n); break;
    case Activation::Relu: reluBackwardKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(din, dout, in, n); break;
    case Activation::SwiGlu: throw Error("activation backward: SwiGLU needs the gate; use the swiglu backward");
  }
  TSCOPE_LAUNCH_CHECK();
}

void launchSwigluBackward(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  swigluBackwardKernel<<<blocksFor(n, kThreads), kThreads, 0, stream>>>(dgate, dvalue, dout, gate, value, n);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

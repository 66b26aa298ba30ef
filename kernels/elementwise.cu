// Elementwise ops: the activations (GELU in its tanh and erf forms, ReLU), SwiGLU's gate and the
// residual add; grid-stride loops, one float per thread per step. biasActivate is the epilogue of
// a matmul: bias + activation in one pass, rows on grid.y (no modulo), float4 when N % 4 == 0.
#include <cstdint>

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

__global__ void geluErfKernel(float* x, size_t n) { TSCOPE_GRID_STRIDE(i, n) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.7071067811865476f)); }

__global__ void reluKernel(float* x, size_t n) { TSCOPE_GRID_STRIDE(i, n) x[i] = fmaxf(x[i], 0.0f); }

// value = silu(gate) * value, silu(g) = g / (1 + exp(-g)).
__global__ void swigluKernel(float* value, const float* gate, size_t n) {
  TSCOPE_GRID_STRIDE(i, n) {
    const float g = gate[i];
    value[i] = value[i] * g / (1.0f + expf(-g));
  }
}

__global__ void addKernel(float* x, const float* y, size_t n) { TSCOPE_GRID_STRIDE(i, n) x[i] += y[i]; }

// The same formulas as the kernels above (and ops_reference's geluTanh / geluErf).
template <Activation kActivation>
__device__ inline float activation(float v) {
  if constexpr (kActivation == Activation::GeluTanh) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
  } else if constexpr (kActivation == Activation::GeluErf) {
    return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
  } else if constexpr (kActivation == Activation::Relu) {
    return fmaxf(v, 0.0f);
  } else {
    return v;  // SwiGlu stands for "bias only" here (the launcher maps withActivation == false to it)
  }
}

// x (T, N) = act(x + bias) with W = 1 or 4 floats per step (W = 4: N % 4 == 0, 16-byte aligned);
// grid.x strides over the N / W groups of a row, grid.y over rows.
template <int W, Activation kActivation>
__global__ void biasActivateKernel(float* x, const float* bias, int T, int N) {
  const int groups = N / W;
  for (int row = blockIdx.y; row < T; row += gridDim.y) {
    float* xr = x + static_cast<size_t>(row) * N;
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += gridDim.x * blockDim.x) {
      if constexpr (W == 4) {
        float4 v = reinterpret_cast<float4*>(xr)[g];
        if (bias) {
          const float4 b = reinterpret_cast<const float4*>(bias)[g];
          v.x += b.x, v.y += b.y, v.z += b.z, v.w += b.w;
        }
        v.x = activation<kActivation>(v.x), v.y = activation<kActivation>(v.y);
        v.z = activation<kActivation>(v.z), v.w = activation<kActivation>(v.w);
        reinterpret_cast<float4*>(xr)[g] = v;
      } else {
        xr[g] = activation<kActivation>(xr[g] + (bias ? bias[g] : 0.0f));
      }
    }
  }
}

template <int W, Activation kActivation>
void launchBiasActivateAs(float* x, const float* bias, int T, int N, cudaStream_t stream) {
  const int groups = N / W;
  const unsigned columnBlocks = blocksFor(static_cast<size_t>(groups), kThreads);
  const dim3 grid(columnBlocks < 1024 ? columnBlocks : 1024, T < 65535 ? T : 65535);
  biasActivateKernel<W, kActivation><<<grid, kThreads, 0, stream>>>(x, bias, T, N);
  TSCOPE_LAUNCH_CHECK();
}

template <int W>
void launchBiasActivateWidth(float* x, const float* bias, int T, int N, bool withActivation, Activation activation, cudaStream_t stream) {
  if (!withActivation) return launchBiasActivateAs<W, Activation::SwiGlu>(x, bias, T, N, stream);
  switch (activation) {
    case Activation::GeluTanh: return launchBiasActivateAs<W, Activation::GeluTanh>(x, bias, T, N, stream);
    case Activation::GeluErf: return launchBiasActivateAs<W, Activation::GeluErf>(x, bias, T, N, stream);
    case Activation::Relu: return launchBiasActivateAs<W, Activation::Relu>(x, bias, T, N, stream);
    case Activation::SwiGlu: break;
  }
  throw Error("biasActivate: SwiGLU needs its gate (use swiglu)");
}

}  // namespace

void launchBiasActivate(float* x, const float* bias, int T, int N, bool withActivation, Activation activation, cudaStream_t stream) {
  if (T <= 0 || N <= 0 || (!bias && !withActivation)) return;
  const bool vec4 = N % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
  if (vec4) launchBiasActivateWidth<4>(x, bias, T, N, withActivation, activation, stream);
  else launchBiasActivateWidth<1>(x, bias, T, N, withActivation, activation, stream);
}

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

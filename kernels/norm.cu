// LayerNorm and RMSNorm over the last axis: one block per row, block reductions in float with
// the mean subtracted before squaring (two passes over the row, which stays in L1/L2).
// addNorm fuses the residual add: x += y, then the norm of the sum, reading x and y once and
// writing x and out once; the sum stays in registers (a warp per row, C <= 1024) or in shared
// memory (a block per row, larger C), and float4 loads are used when C % 4 == 0 and every
// pointer is 16-byte aligned.
#include <cstdint>

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

// o (C) = x / sqrt(mean(x^2) + eps) * weight, by one block (o may be x).
__device__ inline void rmsNormSlice(float* o, const float* x, const float* weight, int C, float eps) {
  float squares = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) squares += x[c] * x[c];
  const float rrms = rsqrtf(blockSum(squares) / static_cast<float>(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * rrms * weight[c];
}

// out (T, C) = x / sqrt(mean(x^2) + eps) * weight; grid (T).
__global__ void rmsNormKernel(float* out, const float* in, const float* weight, int C, float eps) {
  rmsNormSlice(out + static_cast<size_t>(blockIdx.x) * C, in + static_cast<size_t>(blockIdx.x) * C, weight, C, eps);
}

// qk_norm: slice s = row * (H + Hkv) + part of qkv (rows, stride); parts < H are q heads (weight
// qWeight), the rest k heads (weight kWeight), each D wide and following each other from column 0.
// The same arithmetic per slice as rmsNormKernel, so the numbers equal the per-row launches'.
__global__ void headRmsNormKernel(float* qkv, const float* qWeight, const float* kWeight, int H, int Hkv, int D, int stride, float eps) {
  const int perRow = H + Hkv, row = blockIdx.x / perRow, part = blockIdx.x % perRow;
  float* x = qkv + static_cast<size_t>(row) * stride + static_cast<size_t>(part) * D;
  rmsNormSlice(x, x, part < H ? qWeight : kWeight, D, eps);
}

// --- addNorm ---------------------------------------------------------------------------------

constexpr int kWarpRowMaxC = 1024;    // a warp per row up to this C (32 floats per lane at most)
constexpr int kWarpRowsPerBlock = 4;  // 128 threads: enough blocks for T in the thousands
constexpr int kBlockRowMaxC = 12032;  // shared row: 48 KiB (the default limit) less 1 KiB for blockSum's static shared

// W consecutive floats (W = 1 or 4; W = 4 needs 16-byte alignment).
template <int W>
__device__ inline void loadFloats(const float* p, float (&v)[W]) {
  if constexpr (W == 4) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
    v[0] = *p;
  }
}
template <int W>
__device__ inline void storeFloats(float* p, const float (&v)[W]) {
  if constexpr (W == 4) *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else *p = v[0];
}

// The statistics of a row from its partial sums: LayerNorm's mean and 1/std, or RMSNorm's 0 and 1/rms.
// LayerNorm subtracts the mean before squaring (second loop in the callers), as layerNormKernel does.
struct RowScale {
  float mean, rstd;
};

// out[c..c+W) = norm(v) * weight (+ bias) for one group of W floats.
template <int W, bool kRms>
__device__ inline void writeNormed(float* out, const float (&v)[W], const float* weight, const float* bias, int c, RowScale s) {
  float w[W], o[W], b[W] = {};
  loadFloats<W>(weight + c, w);
  if (!kRms && bias) loadFloats<W>(bias + c, b);
#pragma unroll
  for (int k = 0; k < W; ++k) o[k] = kRms ? v[k] * s.rstd * w[k] : (v[k] - s.mean) * s.rstd * w[k] + b[k];
  storeFloats<W>(out + c, o);
}

// One warp per row (C <= kWarpRowMaxC): lane l holds groups l, l + 32, ... of W floats in registers.
template <int W, bool kRms>
__global__ void __launch_bounds__(kWarpRowsPerBlock * 32)
    addNormWarpKernel(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps) {
  constexpr int kSlots = kWarpRowMaxC / (32 * W);
  const int row = blockIdx.x * kWarpRowsPerBlock + threadIdx.x / 32;
  if (row >= T) return;  // the whole warp leaves together: the shuffles below stay full-warp
  const int lane = threadIdx.x % 32;
  float* xr = x + static_cast<size_t>(row) * C;
  const float* yr = y + static_cast<size_t>(row) * C;
  float v[kSlots][W];
  float sum = 0.0f;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = (s * 32 + lane) * W;
    if (c < C) {
      float b[W];
      loadFloats<W>(xr + c, v[s]);
      loadFloats<W>(yr + c, b);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        v[s][k] += b[k];
        sum += kRms ? v[s][k] * v[s][k] : v[s][k];
      }
      storeFloats<W>(xr + c, v[s]);
    }
  }
  RowScale scale{0.0f, 0.0f};
  if (kRms) {
    scale.rstd = rsqrtf(warpSum(sum) / static_cast<float>(C) + eps);
  } else {
    scale.mean = warpSum(sum) / static_cast<float>(C);
    float squares = 0.0f;
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      if ((s * 32 + lane) * W < C)
#pragma unroll
        for (int k = 0; k < W; ++k) squares += (v[s][k] - scale.mean) * (v[s][k] - scale.mean);
    scale.rstd = rsqrtf(warpSum(squares) / static_cast<float>(C) + eps);
  }
  float* outRow = out + static_cast<size_t>(row) * C;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = (s * 32 + lane) * W;
    if (c < C) writeNormed<W, kRms>(outRow, v[s], weight, bias, c, scale);
  }
}

// One block per row (C <= kBlockRowMaxC): the sum goes to a shared row of C floats. Each thread
// reads back only the groups it wrote, so the block reductions are the only synchronisation.
template <int W, bool kRms>
__global__ void addNormBlockKernel(float* x, const float* y, float* out, const float* weight, const float* bias, int C, float eps) {
  extern __shared__ float4 sharedRow4[];  // float4: 16-byte aligned for the W = 4 path
  float* sumRow = reinterpret_cast<float*>(sharedRow4);
  float* xr = x + static_cast<size_t>(blockIdx.x) * C;
  const float* yr = y + static_cast<size_t>(blockIdx.x) * C;
  float sum = 0.0f;
  for (int c = threadIdx.x * W; c < C; c += blockDim.x * W) {
    float v[W], b[W];
    loadFloats<W>(xr + c, v);
    loadFloats<W>(yr + c, b);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      v[k] += b[k];
      sum += kRms ? v[k] * v[k] : v[k];
    }
    storeFloats<W>(xr + c, v);
    storeFloats<W>(sumRow + c, v);
  }
  RowScale scale{0.0f, 0.0f};
  if (kRms) {
    scale.rstd = rsqrtf(blockSum(sum) / static_cast<float>(C) + eps);
  } else {
    scale.mean = blockSum(sum) / static_cast<float>(C);
    float squares = 0.0f;
    for (int c = threadIdx.x * W; c < C; c += blockDim.x * W) {
      float v[W];
      loadFloats<W>(sumRow + c, v);
#pragma unroll
      for (int k = 0; k < W; ++k) squares += (v[k] - scale.mean) * (v[k] - scale.mean);
    }
    scale.rstd = rsqrtf(blockSum(squares) / static_cast<float>(C) + eps);
  }
  float* outRow = out + static_cast<size_t>(blockIdx.x) * C;
  for (int c = threadIdx.x * W; c < C; c += blockDim.x * W) {
    float v[W];
    loadFloats<W>(sumRow + c, v);
    writeNormed<W, kRms>(outRow, v, weight, bias, c, scale);
  }
}

template <int W, bool kRms>
void launchAddNormAs(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, cudaStream_t stream) {
  if (C <= kWarpRowMaxC) {
    const unsigned blocks = static_cast<unsigned>((T + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
    addNormWarpKernel<W, kRms><<<blocks, kWarpRowsPerBlock * 32, 0, stream>>>(x, y, out, weight, bias, T, C, eps);
  } else {
    // About one group of W floats per thread, in whole warps, at most 512 threads.
    const int groups = (C + W - 1) / W;
    const int threads = groups >= 512 ? 512 : (groups + 31) / 32 * 32;
    addNormBlockKernel<W, kRms><<<T, threads, static_cast<size_t>(C) * sizeof(float), stream>>>(x, y, out, weight, bias, C, eps);
  }
  TSCOPE_LAUNCH_CHECK();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void launchAddNorm(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, NormKind kind,
                   cudaStream_t stream) {
  if (T <= 0 || C <= 0) return;
  const bool rms = kind == NormKind::RmsNorm;
  if (C > kBlockRowMaxC) {  // beyond the shared row: the two plain kernels (x is read twice)
    launchAdd(x, y, static_cast<size_t>(T) * C, stream);
    if (rms) launchRmsNorm(out, x, weight, T, C, eps, stream);
    else launchLayerNorm(out, x, weight, bias, T, C, eps, stream);
    return;
  }
  const bool vec4 = C % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(out) && aligned16(weight) && (rms || !bias || aligned16(bias));
  if (vec4) {
    if (rms) launchAddNormAs<4, true>(x, y, out, weight, nullptr, T, C, eps, stream);
    else launchAddNormAs<4, false>(x, y, out, weight, bias, T, C, eps, stream);
  } else {
    if (rms) launchAddNormAs<1, true>(x, y, out, weight, nullptr, T, C, eps, stream);
    else launchAddNormAs<1, false>(x, y, out, weight, bias, T, C, eps, stream);
  }
}

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

void launchHeadRmsNorm(float* qkv, const float* qWeight, const float* kWeight, int rows, int H, int Hkv, int D, int stride, float eps,
                       cudaStream_t stream) {
  if (rows <= 0) return;
  headRmsNormKernel<<<rows*(H + Hkv), kNormThreads, 0, stream>>>(qkv, qWeight, kWeight, H, Hkv, D, stride, eps);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace tscope::cuda

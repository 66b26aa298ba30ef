// LayerNorm and RMSNorm backward on the device. One block per row computes the row's statistics
// (two-pass mean and variance, as the forward), keeps them in scratch and adds din; then the
// parameter gradients, sums over rows, run as a deterministic two-stage column reduction: blocks
// of kChunkRows rows write partial sums, one pass adds the chunks in order into dweight / dbias.
// Derivations in model/train/backward_reference.cpp.
#include <cmath>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "kernels/reduce.cuh"

namespace tscope::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr int kColumnThreads = 128;
constexpr int kChunkRows = 64;

int chunksFor(int rows) { return (rows + kChunkRows - 1) / kChunkRows; }

// LayerNorm: with xhat = (x - mean) rstd and g = dy w: din += rstd (g - mean(g) - xhat mean(g xhat)).
// stats (rows, 2) = (mean, rstd) for the column pass.
__global__ void layerNormRowsBackwardKernel(float* din, float* stats, const float* dout, const float* in, const float* weight, int C, float eps) {
  const size_t row = blockIdx.x;
  const float* x = in + row * C;
  const float* dy = dout + row * C;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += x[c];
  const float mean = blockSum(sum) / C;
  float squares = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) squares += (x[c] - mean) * (x[c] - mean);
  const float rstd = 1.0f / sqrtf(blockSum(squares) / C + eps);
  float sumG = 0.0f, sumGXhat = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float g = dy[c] * weight[c];
    sumG += g;
    sumGXhat += g * (x[c] - mean) * rstd;
  }
  const float meanG = blockSum(sumG) / C, meanGXhat = blockSum(sumGXhat) / C;
  if (din)
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float xhat = (x[c] - mean) * rstd;
      din[row * C + c] += rstd * (dy[c] * weight[c] - meanG - xhat * meanGXhat);
    }
  if (threadIdx.x == 0) {
    stats[2 * row] = mean;
    stats[2 * row + 1] = rstd;
  }
}

// RMSNorm: r = (mean(x^2) + eps)^-1/2, g = dy w: din += r g - r^3 x mean(g x). stats = (0, r).
__global__ void rmsNormRowsBackwardKernel(float* din, float* stats, const float* dout, const float* in, const float* weight, int C, float eps) {
  const size_t row = blockIdx.x;
  const float* x = in + row * C;
  const float* dy = dout + row * C;
  float squares = 0.0f, gx = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    squares += x[c] * x[c];
    gx += dy[c] * weight[c] * x[c];
  }
  const float rrms = 1.0f / sqrtf(blockSum(squares) / C + eps);
  const float meanGX = blockSum(gx) / C;
  if (din)
    for (int c = threadIdx.x; c < C; c += blockDim.x) din[row * C + c] += rrms * dy[c] * weight[c] - rrms * rrms * rrms * x[c] * meanGX;
  if (threadIdx.x == 0) {
    stats[2 * row] = 0.0f;
    stats[2 * row + 1] = rrms;
  }
}

// grid (chunks, column tiles): chunks on x, whose limit is 2^31 - 1 (y stops at 65535): partialWeight[chunk, c] = sum over the chunk's rows of dy (x
// - mean) rstd, partialBias[chunk, c] = sum of dy (when partialBias is not null).
__global__ void normColumnsPartialKernel(float* partialWeight, float* partialBias, const float* dout, const float* in, const float* stats, int rows,
                                         int C) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x, chunk = blockIdx.x;
  if (c >= C) return;
  const int first = chunk * kChunkRows, last = min(rows, first + kChunkRows);
  float sumWeight = 0.0f, sumBias = 0.0f;
  for (int r = first; r < last; ++r) {
    const float dy = dout[static_cast<size_t>(r) * C + c];
    sumWeight += dy * (in[static_cast<size_t>(r) * C + c] - stats[2 * r]) * stats[2 * r + 1];
    sumBias += dy;
  }
  partialWeight[static_cast<size_t>(chunk) * C + c] = sumWeight;
  if (partialBias) partialBias[static_cast<size_t>(chunk) * C + c] = sumBias;
}

// dweight[c] += sum over chunks (in order) of partialWeight[chunk, c]; the same for dbias.
__global__ void normColumnsFinishKernel(float* dweight, float* dbias, const float* partialWeight, const float* partialBias, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sumWeight = 0.0f, sumBias = 0.0f;
  for (int k = 0; k < chunks; ++k) {
    sumWeight += partialWeight[static_cast<size_t>(k) * C + c];
    if (partialBias) sumBias += partialBias[static_cast<size_t>(k) * C + c];
  }
  if (dweight) dweight[c] += sumWeight;
  if (dbias) dbias[c] += sumBias;
}

// Scratch layout: stats (rows, 2) | partialWeight (chunks, C) | partialBias (chunks, C).
void columnPass(float* dweight, float* dbias, const float* dout, const float* in, int rows, int C, float* scratch, cudaStream_t stream) {
  if (!dweight && !dbias) return;
  const int chunks = chunksFor(rows);
  const float* stats = scratch;
  float* partialWeight = scratch + 2 * static_cast<size_t>(rows);
  float* partialBias = dbias ? partialWeight + static_cast<size_t>(chunks) * C : nullptr;
  const unsigned tiles = (C + kColumnThreads - 1) / kColumnThreads;
  normColumnsPartialKernel<<<dim3(chunks, tiles), kColumnThreads, 0, stream>>>(partialWeight, partialBias, dout, in, stats, rows, C);
  TSCOPE_LAUNCH_CHECK();
  normColumnsFinishKernel<<<tiles, kColumnThreads, 0, stream>>>(dweight, dbias, partialWeight, partialBias, chunks, C);
  TSCOPE_LAUNCH_CHECK();
}

}  // namespace

size_t normBackwardScratchFloats(int rows, int C) {
  if (rows <= 0 || C <= 0) return 0;
  return 2 * static_cast<size_t>(rows) + 2 * static_cast<size_t>(chunksFor(rows)) * C;
}

void launchLayerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                             float eps, float* scratch, cudaStream_t stream) {
  if (rows <= 0 || C <= 0) return;
  layerNormRowsBackwardKernel<<<rows, kRowThreads, 0, stream>>>(din, scratch, dout, in, weight, C, eps);
  TSCOPE_LAUNCH_CHECK();
  columnPass(dweight, dbias, dout, in, rows, C, scratch, stream);
}

void launchRmsNormBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps,
                           float* scratch, cudaStream_t stream) {
  if (rows <= 0 || C <= 0) return;
  rmsNormRowsBackwardKernel<<<rows, kRowThreads, 0, stream>>>(din, scratch, dout, in, weight, C, eps);
  TSCOPE_LAUNCH_CHECK();
  columnPass(dweight, nullptr, dout, in, rows, C, scratch, stream);
}

}  // namespace tscope::cuda

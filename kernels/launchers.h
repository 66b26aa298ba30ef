// The launchers of the CUDA op families (one .cu per family: kernels first, then these), as the
// CUDA backend calls them. Every pointer is device memory; shapes as in model/backend.h. Each
// launcher enqueues on `stream` and checks its launch; none synchronises.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "model/backend.h"
#include "model/config.h"

namespace tscope::cuda {

// embedding.cu: out (T, C) = wte[tokens[t]] + positions[pos0 + t] (positions may be null); tokens (T) on the device.
void launchEmbed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0, cudaStream_t stream);

// norm.cu: one block per row.
void launchLayerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps, cudaStream_t stream);
void launchRmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps, cudaStream_t stream);

// matmul.cu: cuBLAS SGEMM on row-major data (bias added by a kernel); cublas is bound to the stream.
void launchMatmul(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                  cudaStream_t stream);
void launchMatmulTransposed(cublasHandle_t cublas, float* out, const float* in, const float* weight, int T, int K, int N);

// elementwise.cu
void launchActivate(float* x, size_t n, Activation activation, cudaStream_t stream);
void launchSwiglu(float* value, const float* gate, size_t n, cudaStream_t stream);
void launchAdd(float* x, const float* y, size_t n, cudaStream_t stream);

// rows.cu: rows (n) and weights (n) on the device.
void launchGatherRows(float* out, const float* in, const int* rows, int n, int C, cudaStream_t stream);
void launchScatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C, cudaStream_t stream);

// attention.cu: RoPE on qkv (if shape.ropeBase > 0), append K and V to the caches, then one block
// per (head, query row). `rowScratch` (H, T, Tk) holds the probabilities when `probs` is null;
// `alibiSlopes` (H) is a device copy of shape.alibiSlopes (null without ALiBi).
void launchAttention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& shape,
                     const float* alibiSlopes, float* rowScratch, cudaStream_t stream);

}  // namespace tscope::cuda

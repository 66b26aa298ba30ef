// The launchers of the CUDA op families (one .cu per family: kernels first, then these), as the
// CUDA backend calls them. Every pointer is device memory; shapes as in model/nn/backend.h. Each
// launcher enqueues on `stream` and checks its launch; none synchronises.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "model/nn/backend.h"
#include "model/core/config.h"

namespace tscope::cuda {

// embedding.cu: out (T, C) = wte[tokens[t]] + positions[pos0 + t] (positions may be null); tokens (T) on the device.
void launchEmbed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0, cudaStream_t stream);
// out (1, C) = wte[*token] + positions[*position] (positions may be null); token and position in
// device memory (a recorded decode step's state).
void launchEmbedStep(float* out, const int* token, const int* position, const float* wte, const float* positions, int C, cudaStream_t stream);

// norm.cu: one block per row.
void launchLayerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps, cudaStream_t stream);
void launchRmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps, cudaStream_t stream);
// qk_norm in one launch: each of `rows` rows of qkv (row stride `stride`) has H query slices of D
// (weight qWeight) then Hkv key slices (weight kWeight), each RMS-normalised in place as rmsNorm does.
void launchHeadRmsNorm(float* qkv, const float* qWeight, const float* kWeight, int rows, int H, int Hkv, int D, int stride, float eps,
                       cudaStream_t stream);
// norm.cu: x (T, C) += y, then out (T, C) = LayerNorm(x) (bias may be null) or RMSNorm(x) (bias
// unused), in one kernel: a warp per row for C <= 1024, else a block per row; float4 when C % 4 == 0
// and all pointers are 16-byte aligned. out must not alias x or y.
void launchAddNorm(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, NormKind kind,
                   cudaStream_t stream);

// matmul.cu: cuBLAS SGEMM on row-major data (bias added by a kernel); cublas is bound to the stream.
void launchMatmul(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                  cudaStream_t stream);
void launchMatmulTransposed(cublasHandle_t cublas, float* out, const float* in, const float* weight, int T, int K, int N);
// matmul.cu: out (T, N) = act(in (T, K) . weight (K, N) + bias) for GELU (tanh / erf) or ReLU: the
// product without bias (GEMV when T == 1), then one bias + activation pass (launchBiasActivate).
void launchMatmulActivate(cublasHandle_t cublas, float* out, const float* in, const float* weight, const float* bias, int T, int K, int N,
                          Activation activation, cudaStream_t stream);

// elementwise.cu
void launchActivate(float* x, size_t n, Activation activation, cudaStream_t stream);
void launchSwiglu(float* value, const float* gate, size_t n, cudaStream_t stream);
void launchAdd(float* x, const float* y, size_t n, cudaStream_t stream);
// x (T, N) = act(x + bias) in one pass (bias may be null). withActivation false: bias only.
// Activation::SwiGlu is not an elementwise activation: it is rejected (tscope::Error).
void launchBiasActivate(float* x, const float* bias, int T, int N, bool withActivation, Activation activation, cudaStream_t stream);

// rows.cu: rows (n) and weights (n) on the device.
void launchGatherRows(float* out, const float* in, const int* rows, int n, int C, cudaStream_t stream);
void launchScatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C, cudaStream_t stream);

// attention.cu: Backend::attention without the maps. RoPE on qkv (if shape.ropeBase > 0), K and V
// appended to the caches, then out (T, C) and lse (H, T) = ln sum_j exp(score(h, t, j)) over the
// visible keys, written to scratch[0 .. H*T); the rest of scratch takes the split-key partials.
// scratch must hold attentionScratchFloats(shape, out, qkv, kCache, vCache) floats.
// `alibiSlopes` (H): device copy of shape.alibiSlopes (null without ALiBi). `devicePosition`: the
// device int that replaces shape.pos0 when shape.stepPosition (T == 1; null otherwise): RoPE angle,
// cache row and visible keys all come from it, grids only from shape.keys() as a bound. Enqueues
// only kernels (no allocation, copy or synchronisation), so a recorded step can capture it.
// T > 16 with D % 4 == 0, D <= 128 and 16-byte aligned pointers: the tiled flash kernel; else the
// split-key kernels (attention_decode.cu). Throws tscope::Error for D > 256.
size_t attentionScratchFloats(const AttentionShape& shape, const float* out, const float* qkv, const float* kCache, const float* vCache);
void launchAttention(float* out, float* qkv, float* kCache, float* vCache, const AttentionShape& shape, const float* alibiSlopes,
                     const int* devicePosition, float* scratch, cudaStream_t stream);
// attention_decode.cu: the forward for few queries (flash decoding): out (T, C) and lse (H, T) as
// above; partials holds attentionSplitFloats(shape) floats (0 when one chunk per query suffices).
// Called by launchAttention after RoPE and the cache append.
size_t attentionSplitFloats(const AttentionShape& shape);
void launchAttentionSplit(float* out, float* lse, float* partials, const float* qkv, const float* kCache, const float* vCache,
                          const AttentionShape& shape, const float* alibiSlopes, const int* devicePosition, cudaStream_t stream);
// attention_maps.cu: after launchAttention, probs and scores (H, T, Tk) (either may be null) of
// every head: scores scaled q.k minus ALiBi, -inf where masked; probs exp(score - lse), 0 where
// masked. qkv holds the rotated Q, kCache the keys, lse the launchAttention output. Throws
// tscope::Error when shape.stepPosition (no host-known Tk) or for D > 256.
void launchAttentionMaps(float* probs, float* scores, const float* qkv, const float* kCache, const float* lse, const AttentionShape& shape,
                         const float* alibiSlopes, cudaStream_t stream);

// ---- training (backward_*.cu, adamw.cu) ----------------------------------------------------------
// The backward ops of model/train/backward.h on the device: every gradient is ACCUMULATED (+=) unless a
// comment says otherwise; "scratch" is caller-owned device memory of the size the matching
// *ScratchFloats() names, reused between calls (stream order keeps it safe). All deterministic: no
// floating-point atomics, so the same input gives the same bits.

// backward_embed.cu. dwte (V, C) += rows of dout (rows, C) grouped by token: bucket u holds the rows
// bucketRows[bucketStarts[u] .. bucketStarts[u+1]) (ascending) whose token is bucketTokens[u] (the
// caller buckets the host token ids, so the sum runs in row order with no atomics).
void launchEmbedTokensBackward(float* dwte, const float* dout, const int* bucketTokens, const int* bucketStarts, const int* bucketRows, int buckets,
                               int C, cudaStream_t stream);
// dpositions (T, C) += sum over b of dout (b*T + t) for the rows / T sequences.
void launchEmbedPositionsBackward(float* dpositions, const float* dout, int rows, int T, int C, cudaStream_t stream);

// backward_norm.cu: one block per row for din, then a two-stage column sum for dweight / dbias.
size_t normBackwardScratchFloats(int rows, int C);
void launchLayerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                             float eps, float* scratch, cudaStream_t stream);
void launchRmsNormBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps,
                           float* scratch, cudaStream_t stream);

// backward_matmul.cu: cuBLAS SGEMM with beta = 1 (accumulate); cublas must be bound to `stream`.
// Null din / dweight / dbias: not computed.
size_t matmulBackwardScratchFloats(int rows, int N);  // the bias column sums
void launchMatmulBackward(cublasHandle_t cublas, float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight,
                          int rows, int K, int N, float* scratch, cudaStream_t stream);
void launchMatmulTransposedBackward(cublasHandle_t cublas, float* din, float* dweight, const float* dout, const float* in, const float* weight,
                                    int rows, int K, int N);

// backward_elementwise.cu: din (n) += act'(in) dout; SwiGLU: dgate, dvalue (n) +=.
void launchActivationBackward(float* din, const float* dout, const float* in, size_t n, Activation activation, cudaStream_t stream);
void launchSwigluBackward(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n, cudaStream_t stream);

// backward_attention.cu: model/train/backward.h's attention contract for `batch` sequences (shape.pos0 = 0);
// alibiSlopes (H) is a device copy of shape.alibiSlopes (null without ALiBi).
size_t attentionBackwardScratchFloats(const AttentionShape& shape);
void launchAttentionBackward(float* dqkv, const float* dout, const float* qkv, const AttentionShape& shape, int batch, const float* alibiSlopes,
                             float* scratch, cudaStream_t stream);

// backward_loss.cu: dlogits (rows, V) = (not +=) scale * (softmax - onehot(target)) on scored rows,
// 0 elsewhere (dlogits may alias logits); rowLoss (rows) = -log p(target), 0 on unscored rows.
// targets (rows) and scored (rows; null = all) on the device.
void launchCrossEntropyBackward(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale,
                                double* rowLoss, cudaStream_t stream);

// adamw.cu: one torch.optim.AdamW update (model/train/optimizer.h) with the scalars the host computed as
// AdamW::step does; decayMask (n; null = decay all) on the device. Element-wise work in float with
// no contraction into FMA, so it matches the CPU loop bit for bit.
struct AdamWScalars {
  float decayFactor, b1, oneMinusB1, b2, oneMinusB2, stepSize, biasCorrection2Sqrt, eps;
};
void launchAdamW(float* params, const float* grads, float* m, float* v, const uint8_t* decayMask, size_t n, const AdamWScalars& scalars,
                 cudaStream_t stream);
// *result (device) = sum of x[i]^2 in double, in a fixed order (deterministic).
size_t sumSquaresScratchDoubles();
void launchSumSquares(double* result, const float* x, size_t n, double* scratch, cudaStream_t stream);
// x (n) *= scale
void launchScale(float* x, size_t n, float scale, cudaStream_t stream);

// sampling.cu: the next token from logits (V) on the device, exactly as model/generate/sampling.cpp's
// sampleNext picks it (see sampling.cu for where float rounding can make them differ, and how
// rarely). One block; no allocation, no host sync, fixed launch shape: capturable in a CUDA graph.
//   rngState (4 words): xoshiro256** state, advanced by exactly one next() unless greedy.
//   token: the sampled id. errorCode: a SampleError. positionToIncrement (may be null): += 1.
//   On an error nothing but errorCode is written (token, rng and position stay as they were).
//   scratch: sampleScratchBytes(V) bytes. Params must have passed validateSamplingParams (unless greedy).
enum SampleError : int { kSampleOk = 0, kSampleNaN = 1, kSamplePositiveInf = 2, kSampleAllNegativeInf = 3 };
size_t sampleScratchBytes(int V);
void launchSample(const float* logits, int V, float temperature, int topK, float topP, bool greedy, unsigned long long* rngState, int* token,
                  int* errorCode, int* positionToIncrement, void* scratch, cudaStream_t stream);
// The message sampleNext throws for that error ("" for kSampleOk).
const char* sampleErrorMessage(int errorCode);

}  // namespace tscope::cuda

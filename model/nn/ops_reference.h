// The plain-loop reference ops as free functions (shapes as in backend.h), so tests and the
// fast paths can call the ground truth directly. Accumulation is in double.
#pragma once
#include <cstddef>
#include <vector>

#include "model/nn/backend.h"

namespace tscope::ref {

void embed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0);
void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps);
void rmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps);
void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N);
void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N);
float geluTanh(float x);
float geluErf(float x);
float silu(float x);
void activate(float* x, size_t n, Activation activation);
void swiglu(float* value, const float* gate, size_t n);
void add(float* x, const float* y, size_t n);
void gatherRows(float* out, const float* in, const int* rows, int n, int C);
void scatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C);
void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& shape);
// Backend::crossAttention's plain loop (probs may be null).
void crossAttention(float* out, float* probs, const float* q, const float* kv, int T, int S, int H, int Hkv, int D);
// p (S) = softmax over the S source rows of q . k_j / sqrt(D), k_j = kv row j (2 Hkv D wide) at
// column kvColumn: one query head's cross-attention row (the forward's and the backward's).
void crossAttentionRow(double* p, const float* q, const float* kv, int S, int Hkv, int D, int kvColumn);

}  // namespace tscope::ref

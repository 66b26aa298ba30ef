// Backward passes of the training ops as plain loops (the ground truth for training, like the
// forward reference in ops_reference.h). Each takes the forward's inputs and the gradient of the
// loss with respect to the op's output, and ACCUMULATES (+=) into the gradients of its inputs and
// parameters, so shared tensors (the tied embedding, the residual stream) sum their gradients.
// Shapes as in backend.h; accumulation in double. The reference BackwardOps (backward.h) wraps
// these one to one (backward_reference_ops.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/nn/backend.h"
#include "model/core/config.h"

namespace tscope::ref {

// out (T, C) = wte[tokens] + wpe[t]: dwte (V, C), dwpe (P, C) += rows of dout; dwpe may be null
void embedBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C);

// Training rows: out (rows, C) = wte[tokens[r]] + positions[r % T] for B = rows / T sequences
// of T tokens: dwte (V, C), dpositions (P, C) += rows of dout; dpositions may be null
void embedBackward(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C);

// out = LayerNorm(in) * weight + bias: din (T, C), dweight (C), dbias (C, may be null) +=
void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int C, float eps);

// out = in / sqrt(mean(in^2) + eps) * weight: din (T, C), dweight (C) +=
void rmsNormBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int T, int C, float eps);

// out (T, N) = in (T, K) . weight (K, N) + bias: din (T, K; may be null), dweight (K, N),
// dbias (N; may be null) +=
void matmulBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int K, int N);

// out (T, N) = in (T, K) . weight (N, K)^T: din (T, K), dweight (N, K) +=
void matmulTransposedBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int T, int K, int N);

// out = gelu_tanh(in) elementwise: din (n) +=
void geluTanhBackward(float* din, const float* dout, const float* in, size_t n);
// out = gelu_erf(in) = 0.5 in (1 + erf(in / sqrt 2)) elementwise: din (n) +=
void geluErfBackward(float* din, const float* dout, const float* in, size_t n);
// out = max(in, 0) elementwise (derivative 0 at in <= 0): din (n) +=
void reluBackward(float* din, const float* dout, const float* in, size_t n);
// One of the three above by kind; Activation::SwiGlu throws tscope::Error (use swigluBackward).
void activationBackward(float* din, const float* dout, const float* in, size_t n, Activation activation);
// out = silu(gate) * value: dgate (n), dvalue (n) +=
void swigluBackward(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n);

// Causal multi-head self-attention over T tokens with no cache (training): qkv (T, 3C) and the
// forward's probabilities probs (H, T, T); dout (T, C) is the gradient of the concatenated heads.
// dqkv (T, 3C) +=
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* probs, int T, int H, int D);

// Attention of `batch` independent sequences of shape.T tokens (shape.pos0 must be 0; no cache),
// in every variant of AttentionShape: causal or not, sliding window, GQA/MQA, RoPE, ALiBi.
// qkv (batch*T, qkvDim) as the forward left it (RoPE: Q and K rotated); dout (batch*T, H*D).
// dqkv (batch*T, qkvDim) += gradient with respect to Q | K | V before the rotation. The
// probabilities are recomputed from qkv, as the forward computes them.
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const AttentionShape& shape, int batch);

// Cross-attention of `batch` sequences (BackwardOps::crossAttention): dq (batch*T, H D) +=,
// dkv (batch*S, 2 Hkv D) +=, in double, probabilities recomputed from q and kv.
void crossAttentionBackward(float* dq, float* dkv, const float* dout, const float* q, const float* kv, int T, int S, int H, int Hkv, int D,
                            int batch);

// Softmax cross-entropy over rows of logits (rows, V); scored (rows) may be null (all scored).
// Writes dlogits (rows, V) (=) = scale * (softmax - onehot(target)) on scored rows, 0 on the
// others, and returns the SUM over scored rows of -log p(target). dlogits may alias logits.
double crossEntropyBackward(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale);

// Mean cross-entropy over the scored positions: loss = -mean log softmax(logits)[target].
// logits (T, V); targets (T); scored (T) may be null (all scored). Writes dlogits (T, V) (=, not
// +=) and returns the loss.
double crossEntropyForwardBackward(float* dlogits, const float* logits, const int* targets, const unsigned char* scored, int T, int V);

}  // namespace tscope::ref

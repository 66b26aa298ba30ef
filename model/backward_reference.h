// Backward passes of the GPT-2 ops as plain loops (the ground truth for training, like the
// forward reference in ops_reference.h). Each takes the forward's inputs and the gradient of the
// loss with respect to the op's output, and ACCUMULATES (+=) into the gradients of its inputs and
// parameters, so shared tensors (the tied embedding, the residual stream) sum their gradients.
// Shapes as in backend.h; accumulation in double.
#pragma once
#include <cstddef>
#include <vector>

namespace tscope::ref {

// out (T, C) = wte[tokens] + wpe[t]: dwte (V, C), dwpe (P, C) += rows of dout; dwpe may be null
void embedBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C);

// out = LayerNorm(in) * weight + bias: din (T, C), dweight (C), dbias (C, may be null) +=
void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int C,
                       float eps);

// out (T, N) = in (T, K) . weight (K, N) + bias: din (T, K), dweight (K, N), dbias (N, may be null) +=
void matmulBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int T, int K, int N);

// out (T, N) = in (T, K) . weight (N, K)^T: din (T, K), dweight (N, K) +=
void matmulTransposedBackward(float* din, float* dweight, const float* dout, const float* in, const float* weight, int T, int K, int N);

// out = gelu_tanh(in) elementwise: din (n) +=
void geluTanhBackward(float* din, const float* dout, const float* in, size_t n);

// Causal multi-head self-attention over T tokens with no cache (training): qkv (T, 3C) and the
// forward's probabilities probs (H, T, T); dout (T, C) is the gradient of the concatenated heads.
// dqkv (T, 3C) +=
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* probs, int T, int H, int D);

// Mean cross-entropy over the scored positions: loss = -mean log softmax(logits)[target].
// logits (T, V); targets (T); scored (T) may be null (all scored). Writes dlogits (T, V) (=, not
// +=) and returns the loss.
double crossEntropyForwardBackward(float* dlogits, const float* logits, const int* targets, const unsigned char* scored, int T, int V);

}  // namespace tscope::ref

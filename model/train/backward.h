// The backward ops of training behind one small interface, like Backend for the forward: a
// plain-loop reference (the ground truth, backward_reference.cpp) and an Eigen fast path
// (backward_cpu.cpp). The model-level backward (train_model.cpp, block_backward.cpp) is written
// once against it.
// Every op ACCUMULATES (+=) into the gradients of its inputs and parameters, so shared tensors
// (the tied embedding, the residual stream) sum their gradients. Float pointers live in the memory
// of the Device (device.h) that owns the ops beside its forward Backend: host memory for
// "reference" and "cpu", device memory for "cuda" (kernels/cuda_backward.h). Token ids, targets
// and the scored mask are always HOST pointers.
// Rows: training runs B sequences of T tokens as B*T rows; "rows" below is B*T.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/nn/backend.h"
#include "model/core/config.h"
#include "model/core/error.h"

namespace tscope {

class BackwardOps {
 public:
  virtual ~BackwardOps() = default;
  virtual std::string name() const = 0;  // "reference", "cpu" or "cuda"
  virtual int threadCount() const { return 1; }

  // out (rows, C) = wte[tokens[r]] + positions[r % T]: dwte (V, C) +=; dpositions (P, C) += when
  // not null (learned positions; sinusoidal tables are not trained).
  virtual void embed(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C) = 0;

  // out = LayerNorm(in) * weight + bias: din (rows, C), dweight (C), dbias (C; may be null) +=
  virtual void layerNorm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                         float eps) = 0;
  // out = in / sqrt(mean(in^2) + eps) * weight: din (rows, C), dweight (C) +=
  virtual void rmsNorm(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps) = 0;

  // out (rows, N) = in (rows, K) . weight (K, N) + bias: din (rows, K), dweight (K, N), dbias (N) +=
  // din and dbias may be null (not wanted).
  virtual void matmul(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int K, int N) = 0;
  // out (rows, N) = in (rows, K) . weight (N, K)^T (the unembedding): din (rows, K), dweight (N, K) +=
  virtual void matmulTransposed(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int K, int N) = 0;

  // out = act(in) elementwise for GELU (tanh or erf form) or ReLU: din (n) +=
  virtual void activation(float* din, const float* dout, const float* in, size_t n, Activation activation) = 0;
  // out = silu(gate) * value (SwiGLU), gate and value as they were before the product:
  // dgate (n), dvalue (n) +=
  virtual void swiglu(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) = 0;

  // Multi-head self-attention of `batch` independent sequences of shape.T tokens each (pos0 = 0,
  // no cache), in every variant of AttentionShape (causal or not, window, GQA, RoPE, ALiBi).
  //   qkv (batch*T, qkvDim): Q | K | V as the forward LEFT it (with RoPE: Q and K rotated in place);
  //   dout (batch*T, C): gradient of the concatenated heads;
  //   dqkv (batch*T, qkvDim) += gradient with respect to Q | K | V as they were BEFORE the rotation
  //   (the output of the qkv projection). Probabilities are recomputed from qkv.
  // Every implementation calls requireNoCache(shape) first (the reference's ref::attentionBackward does).
  virtual void attention(float* dqkv, const float* dout, const float* qkv, const AttentionShape& shape, int batch) = 0;
  static void requireNoCache(const AttentionShape& shape) {
    if (shape.pos0 != 0) throw Error("attention backward: training attention has no cache (pos0 must be 0, got " + std::to_string(shape.pos0) + ")");
  }

  // Cross-attention of `batch` sequences (Backend::crossAttention, an encoder-decoder's decoder):
  //   q (batch*T, H D) queries, kv (batch*S, 2 Hkv D) keys | values, dout (batch*T, H D);
  //   dq (batch*T, H D) +=, dkv (batch*S, 2 Hkv D) += (a key/value head sums its query group).
  // Probabilities are recomputed. The default is the plain loop on HOST memory
  // (ref::crossAttentionBackward); a device's ops override it.
  virtual void crossAttention(float* dq, float* dkv, const float* dout, const float* q, const float* kv, int T, int S, int H, int Hkv, int D,
                              int batch);

  // Softmax cross-entropy over rows of logits (rows, V) with targets (rows); scored (rows) may be
  // null (every row scored). Returns the SUM of -log p(target) over scored rows (in double) and
  // writes (=, not +=) dlogits (rows, V) = scale * (softmax - onehot) on scored rows, 0 elsewhere
  // (scale = 1 / scored rows of the whole batch gives the gradient of the mean). dlogits may alias
  // logits (computed in place).
  virtual double crossEntropy(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale) = 0;
};

std::unique_ptr<BackwardOps> makeReferenceBackwardOps();
// threads 0: the same choice as makeCpuBackend(0).
std::unique_ptr<BackwardOps> makeCpuBackwardOps(int threads = 0);

}  // namespace tscope

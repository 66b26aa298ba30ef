// The reference BackwardOps: each method forwards to the plain-loop backward pass of the same
// name in backward_reference.h. It is the ground truth the Eigen BackwardOps (backward_cpu.cpp)
// is tested against, and what the model-level backward runs on when "reference" is chosen.
#include <memory>

#include "model/train/backward.h"
#include "model/train/backward_reference.h"

namespace tscope {

namespace {

class ReferenceBackwardOps : public BackwardOps {
 public:
  std::string name() const override { return "reference"; }

  void embed(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C) override {
    ref::embedBackward(dwte, dpositions, dout, tokens, rows, T, C);
  }
  void layerNorm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                 float eps) override {
    ref::layerNormBackward(din, dweight, dbias, dout, in, weight, rows, C, eps);
  }
  void rmsNorm(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps) override {
    ref::rmsNormBackward(din, dweight, dout, in, weight, rows, C, eps);
  }
  void matmul(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    ref::matmulBackward(din, dweight, dbias, dout, in, weight, rows, K, N);
  }
  void matmulTransposed(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    ref::matmulTransposedBackward(din, dweight, dout, in, weight, rows, K, N);
  }
  void activation(float* din, const float* dout, const float* in, size_t n, Activation activation) override {
    ref::activationBackward(din, dout, in, n, activation);
  }
  void swiglu(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) override {
    ref::swigluBackward(dgate, dvalue, dout, gate, value, n);
  }
  void attention(float* dqkv, const float* dout, const float* qkv, const AttentionShape& shape, int batch) override {
    ref::attentionBackward(dqkv, dout, qkv, shape, batch);  // checks requireNoCache
  }
  double crossEntropy(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale) override {
    return ref::crossEntropyBackward(dlogits, logits, targets, scored, rows, V, scale);
  }
};

}  // namespace

std::unique_ptr<BackwardOps> makeReferenceBackwardOps() { return std::make_unique<ReferenceBackwardOps>(); }

void BackwardOps::crossAttention(float* dq, float* dkv, const float* dout, const float* q, const float* kv, int T, int S, int H, int Hkv, int D,
                                 int batch) {
  ref::crossAttentionBackward(dq, dkv, dout, q, kv, T, S, H, Hkv, D, batch);
}

}  // namespace tscope

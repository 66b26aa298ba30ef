// The backward of one transformer block, the mirror of BlockForward::layer (model/nn/block.h),
// written once against BackwardOps: one method per sublayer, called in reverse forward order (as
// llm.c's gpt2_backward): the feed-forward (dense, or a mixture's experts and shared expert, then
// its router), the cross-attention of a decoder layer, the attention (with the q/k norm), each
// inside its residual and norm. It reads what TrainModel's forward kept of the layer (LayerActivations);
// every gradient ACCUMULATES (+=), as the ops do. One object per stack (the decoder's, and the
// encoder's of an encoder-decoder model), beside that stack's BlockForward; sizes come from the
// rows a call processes. Owns the backward's scratch, reused by every layer and call.
#pragma once
#include <vector>

#include "model/core/config.h"
#include "model/core/weights.h"
#include "model/nn/backend.h"
#include "model/nn/block.h"
#include "model/nn/efficient_attention.h"
#include "model/train/backward.h"

namespace tscope {

// What the block forward keeps of one layer for the backward.
struct LayerActivations {
  Floats in;           // (R, C) residual entering the layer
  Floats normed1;      // (R, C) ln_1(in) (pre-norm)
  Floats qkv;          // (R, QKV) as the attention left it (q/k normed with qk_norm, RoPE rotated)
  Floats qkvRaw;       // (R, QKV) qk_norm: the projection before the q/k norm
  Floats attn;         // (R, A) concatenated heads
  Floats sum1;         // (R, C) post-norm: in + attention (input of ln_1)
  Floats mid;          // (R, C) residual after the attention sublayer
  Floats normed2;      // (R, C) ln_2(mid) (pre-norm)
  Floats hidden;       // (R, F) dense: pre-activation
  Floats gate;         // (R, F) dense SwiGLU gate
  Floats act;          // (R, F) dense: activated
  Floats sum2;         // (R, C) post-norm: mid + feed-forward (input of ln_2)
  MoeActivations moe;  // MoE: routing per sequence, each expert's rows and activations
  // Decoder layers of an encoder-decoder model: the cross-attention sublayer.
  Floats crossKv;    // (B*S, 2 Hkv D) keys | values of the encoder's output
  Floats normedX;    // (R, C) ln_x(mid) (pre-norm)
  Floats crossQ;     // (R, A) queries
  Floats crossAttn;  // (R, A) concatenated heads
  Floats sumX;       // (R, C) post-norm: mid + cross-attention (input of ln_x)
  Floats midX;       // (R, C) residual after the cross-attention sublayer (the feed-forward's residual input)
};

// A decoder layer's link to the encoder (encoder-decoder models): the encoder's output, which its
// cross-attention reads, and that output's gradient, which it sums into.
struct EncoderLink {
  const float* out = nullptr;  // (B*S, C)
  float* grad = nullptr;       // (B*S, C) +=
  int S = 0;                   // source rows per sequence
};

// v = n zeros in the backend's memory (resized first): a gradient the ops then accumulate into.
void zeroVector(Backend& backend, Floats& v, size_t n);

class BlockBackward {
 public:
  // The backward of the layers `stack` runs (built from `config`: the decoder's, or the encoder's
  // from encoderStackConfig), with `backward`'s ops in `forward`'s memory. Keeps the references.
  BlockBackward(const ModelConfig& config, const BlockForward& stack, Backend& forward, BackwardOps& backward);

  // The gradient of the residual stream (R, C): the caller sets it to the gradient after the last
  // layer; each layer() call leaves in it the gradient of that layer's input.
  Floats& residual() { return dx_; }

  // One layer's backward over B sequences of shape.T rows, as BlockForward::layer ran them
  // (shape: the stack's attentionShape(T, 0, T)): gw += the gradient of the layer's parameters,
  // residual() from after the layer to before it. A decoder layer with cross-attention sums the
  // encoder output's gradient into encoder.grad.
  void layer(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, int B, const AttentionShape& shape,
             const EncoderLink& encoder = {});

  // The configured norm (LayerNorm or RMSNorm over C-wide rows) in reverse: din, dweight, dbias +=.
  void norm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows);

 private:
  // A sublayer f and its residual in reverse: pre-norm x' = x + f(normed), normed = ln(x);
  // post-norm x' = ln(x + f(x)), the sum kept in `sum`. dx_ holds dx'. sublayer(in, dout, din)
  // adds f's input gradient into din (R, C) from its output gradient dout (R, C); dx_ leaves
  // holding dx. weight: ln's (dweight, dbias its gradients).
  template <typename Sublayer>
  void residualSublayer(const float* weight, float* dweight, float* dbias, const float* x, const float* normed, const float* sum, int R,
                        Sublayer&& sublayer);

  // The sublayers, in the order layer() calls them; each: din += from dout, gw += its parameters'.
  // A dense feed-forward of n rows, F = width wide (0 = d_ff; the shared expert's is moe_shared_expert_d_ff).
  void feedForward(const FeedForwardWeights& w, const FeedForwardWeights& gw, const float* in, int n, const Floats& hidden, const Floats& gate,
                   const Floats& act, const float* dout, float* din, int width = 0);
  // A mixture of experts over B sequences of T rows: the experts, the shared expert, the router.
  void mixtureOfExperts(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, const float* dout, float* din,
                        int B, int T);
  // Each expert's rows, scaled by their gates; dgates_ = the gradient of each kept assignment's gate.
  void experts(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* doutHost, float* din);
  // out += s * y per row with s = sigmoid(in . g): s * dout into the expert, ds s (1 - s) into g and din.
  void sharedExpert(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, const float* doutHost, float* din,
                    int R);
  // The router logits' gradient (through the gates, dgates_, and the load-balancing loss), then the router matmul.
  void router(const LayerWeights& w, const LayerWeights& gw, const MoeActivations& moe, const float* in, float* din, int B, int T);
  // Queries from in (R, C), keys and values from the encoder's output.
  void crossAttention(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, const float* in, const float* dout, float* din,
                      int B, int T, const EncoderLink& encoder);
  // The self-attention: W_O, the attention (the backend's, or the stack's variant), the q/k norm, the qkv projection.
  void attention(const LayerWeights& w, const LayerWeights& gw, const LayerActivations& la, const float* in, const float* dout, float* din, int B,
                 const AttentionShape& shape);
  // qk_norm: dqkv_ holds the gradient after each head's RMSNorm of q and k; returns that of the
  // projection before it (dqkvRaw_), qkvRaw (R, QKV) being the projection.
  const float* qkNorm(const LayerWeights& w, const LayerWeights& gw, const float* qkvRaw, int R);
  // dqkv (B*T, QKV) += the gradient of a variant's attention (the block's efficient-attention op, on
  // the host as in the forward), head by head: q and k as the forward left them (RoPE rotated), their
  // gradients turned back by RoPE's angles; a key/value head sums the gradients of its query group.
  // (block_backward_variant.cpp)
  void variantAttention(float* dqkv, const float* dattn, const float* qkv, const AttentionShape& s, int B, const AttentionVariantParams& params);

  ModelConfig config_;
  const BlockForward* stack_;  // its MoE routing and attention variant
  Backend* fw_;
  BackwardOps* bw_;
  // scratch, sized by each call
  Floats dx_, dmid_, dnormed_, dsum_;        // (R, C) the residual's gradient; its other path; a norm's input; a post-norm sum's
  Floats dattn_, dqkv_, dqkvRaw_;            // (R, A), (R, QKV), (R, QKV) qk_norm: before the q/k norm
  Floats dhidden_, dgate_, dact_;            // (n, F) a feed-forward's
  Floats drouter_, dExpertOut_, dExpertIn_;  // (R, E), (n, C), (n, C)
  Floats dSharedGateLogit_;                  // (R, 1) a shared expert's gate logit gradient
  Floats dCrossQ_, dCrossKv_;                // (R, A), (B*S, 2 Hkv D)
  std::vector<float> drouterHost_, dExpertOutHost_, doutCopy_, expertOutCopy_;  // host side of the MoE backward
  std::vector<std::vector<float>> dgates_;                                      // (B) per sequence: the gradient of each assignment's gate
  std::vector<float> dqkvHost_;                                                 // (R, QKV) a variant attention's gradient, summed on the host
  Floats dqkvStaged_;                                                           // (R, QKV) the same on the device, before it is added to dqkv
};

}  // namespace tscope

// What TrainModel keeps between its forward and its backward (train_model.cpp's private header),
// and the backward of an efficient-attention variant's heads on the host. Split from
// train_model.cpp; nothing else includes it.
#pragma once
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/block.h"
#include "model/nn/efficient_attention.h"
#include "model/train/train_model.h"

namespace tscope {

// What the block forward keeps of one layer for the backward.
struct LayerActivations {
  Floats in;       // (R, C) residual entering the layer
  Floats normed1;  // (R, C) ln_1(in) (pre-norm)
  Floats qkv;      // (R, QKV) as the attention left it (q/k normed with qk_norm, RoPE rotated)
  Floats qkvRaw;   // (R, QKV) qk_norm: the projection before the q/k norm
  Floats attn;     // (R, A) concatenated heads
  Floats sum1;     // (R, C) post-norm: in + attention (input of ln_1)
  Floats mid;      // (R, C) residual after the attention sublayer
  Floats normed2;  // (R, C) ln_2(mid) (pre-norm)
  Floats hidden;   // (R, F) dense: pre-activation
  Floats gate;     // (R, F) dense SwiGLU gate
  Floats act;      // (R, F) dense: activated
  Floats sum2;     // (R, C) post-norm: mid + feed-forward (input of ln_2)
  MoeActivations moe;  // MoE: routing per sequence, each expert's rows and activations
  // Decoder layers of an encoder-decoder model: the cross-attention sublayer.
  Floats crossKv;    // (B*S, 2 Hkv D) keys | values of the encoder's output
  Floats normedX;    // (R, C) ln_x(mid) (pre-norm)
  Floats crossQ;     // (R, A) queries
  Floats crossAttn;  // (R, A) concatenated heads
  Floats sumX;       // (R, C) post-norm: mid + cross-attention (input of ln_x)
  Floats midX;       // (R, C) residual after the cross-attention sublayer (the feed-forward's residual input)
};

struct TrainModel::Activations {
  std::vector<LayerActivations> layers;
  Floats final;    // (R, C) residual after the last layer
  Floats normedF;  // (R, C) ln_f(final) (pre-norm)
  Floats logits;   // (R, V) then dlogits
  Floats kCache, vCache;  // (T, Hkv D) per-sequence scratch for the forward attention
  Floats ffOut;    // (R, C)
  Floats normScratch;  // (R, C) post-norm: the norm before it replaces the residual
  Floats probs, scores;  // (H, T, T) sequence 0's attention maps of the captured layer
  // backward scratch
  Floats x;         // (R, C) the residual stream of the forward
  Floats dx, dmid, dnormed, dattn, dqkv, dhidden, dgate, dact, dsum, dff, drouter, dExpertOut, dExpertIn;
  Floats dSharedGateLogit;  // (R, 1) a shared expert's gate logit gradient
  std::vector<float> drouterHost, dExpertOutHost, dffCopy, expertOutCopy;  // host side of the MoE backward
  std::vector<float> dqkvHost;  // (R, QKV) a variant attention's gradient, summed on the host
  Floats dqkvStaged;            // (R, QKV) the same on the device, before it is added to dqkv
  Floats dqkvRaw;   // (R, QKV) qk_norm: gradient of the projection's output (before the q/k norm)
  // Encoder-decoder models: the encoder's layers over B sources of S rows, and their gradients.
  std::vector<LayerActivations> encoderLayers;
  Floats encoderX;        // (B*S, C) the encoder's residual stream
  Floats encoderFinal;    // (B*S, C) residual after the last encoder layer
  Floats encoderNormedF;  // (B*S, C) enc.ln_f(encoderFinal) (pre-norm)
  Floats encoderKCache, encoderVCache;  // (S, Hkv D) per-sequence scratch
  Floats dEncoderOut;     // (B*S, C) gradient of the encoder's output (summed over the decoder layers)
  Floats dCrossQ, dCrossKv;  // (R, C), (B*S, 2 Hkv D)
};

// dqkv (B*T, QKV) += the gradient of a variant's attention (the block's efficient-attention op, on
// the host as in the forward), head by head: q and k as the forward left them (RoPE rotated), their
// gradients turned back by RoPE's angles; a key/value head sums the gradients of its query group.
// `scratch` and `staged` (a device backend's copy) are kept by the caller and reused.
void variantAttentionBackward(Backend& fw, float* dqkv, const float* dattn, const float* qkv, const AttentionShape& s, int B,
                              const AttentionVariantParams& params, std::vector<float>& scratch, Floats& staged);

}  // namespace tscope

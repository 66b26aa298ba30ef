// What TrainModel keeps between its forward and its backward (train_model.cpp's private header;
// nothing else includes it). Each layer's activations are LayerActivations (block_backward.h, which
// reads them); the backward's scratch belongs to the BlockBackwards.
#pragma once
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/block.h"
#include "model/train/block_backward.h"
#include "model/train/train_model.h"

namespace tscope {

struct TrainModel::Activations {
  std::vector<LayerActivations> layers;
  Floats x;               // (R, C) the residual stream of the forward
  Floats final;           // (R, C) residual after the last layer
  Floats normedF;         // (R, C) ln_f(final) (pre-norm)
  Floats logits;          // (R, V) then dlogits
  Floats kCache, vCache;  // (T, Hkv D) per-sequence scratch for the forward attention
  Floats ffOut;           // (R, C)
  Floats normScratch;     // (R, C) post-norm: the norm before it replaces the residual
  Floats dnormedF;        // (R, C) backward: the gradient of ln_f(final)
  Floats embeddedRaw;     // (R, C) embedding_norm: the embeddings before their norm
  Floats patchIn;         // (R, K) image models: every sequence's patch rows (imagePatchRows)
  // mlm_head: the head's steps (HeadActivations), then the backward's scratch and the ones column
  // whose product with the logits' gradient sums it into the output bias's.
  Floats headPre, headAct, headOut, dHeadA, dHeadB, ones, biasScratch;
  // Encoder-decoder models: the encoder's layers over B sources of S rows, and their gradients.
  std::vector<LayerActivations> encoderLayers;
  Floats encoderX;                      // (B*S, C) the encoder's residual stream
  Floats encoderFinal;                  // (B*S, C) residual after the last encoder layer
  Floats encoderNormedF;                // (B*S, C) enc.ln_f(encoderFinal) (pre-norm)
  Floats encoderKCache, encoderVCache;  // (S, Hkv D) per-sequence scratch
  Floats dEncoderOut;                   // (B*S, C) gradient of the encoder's output (summed over the decoder layers)
};

}  // namespace tscope

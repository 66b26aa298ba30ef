// The transformer's training pass: the block forward inference runs (model/nn/block.h's
// BlockForward) over B sequences of T tokens, keeping every activation the backward needs; then
// what is training's own: the mean cross-entropy (plus the MoE load-balancing loss) and the
// backward into a gradient Weights with the same layout as the parameters, layer by layer in
// reverse with BlockBackward (block_backward.h, the block forward's mirror). Forward and backward
// ops come from one Device (device.h: reference, Eigen or CUDA).
// Every architecture-lab variant trains (positions, norms, pre/post norm, activations, MoE token
// or expert choice, masks, GQA, tied or untied, attention-only, qk_norm).
// Memory: activations live in the forward backend's memory (host arrays on the CPU backends, as
// always; device Buffers on CUDA, where the MoE routing downloads the router logits and runs on
// the host). Parameters and gradients come as Weights (host) or as ParamView (pointers into the
// forward backend's memory, e.g. a device copy that the Trainer keeps on the GPU).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/block.h"
#include "model/train/backward.h"
#include "model/train/block_backward.h"
#include "model/train/device.h"
#include "model/nn/moe.h"
#include "model/train/optimizer.h"
#include "model/core/weights.h"

namespace tscope {

// B sequences of T tokens, row-major (B, T); scored may be null (every target counts).
struct BatchView {
  int batch = 0;                    // B
  int steps = 0;                    // T (<= n_positions)
  const int* inputs = nullptr;      // (B, T)
  const int* targets = nullptr;     // (B, T)
  const uint8_t* scored = nullptr;  // (B, T) 1 where the loss counts targets[b, t]
  // Encoder-decoder models: each sequence's source (inputs/targets are then the decoder's).
  int sourceSteps = 0;           // S (<= n_positions)
  const int* sources = nullptr;  // (B, S)
  // Image models (config.isImage()): each sequence's image (B, imageFloats()), channel-major;
  // inputs are then imageTokenIds and the target that counts is the class at [CLS] (t = 0).
  const float* images = nullptr;
};

// The pointers of a Weights (same layout), possibly into another memory: `arena` holds
// totalFloats floats and every named pointer points into it (null where the model has none).
struct ParamView : ModelParams<float> {
  float* arena = nullptr;
  size_t totalFloats = 0;
  // The view of `weights` itself (host memory: its owned arena, so not weights read in place from
  // a file: throws tscope::Error for those), or of the same layout at `base` (totalFloats floats).
  static ParamView of(const Weights& weights);
  static ParamView at(const Weights& layout, float* base);
};

struct LossReport {
  double loss = 0;     // mean cross-entropy over scored targets (nats/token)
  double auxLoss = 0;  // MoE load-balancing loss, summed over layers (already alpha-weighted)
  int scoredTokens = 0;
  // A masked LM's evaluation (loss without gradients): scored targets that are the logits' argmax
  // (the masked-token accuracy's numerator); -1 when not counted.
  int correctTokens = -1;
  std::vector<int> expertLoad;  // (L, E) assignments kept per expert, summed over the batch (MoE only)
};

class TrainModel {
 public:
  // Computes with the device's forward and backward ops, in its memory; keeps a reference to it.
  TrainModel(const ModelConfig& config, Device& device);
  ~TrainModel();
  TrainModel(const TrainModel&) = delete;
  TrainModel& operator=(const TrainModel&) = delete;

  const ModelConfig& config() const { return config_; }

  // Forward only (evaluation): the loss of `weights` on the batch.
  LossReport loss(const Weights& weights, const BatchView& batch);

  // Forward and backward: grads (same config as weights) are OVERWRITTEN with the gradient of
  // loss + auxLoss with respect to every parameter. Throws tscope::Error on a bad batch (shape,
  // token id out of range, T > n_positions, no scored target).
  LossReport lossAndGradients(const Weights& weights, Weights& grads, const BatchView& batch);
  // The same on a device backend only with copies: these upload weights (and download grads) on
  // every call. The ParamView forms work in the forward backend's memory with no copy.
  LossReport loss(const ParamView& weights, const BatchView& batch);
  LossReport lossAndGradients(const ParamView& weights, const ParamView& grads, const BatchView& batch);

 private:
  struct Activations;  // everything the forward keeps for the backward (train_activations.h)
  // The forward, the loss and (grads not null) the backward.
  LossReport run(const ParamView& weights, const ParamView* grads, const BatchView& batch);
  void checkBatch(const BatchView& batch) const;
  // Where the block forward of one layer over `rows` rows writes: every activation the backward
  // reads, kept in la (shared scratch for the rest).
  LayerTensors keepAll(LayerActivations& la, size_t rows);
  // Encoder-decoder models: the encoder's forward over the B sources; returns its output (B*S, C).
  // report.auxLoss += its layers' load-balancing losses.
  const float* encode(const ParamView& weights, const BatchView& batch, LossReport& report);
  // The decoder's forward (its cross-attention reading encoderOut, when not null) and the logits
  // (R, V); report.auxLoss and expertLoad += its layers'.
  void decode(const ParamView& weights, const BatchView& batch, const float* encoderOut, LossReport& report);
  // report.loss from the logits, which then hold their gradient.
  void crossEntropy(const BatchView& batch, LossReport& report, bool evaluating);
  int countArgmaxHits(const BatchView& batch);
  // From the logits' gradient through the unembedding (and the final norm) to that of the residual
  // after the last layer (R rows), left in blockBackward_.residual().
  void unembeddingBackward(const ParamView& weights, const ParamView& grads, int R);
  void headBackward(const ParamView& weights, const ParamView& grads, int R, float* dIn);
  // dbias (V) += the rows' sum of the logits' gradient (the output bias of the MLM head or a classifier).
  void outputBiasBackward(float* dbias, int R);
  void embeddingBackward(const ParamView& weights, const ParamView& grads, const BatchView& batch);

  ModelConfig config_;
  std::optional<BlockForward> encoderBlock_;  // encoder-decoder models: the encoder's blocks (bidirectional)
  Backend* forward_;
  BackwardOps* backward_;
  Buffer deviceWeights_, deviceGrads_;            // copies for the Weights forms on a device backend
  BlockForward block_;                            // the block forward inference runs too
  BlockBackward blockBackward_;                   // its mirror: the decoder's (or the only) layers in reverse
  std::optional<BlockBackward> encoderBackward_;  // encoder-decoder models: the encoder's layers in reverse
  std::unique_ptr<Activations> acts_;             // reused between calls
};

}  // namespace tscope

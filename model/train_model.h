// The transformer's training pass: a forward over B sequences of T tokens that keeps every
// activation the backward needs, the mean cross-entropy (plus the MoE load-balancing loss), and
// the backward into a gradient Weights with the same layout as the parameters. Written once:
// forward ops come from a host Backend (reference or Eigen), backward ops from BackwardOps.
// Every architecture-lab variant trains (positions, norms, pre/post norm, activations, MoE token
// or expert choice, masks, GQA, tied or untied, attention-only).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/backward.h"
#include "model/moe.h"
#include "model/weights.h"

namespace tscope {

// B sequences of T tokens, row-major (B, T); scored may be null (every target counts).
struct BatchView {
  int batch = 0;                     // B
  int steps = 0;                     // T (<= n_positions)
  const int* inputs = nullptr;       // (B, T)
  const int* targets = nullptr;      // (B, T)
  const uint8_t* scored = nullptr;   // (B, T) 1 where the loss counts targets[b, t]
};

struct LossReport {
  double loss = 0;          // mean cross-entropy over scored targets (nats/token)
  double auxLoss = 0;       // MoE load-balancing loss, summed over layers (already alpha-weighted)
  int scoredTokens = 0;
  std::vector<int> expertLoad;  // (L, E) assignments kept per expert, summed over the batch (MoE only)
};

class TrainModel {
 public:
  // Keeps references to both; `forward` must be a host backend (isHost()).
  TrainModel(const ModelConfig& config, Backend& forward, BackwardOps& backward);
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

 private:
  struct Activations;  // everything the forward keeps for the backward (train_model.cpp)
  LossReport run(const Weights& weights, Weights* grads, const BatchView& batch);
  void checkBatch(const BatchView& batch) const;

  ModelConfig config_;
  Backend* forward_;
  BackwardOps* backward_;
  std::vector<float> sinusoids_;     // (n_positions, C) sinusoidal table when used
  std::vector<float> alibiSlopes_;   // (H) ALiBi only
  MoeRoutingParams moeParams_;
  std::unique_ptr<Activations> acts_;  // reused between calls
};

}  // namespace tscope

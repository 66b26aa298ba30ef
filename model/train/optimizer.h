// Training-loop numerics: AdamW with decoupled weight decay (Loshchilov & Hutter 2019, the update
// torch.optim.AdamW makes), gradient clipping by global L2 norm, the warm-up + cosine learning-rate
// schedule and gradient accumulation. All single-threaded and deterministic: same input, same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/core/weights.h"

namespace tscope {

struct AdamWConfig {
  float lr = 3e-4f;          // default learning rate, used by step() without an lr argument
  float beta1 = 0.9f;        // decay of the first moment (mean of gradients)
  float beta2 = 0.95f;       // decay of the second moment (mean of squared gradients)
  float eps = 1e-8f;         // added to sqrt(vhat) in the denominator
  float weightDecay = 0.1f;  // decoupled: p *= 1 - lr * weightDecay, before the Adam update
};

// Throws tscope::Error naming the field: lr > 0, beta1 and beta2 in [0, 1), eps > 0,
// weightDecay >= 0, all finite.
void validate(const AdamWConfig& config);

// Everything AdamW carries between steps; saving it and loading it back resumes bit for bit.
struct AdamWState {
  std::vector<float> m;  // (n) first moment
  std::vector<float> v;  // (n) second moment
  int64_t step = 0;      // optimizer steps taken (the bias corrections use it)
};

class AdamW {
 public:
  AdamW(size_t n, AdamWConfig config);

  // One update of params (n) from grads (n), as torch.optim.AdamW computes it:
  //   p *= 1 - lr * wd                           (only where decayMask[i] != 0; null = decay all)
  //   m  = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
  //   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)      t = steps taken, from 1
  // `lr` is this step's learning rate (from LrSchedule::at); it must be finite and >= 0.
  void step(float* params, const float* grads, const uint8_t* decayMask, float lr);
  void step(float* params, const float* grads, const uint8_t* decayMask) { step(params, grads, decayMask, config_.lr); }

  size_t size() const { return m_.size(); }
  int64_t stepCount() const { return step_; }
  const AdamWConfig& config() const { return config_; }

  AdamWState saveState() const { return {m_, v_, step_}; }
  // Throws tscope::Error if m or v are not size() long or step is negative.
  void loadState(const AdamWState& state);

 private:
  AdamWConfig config_;
  std::vector<float> m_;  // (n)
  std::vector<float> v_;  // (n)
  int64_t step_ = 0;
};

// The usual decay rule for a Weights arena (as nanoGPT and llm.c): tensors of rank >= 2 (matrices,
// embeddings) are decayed, rank-1 tensors (biases, norm weights) are not; arena padding is not.
// Returns (totalFloats) bytes of 0/1, for AdamW::step's decayMask.
std::vector<uint8_t> weightDecayMask(const std::vector<ParamSpec>& layout, size_t totalFloats);

// Scales grads (n) in place so their global L2 norm is at most maxNorm (> 0), and returns the norm
// before clipping (summed in double, in index order). A non-finite norm leaves grads untouched, so
// the caller can see it and skip the step. Unlike torch.nn.utils.clip_grad_norm_ there is no 1e-6
// in the divisor: a clipped gradient has norm maxNorm to float rounding.
float clipGradNorm(float* grads, size_t n, float maxNorm);

// Linear warm-up, then cosine decay to minLr. `step` is the 0-based index of the optimizer step
// about to be taken (the convention of llm.c), so no step is wasted on lr 0:
//   at(0) = maxLr / warmupSteps,  at(warmupSteps - 1) = maxLr,  at(totalSteps - 1) = minLr,
// non-decreasing before the peak and non-increasing after it; steps past the end give minLr.
// With warmupSteps = 0 the schedule starts at maxLr.
struct LrSchedule {
  float maxLr = 3e-4f;
  float minLr = 3e-5f;
  int warmupSteps = 0;
  int totalSteps = 1;
  // Throws tscope::Error naming the field: maxLr > 0, 0 <= minLr <= maxLr,
  // 0 <= warmupSteps <= totalSteps, totalSteps >= 1.
  void validate() const;
  float at(int step) const;  // throws tscope::Error for step < 0
};

// Gradient accumulation: add() k micro-batch gradients, each the mean over its micro-batch, and
// mean() is their average, i.e. the gradient of the mean loss over all k equal micro-batches.
// Sums in float in the order added, then divides by k once.
class GradientAccumulator {
 public:
  GradientAccumulator(size_t n, int microBatches);  // microBatches >= 1
  void add(const float* grads);                     // throws if already ready()
  bool ready() const { return added_ == microBatches_; }
  int added() const { return added_; }
  const std::vector<float>& mean();  // (n); throws unless ready()
  void reset();                      // zero the sum for the next k micro-batches

 private:
  std::vector<float> sum_;  // (n) running sum, turned into the mean in place by mean()
  int microBatches_;
  int added_ = 0;
  bool averaged_ = false;
};

}  // namespace tscope

// AdamW, gradient clipping, the learning-rate schedule and gradient accumulation (see optimizer.h).
// The AdamW arithmetic follows torch.optim.AdamW's order of operations (scalars such as the bias
// corrections in double, element-wise work in float) so the golden test can hold it to 1e-6.
#include "model/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "model/core/error.h"

namespace tscope {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

std::string str(double x) { return std::to_string(x); }

}  // namespace

void validate(const AdamWConfig& c) {
  require(std::isfinite(c.lr) && c.lr > 0, "AdamWConfig.lr must be finite and > 0, got " + str(c.lr));
  require(std::isfinite(c.beta1) && c.beta1 >= 0 && c.beta1 < 1, "AdamWConfig.beta1 must be in [0, 1), got " + str(c.beta1));
  require(std::isfinite(c.beta2) && c.beta2 >= 0 && c.beta2 < 1, "AdamWConfig.beta2 must be in [0, 1), got " + str(c.beta2));
  require(std::isfinite(c.eps) && c.eps > 0, "AdamWConfig.eps must be finite and > 0, got " + str(c.eps));
  require(std::isfinite(c.weightDecay) && c.weightDecay >= 0, "AdamWConfig.weightDecay must be finite and >= 0, got " + str(c.weightDecay));
}

AdamW::AdamW(size_t n, AdamWConfig config) : config_(config), m_(n, 0.0f), v_(n, 0.0f) { validate(config_); }

void AdamW::step(float* params, const float* grads, const uint8_t* decayMask, float lr) {
  require(std::isfinite(lr) && lr >= 0, "AdamW::step: lr must be finite and >= 0, got " + str(lr));
  const size_t n = m_.size();
  if (n > 0) require(params != nullptr && grads != nullptr, "AdamW::step: null params or grads");
  ++step_;
  // Scalars in double, then rounded once to float, as torch does with its Python-float scalars.
  const double beta1 = config_.beta1, beta2 = config_.beta2;
  const double biasCorrection1 = 1.0 - std::pow(beta1, static_cast<double>(step_));
  const double biasCorrection2 = 1.0 - std::pow(beta2, static_cast<double>(step_));
  const float decayFactor = static_cast<float>(1.0 - double(lr) * double(config_.weightDecay));
  const float b1 = config_.beta1, oneMinusB1 = static_cast<float>(1.0 - beta1);
  const float b2 = config_.beta2, oneMinusB2 = static_cast<float>(1.0 - beta2);
  const float stepSize = static_cast<float>(double(lr) / biasCorrection1);
  const float biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
  const float eps = config_.eps;
  float* m = m_.data();
  float* v = v_.data();
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    float p = params[i];
    if (decayMask == nullptr || decayMask[i] != 0) p = p * decayFactor;
    m[i] = m[i] * b1 + oneMinusB1 * g;
    v[i] = v[i] * b2 + oneMinusB2 * g * g;
    const float denom = std::sqrt(v[i]) / biasCorrection2Sqrt + eps;
    params[i] = p - stepSize * (m[i] / denom);
  }
}

void AdamW::loadState(const AdamWState& state) {
  require(state.m.size() == m_.size(),
          "AdamWState.m has " + std::to_string(state.m.size()) + " values, the optimizer has " + std::to_string(m_.size()));
  require(state.v.size() == v_.size(),
          "AdamWState.v has " + std::to_string(state.v.size()) + " values, the optimizer has " + std::to_string(v_.size()));
  require(state.step >= 0, "AdamWState.step must be >= 0, got " + std::to_string(state.step));
  m_ = state.m;
  v_ = state.v;
  step_ = state.step;
}

std::vector<uint8_t> weightDecayMask(const std::vector<ParamSpec>& layout, size_t totalFloats) {
  std::vector<uint8_t> mask(totalFloats, 0);
  for (const ParamSpec& spec : layout) {
    size_t numel = 1;
    for (int64_t d : spec.shape) numel *= static_cast<size_t>(d);
    require(spec.offset + numel <= totalFloats, "weightDecayMask: parameter " + spec.name + " runs past the arena");
    if (spec.shape.size() < 2) continue;
    for (size_t i = 0; i < numel; ++i) mask[spec.offset + i] = 1;
  }
  return mask;
}

float clipGradNorm(float* grads, size_t n, float maxNorm) {
  require(std::isfinite(maxNorm) && maxNorm > 0, "clipGradNorm: maxNorm must be finite and > 0, got " + str(maxNorm));
  double sumSquares = 0;
  for (size_t i = 0; i < n; ++i) sumSquares += double(grads[i]) * double(grads[i]);
  const double norm = std::sqrt(sumSquares);
  if (std::isfinite(norm) && norm > maxNorm) {
    const float scale = static_cast<float>(double(maxNorm) / norm);
    for (size_t i = 0; i < n; ++i) grads[i] *= scale;
  }
  return static_cast<float>(norm);
}

void LrSchedule::validate() const {
  require(std::isfinite(maxLr) && maxLr > 0, "LrSchedule.maxLr must be finite and > 0, got " + str(maxLr));
  require(std::isfinite(minLr) && minLr >= 0 && minLr <= maxLr, "LrSchedule.minLr must be in [0, maxLr], got " + str(minLr));
  require(totalSteps >= 1, "LrSchedule.totalSteps must be >= 1, got " + std::to_string(totalSteps));
  require(warmupSteps >= 0 && warmupSteps <= totalSteps, "LrSchedule.warmupSteps must be in [0, totalSteps], got " + std::to_string(warmupSteps));
}

float LrSchedule::at(int step) const {
  validate();
  require(step >= 0, "LrSchedule.at: step must be >= 0, got " + std::to_string(step));
  if (step < warmupSteps) return static_cast<float>(double(maxLr) * (step + 1) / warmupSteps);
  const int peak = warmupSteps > 0 ? warmupSteps - 1 : 0;
  const int last = totalSteps - 1;
  if (step >= last) return step == peak ? maxLr : minLr;              // a one-step decay phase is all peak
  const double progress = double(step - peak) / double(last - peak);  // in (0, 1) here
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return static_cast<float>(double(minLr) + (double(maxLr) - double(minLr)) * cosine);
}

GradientAccumulator::GradientAccumulator(size_t n, int microBatches) : sum_(n, 0.0f), microBatches_(microBatches) {
  require(microBatches >= 1, "GradientAccumulator: microBatches must be >= 1, got " + std::to_string(microBatches));
}

void GradientAccumulator::add(const float* grads) {
  require(!ready(), "GradientAccumulator::add: all " + std::to_string(microBatches_) + " micro-batches already added; call reset()");
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += grads[i];
  ++added_;
}

const std::vector<float>& GradientAccumulator::mean() {
  require(ready(), "GradientAccumulator::mean: " + std::to_string(added_) + " of " + std::to_string(microBatches_) + " micro-batches added");
  if (!averaged_) {
    const float k = static_cast<float>(microBatches_);
    for (float& s : sum_) s /= k;
    averaged_ = true;
  }
  return sum_;
}

void GradientAccumulator::reset() {
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  added_ = 0;
  averaged_ = false;
}

}  // namespace tscope

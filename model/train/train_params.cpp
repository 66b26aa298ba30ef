// The parameter plumbing of training (see train_model.h): ParamView, pointers to every parameter
// of a Weights layout placed at another arena (device memory, or the gradients), and the host
// AdamW behind BackendAdamW (optimizer.h's AdamW and clipGradNorm, bit for bit).
#include <cstdint>
#include <vector>

#include "model/train/optimizer.h"
#include "model/train/train_model.h"

namespace tscope {

namespace {

class HostAdamW : public BackendAdamW {
 public:
  HostAdamW(size_t n, AdamWConfig config) : adamw_(n, config) {}
  void setDecayMask(const uint8_t* hostMask) override {
    if (hostMask) mask_.assign(hostMask, hostMask + adamw_.size());
    else mask_.clear();
  }
  void step(float* params, const float* grads, float lr) override { adamw_.step(params, grads, mask_.empty() ? nullptr : mask_.data(), lr); }
  float clipGradNorm(float* grads, size_t n, float maxNorm) override { return tscope::clipGradNorm(grads, n, maxNorm); }
  void scale(float* x, size_t n, float factor) override {
    for (size_t i = 0; i < n; ++i) x[i] *= factor;
  }
  int64_t stepCount() const override { return adamw_.stepCount(); }
  AdamWState saveState() const override { return adamw_.saveState(); }
  void loadState(const AdamWState& state) override { adamw_.loadState(state); }

 private:
  AdamW adamw_;
  std::vector<uint8_t> mask_;
};

}  // namespace

std::unique_ptr<BackendAdamW> makeHostAdamW(size_t n, AdamWConfig config) { return std::make_unique<HostAdamW>(n, config); }

// An owned arena is writable memory: the const_cast only drops the constness of the reference.
// Weights read in place have no arena (arena() throws), so no pointer into the read-only mapping
// is ever made writable here.
ParamView ParamView::of(const Weights& weights) { return at(weights, const_cast<float*>(weights.arena())); }

ParamView ParamView::at(const Weights& layout, float* target) {
  ParamView view;
  static_cast<ModelParams<float>&>(view) = layout.placedAt<float>(target);
  view.arena = target;
  view.totalFloats = layout.totalFloats();
  return view;
}

}  // namespace tscope

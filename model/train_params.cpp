// The parameter plumbing of training (see train_model.h): ParamView, pointers to every parameter
// of a Weights layout placed at another arena (device memory, or the gradients), and the host
// AdamW behind BackendAdamW (optimizer.h's AdamW and clipGradNorm, bit for bit).
#include <cstdint>
#include <vector>

#include "model/optimizer.h"
#include "model/train_model.h"

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

ParamView ParamView::of(const Weights& weights) { return at(weights, const_cast<float*>(weights.arena())); }

ParamView ParamView::at(const Weights& layout, float* target) {
  const float* base = layout.arena();
  auto relocate = [&](const float* p) -> float* { return p ? target + (p - base) : nullptr; };
  auto relocateFeedForward = [&](FeedForwardWeights f) {
    for (float** p : {&f.fcWeight, &f.fcBias, &f.gateWeight, &f.gateBias, &f.projWeight, &f.projBias}) *p = relocate(*p);
    return f;
  };
  ParamView view;
  view.arena = target;
  view.totalFloats = layout.totalFloats();
  view.wte = relocate(layout.wte);
  view.wpe = relocate(layout.wpe);
  view.lnfWeight = relocate(layout.lnfWeight);
  view.lnfBias = relocate(layout.lnfBias);
  view.lmHead = relocate(layout.lmHead);
  for (const auto& w : layout.layers) {
    LayerWeights r = w;
    for (float** p : {&r.ln1Weight, &r.ln1Bias, &r.qkvWeight, &r.qkvBias, &r.attnProjWeight, &r.attnProjBias, &r.ln2Weight, &r.ln2Bias,
                      &r.routerWeight})
      *p = relocate(*p);
    r.mlp = relocateFeedForward(w.mlp);
    for (auto& expert : r.experts) expert = relocateFeedForward(expert);
    view.layers.push_back(std::move(r));
  }
  return view;
}

}  // namespace tscope

// The parameter plumbing of training (see train_model.h): ParamView, pointers to every parameter
// of a Weights layout placed at another arena (device memory, or the gradients).
#include "model/train/train_model.h"

namespace tscope {

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

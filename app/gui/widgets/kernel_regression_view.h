// Attention as kernel regression, the lecture notes' 1-D example: points (x_i, y_i) (drag them, or
// pick a preset), a query x (drag on the plot), a bandwidth sigma; the Gaussian-kernel weights
// w_i = softmax_i(-(x - x_i)^2 / (2 sigma^2)) as bars and the estimate sum_i w_i y_i, computed by
// the same kernelRegression / softmaxWeights the Inside panel uses for a real head; below it the
// bridge to the dot product (kernelToDotProduct): keys of one norm give softmax(q·k / sigma²).
#pragma once
#include <vector>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

class KernelRegressionView {
 public:
  KernelRegressionView();
  // Draws the widget `width` pixels wide; records "kernel_plot" and "kernel_sigma" for the tests
  // and its numbers in shared.facts["kernel"].
  void draw(SharedView& shared, float width);
  float query() const { return query_; }
  float estimate() const { return estimate_; }

 private:
  void preset(int which);
  void drawBridge(SharedView& shared, float width);
  std::vector<float> xs_, ys_;
  float query_ = 0.5f, sigma_ = 0.6f, estimate_ = 0;
  int dragging_ = -2;  // -2: nothing; -1: the query; i: point i
  int preset_ = 0;
  bool unequalNorms_ = false;  // the bridge's keys scaled by 1 + y/2 instead of all of norm 1
};

}  // namespace tscope::gui

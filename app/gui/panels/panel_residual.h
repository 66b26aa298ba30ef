// Residual stream panel: the logit-lens table (each block's prediction at each position) and the
// residual-norm heatmap (L + 1, T).
#pragma once
#include <cstdint>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

struct ResidualView {
  uint64_t builtFor = 0;
  Heatmap norms;
  float lo = 0, hi = 1;
  int scrolledTo = -1;  // the lens table was last scrolled to show this position
};

class ResidualPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  ResidualView view_;
};

}  // namespace tscope::gui

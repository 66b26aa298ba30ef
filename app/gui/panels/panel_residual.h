// Residual stream panel: the logit-lens table (each block's prediction at each position) and the
// residual-norm heatmap (L + 1, T).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

struct ResidualView {
  uint64_t builtFor = 0;
  TokenHeatmap norms;
  std::vector<std::string> rowLabels, colLabels;  // "embedding", "block 0".. and the tokens of `norms`
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

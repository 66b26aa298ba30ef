// Scaling-laws panel: Kaplan et al. (2020) and Chinchilla (Hoffmann et al. 2022) laws with their
// constants editable, the compute-optimal split of a FLOP budget, and a worked example; and the
// scaling lab (scaling_lab.h): sweeps the class runs itself, the laws fitted to them, emergence.
#pragma once
#include "app/gui/panels/panels.h"
#include "app/gui/panels/scaling/scaling_lab.h"
#include "model/theory/scaling.h"
#include "model/theory/slide_tables.h"

namespace tscope::gui {

// The constants the lecturer edits, the compute budget and the worked example.
struct ScalingView {
  KaplanConstants kaplan;
  ChinchillaConstants chinchilla;  // starts as Hoffmann et al.'s published fit
  int chinchillaPreset = 0;        // 0 published (Hoffmann 2022), 1 refit (Besiroglu 2024), 2 edited
  double computeFlops = 5.88e23;   // the budget slider (Chinchilla's own, 6 x 70B x 1.4T)
  double exampleLoss = 2.1, exampleParams = 175e9, exampleNewParams = 500e9;
  int kaplanPlot = 0;  // which Kaplan law is shown when there is room for one plot only
  GpuPricing pricing;  // the Cost of training tab (Lambda Labs' 2020 V100 figures by default)
};

// The "Cost of training" tab (scaling_cost.cpp): the named runs' GPU-hours and dollars from 6ND at
// an editable price and sustained FLOP/s, beside the slide's figures; the slide's Chinchilla
// worked example at C = 1e23 beside tscope's optimum.
void drawTrainingCost(PanelContext& ctx, ScalingView& v);

class ScalingPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  ScalingView view_;
  ScalingRunsView runs_;
};

}  // namespace tscope::gui

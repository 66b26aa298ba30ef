// The right side of the Training panel: the loss curves (train per step and smoothed, validation,
// the ln V of a uniform guess), the learning-rate schedule (planned and done), the timeline slider
// over the run's snapshots, and the selected snapshot's attention maps and expert load.
#pragma once
#include <vector>

#include "app/gui/panels/training/panel_training.h"
#include "app/gui/widgets/plot.h"

namespace tscope::gui {

// A run's training loss as the loss plot draws it: the running mean over 2.5% of the steps (at
// least 5), averaged into at most 800 points; xs are steps.
void runningMeanCurve(const std::vector<float>& loss, std::vector<double>& xs, std::vector<double>& ys);
// The loss plot's axes: steps 0..xMax, nats on a log scale from below the lowest to above the
// highest finite positive value of the curves and of `include` (e.g. ln V; NaN: none).
void setLossAxes(Plot& plot, double xMax, const std::vector<const std::vector<double>*>& curves, double include);

void drawTrainingCharts(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view);

}  // namespace tscope::gui

// The right side of the Training panel: the loss curves (train per step and smoothed, validation,
// the ln V of a uniform guess), the learning-rate schedule (planned and done), the timeline slider
// over the run's snapshots, and the selected snapshot's attention maps and expert load.
#pragma once
#include "app/gui/panels/panel_training.h"

namespace tscope::gui {

void drawTrainingCharts(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view);

}  // namespace tscope::gui

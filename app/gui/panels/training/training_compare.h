// The Training panel's Compare view: opens a training comparison (model/train/comparison.h: runs of
// several presets made by `tscope-cli compare`) from the files shipped in assets/comparisons/ or any
// path, and draws every run's validation loss (and, lighter, its smoothed training loss) in one plot
// with a legend per run, and a table of the runs' attention, size, losses and speed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "model/train/comparison.h"

namespace tscope::gui {

struct TrainingCompareView {
  bool scanned = false;              // the shipped files were listed (once, at the first draw)
  std::vector<std::string> shipped;  // paths of assets/comparisons/*.json, sorted
  std::string path;                  // the path box
  std::string loadedPath;            // the file on screen ("" none)
  std::optional<TrainingComparison> comparison;
  std::string error;      // one line: why the last file did not open ("" when it did)
  bool showTrain = true;  // draw the smoothed training losses too
  bool zoomEnd = true;    // the y range of the last 80% of the steps (where the runs differ)
};

void drawTrainingCompare(PanelContext& ctx, TrainingCompareView& v);

}  // namespace tscope::gui

// Training panel: pick a preset, edit the run, start / pause / stop it, save the model and open it
// in the explorer; on the right the run's charts (training_charts.cpp) or, in the Compare tab, a
// saved comparison of several runs (training_compare.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/panels/training/training_compare.h"
#include "app/gui/widgets/token_heatmap.h"
#include "model/train/train_presets.h"

namespace tscope::gui {

// The run being edited (a preset, then the user's edits), where the timeline is, and the textures
// of the snapshot on screen (rebuilt when the snapshot, layer or head change).
struct TrainingPanelView {
  bool initialized = false;
  int preset = 0;      // index into trainPresets()
  TrainConfig config;  // the preset's config with the user's edits
  DataSpec data;
  std::string problem;          // validateTrainSetup(config, data); "" when it can start
  std::string saveDir;          // where Save model writes
  bool saveDirEdited = false;   // typed by the user (else it follows the preset)
  uint64_t savesRequested = 0;  // save() calls made; the session counts the ones finished
  uint64_t openAfterSave = 0;   // open the model in the explorer once this save is done (0: none)
  int snapshot = -1;            // index into the timeline
  bool followLatest = true;
  int layer = 1, head = 0;                           // the head shown large (layer 1: where induction heads live)
  std::shared_ptr<const TrainingSnapshot> builtFor;  // what the textures show
  int builtLayer = -1, builtHead = -1;
  TokenHeatmap attention;           // the head shown large, with its colour scale
  std::vector<Heatmap> thumbnails;  // (L * H) every head of the snapshot
  TrainingCompareView compare;      // the Compare tab
};

class TrainingPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // Selects the preset (key or name) and starts it, pausing once pauseAtStep steps are done
  // (0: runs to the end). False for an unknown preset.
  bool startPreset(TrainingSession& training, const std::string& preset, int pauseAtStep);
  // Shows this layer and head large (clamped to the run's model when drawn); -1 keeps the current.
  void showHead(int layer, int head);
  // A command's preset: started, its layer and head shown; false for an unknown preset.
  bool handle(const PanelCommand& command, TrainingSession& training) override {
    if (command.trainPreset.empty() || !startPreset(training, command.trainPreset, command.trainSteps)) return false;
    showHead(command.layer, command.head);
    return true;
  }

 private:
  TrainingPanelView view_;
};

}  // namespace tscope::gui

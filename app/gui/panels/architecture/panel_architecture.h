// Architecture & cost panel: edit a config (or pick a GPT-3 size) and see its parameters, FLOPs
// per token and memory, all from model/theory/cost.h (tables in cost_tables.cpp).
#pragma once
#include <string>

#include "app/gui/panels/architecture/three_families_view.h"
#include "app/gui/panels/panels.h"
#include "model/core/config.h"

namespace tscope::gui {

struct ArchitectureView {
  bool initialized = false;
  ModelConfig edited;        // what the editor shows (starts as the loaded config)
  ModelConfig lastValid;     // the numbers shown while `edited` is invalid
  std::string problem;       // validateConfig(edited), "" when valid
  int preset = -1;           // index into gpt3Presets(), -1 = the loaded model / own edits
  int contextLength = 1024;  // n for FLOPs and memory
};

class ArchitecturePanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // Puts `config` into the editor as the user's own edit (a lesson's architecture; validated there).
  void setEdited(const ModelConfig& config);
  bool handle(const PanelCommand& command, TrainingSession&) override {
    if (command.architecture) setEdited(*command.architecture);
    return command.architecture != nullptr;
  }
  bool busy() const override { return showFamilies_ && families_.busy(); }

 private:
  ArchitectureView view_;
  bool showFamilies_ = false;  // the state's archFamilies as last drawn (busy() has no state)
  ThreeFamiliesView families_;
};

}  // namespace tscope::gui

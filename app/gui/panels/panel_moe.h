// Experts panel (mixture-of-experts models only): the token x expert gates of the selected layer,
// the load per expert against the capacity, the load-balancing loss, and the routing knobs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/moe_router_by_hand.h"
#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

struct MoeView {
  uint64_t builtFor = 0;
  int layer = -1;
  bool showProbs = false;  // router probabilities (all experts) instead of gates
  bool builtProbs = false;
  int selectedExpert = -1;  // a lesson's expert, its column outlined (-1: none)
  float gatesMax = 1;       // colour range 0 .. the largest value shown
  TokenHeatmap gates;       // token x expert, with its colour bar
  std::vector<std::string> tokenLabels, expertLabels;
};

class MoePanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  void selectExpert(int expert) { view_.selectedExpert = expert; }  // -1: none
  bool handle(const PanelCommand& command, TrainingSession&) override {
    if (command.expert) selectExpert(*command.expert);
    return command.expert.has_value();
  }

 private:
  MoeView view_;
  RouterByHand byHand_;  // the typed logits of the router by hand
};

}  // namespace tscope::gui

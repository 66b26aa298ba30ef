// Compare: two live forwards side by side, a left and a right side, with the difference drawn. The
// left is the app's model, prompt and what-ifs; the right is the panel's (AppState's compare*
// fields, saved in session files): another model on the same prompt, the same model on a second
// prompt, or the same model with a what-if, each one click. Shown: one head's map on each side and
// their difference (lined up by character spans when two tokenizers cut the text differently), the
// next-token top 5 of each side with their KL divergence, the logit lens layer by layer, each
// head's entropy and distances to the previous- and first-token patterns, and the two
// architectures with their differences marked. tscope-cli compare-forward prints the same numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/compare/compare_right.h"
#include "app/gui/panels/panels.h"
#include "app/gui/what_if_menu.h"
#include "app/gui/widgets/token_heatmap.h"
#include "model/nn/compare_views.h"

namespace tscope::gui {

class ComparePanel : public Panel {
 public:
  ComparePanel();
  void draw(PanelContext& ctx) override;
  bool busy() const override { return right_.busy(); }

 private:
  void drawSetup(PanelContext& ctx);
  void postRight(PanelContext& ctx);
  void drawMaps(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession);
  void drawNextTokens(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession);
  void drawLayers(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession);
  void drawArchitecture(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession);

  CompareRight right_;
  WhatIfMenu whatIfMenu_;
  std::vector<std::string> shippedModels_;
  std::vector<ModelConfig> shippedConfigs_;  // their configs (vocab_size -1: unreadable)
  TokenHeatmap maps_[3];                     // left, right, right - left
  uint64_t builtLeft_ = 0, builtRight_ = 0;
  int builtLayer_ = -1, builtHead_ = -1;
  std::vector<float> shown_[2];
  MapDifference difference_;
  std::vector<std::string> labels_[2];
  std::string mapsNote_;
  bool everyLayer_ = false;  // the head table: the selected layer's heads, or every layer's
};

}  // namespace tscope::gui

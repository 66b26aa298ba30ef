// Attention panel: the (layer, head) heatmap (probabilities or pre-softmax scores, one head or the
// mean over heads) with the mask in grey, the lines view, and the grid of every layer x head.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

// The textures of the snapshot on screen, rebuilt when it or the selection changes.
struct AttentionView {
  uint64_t builtFor = 0;
  int layer = -1, head = -1;
  bool average = false, scores = false;
  TokenHeatmap main;                              // with its colour scale
  std::vector<std::string> rowLabels, colLabels;  // the query and key tokens of `main`
  float lo = 0, hi = 1;                           // colour range of `main`
  std::vector<float> shown;                       // (T, Tk) what `main` draws (and Export saves)
  std::vector<Heatmap> thumbnails;                // (Lc * H) when the grid is shown: the layers whose maps are held
  bool thumbnailsBuilt = false;
};

class AttentionPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  AttentionView view_;
};

}  // namespace tscope::gui

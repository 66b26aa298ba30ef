// Inside the block: one head of one layer at one query token, every step of the computation as a
// vertical flow (x, norm, q, every k_j and v_j, q.k_j, / sqrt(D), the mask, the softmax, the
// weighted sum, the heads concatenated, W_O, the residual adds, the MLP), beside attention as
// kernel regression, the interventions controls and the direct logit attribution.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/kernel_regression_view.h"
#include "model/nn/inside_views.h"
#include "model/nn/trace_views.h"

namespace tscope::gui {

// A row vector (or a small matrix) drawn as a diverging heatmap centred on 0, its texture rebuilt
// only when the values change.
class VectorStrip {
 public:
  void set(HeatmapRenderer& renderer, std::vector<float> values, int rows, int cols);
  // Draws at the cursor `size` pixels; returns the hovered cell's column (and row) or -1.
  int draw(ImVec2 size, int* hoveredRow = nullptr) const;
  float value(int row, int col) const { return values_[(size_t)row * cols_ + col]; }
  bool empty() const { return values_.empty(); }
  int cols() const { return cols_; }

 private:
  Heatmap map_;
  std::vector<float> values_;
  int cols_ = 0;
};

class InsidePanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  // What the textures and numbers on screen were computed from.
  struct Key {
    uint64_t snapshot = 0;
    int layer = -1, head = -1, query = -1;
    bool operator==(const Key&) const = default;
  };
  void rebuild(PanelContext& ctx, const Key& key);
  void drawControls(PanelContext& ctx, int tokens);
  void drawFlow(PanelContext& ctx);
  void drawKeyTable(PanelContext& ctx);
  void drawMlp(PanelContext& ctx);
  void drawInterventions(PanelContext& ctx);  // inside_interventions.cpp
  void drawBeforeAfter(PanelContext& ctx);    // inside_interventions.cpp
  void drawAttribution(PanelContext& ctx);    // inside_interventions.cpp

  Key key_;
  std::string error_;  // why the flow cannot be shown (no internals yet, ...)
  std::optional<HeadStages> stages_;
  BlockRows rows_;
  VectorStrip x_, q_, keys_, values_, output_, headMix_, attnOut_, crossOut_, residMid_, mlpOut_, residOut_;
  int hoveredKey_ = -1, hoveredDim_ = -1;  // linked highlight: last frame's hover, drawn this frame
  int nextHoveredKey_ = -1, nextHoveredDim_ = -1;
  // Direct logit attribution toward `attributionToken_` at the query (-1: the top next token).
  int attributionToken_ = -1;
  std::vector<TokenProbability> attributionChoices_;
  std::optional<LogitAttribution> attribution_;
  std::string attributionError_;
  Key attributionKey_;
  int attributionFor_ = -2;
  KernelRegressionView kernel_;
};

}  // namespace tscope::gui

// A heatmap with labels along its rows and columns (tokens, layers, experts): the one widget
// behind the Attention, Residual stream, Experts, Training and Translation maps. It owns the
// Heatmap texture and its colour scale; each frame the caller says how big the cells are, which
// labels to write, which row or column is selected, what the tooltip says and under which name
// the plot is recorded for the GUI tests, and gets back the hovered (or clicked) cell.
#pragma once
#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/figure.h"
#include "app/gui/widgets/heatmap.h"

namespace tscope::gui {

// Where the colour scale goes: none, a vertical one right of the plot as tall as it, or a
// horizontal bar (with a caption) under the column labels, at the widget's left edge.
enum class ScalePlace { None, Right, Below };

struct TokenHeatmapStyle {
  // Row labels, right-aligned in the `labelWidth` pixels left of the plot; thinned to every k-th
  // when rows are shorter than a text line, shortened with ".." when wider than the margin.
  const std::vector<std::string>* rowLabels = nullptr;
  float labelWidth = 0;
  float gutter = 0;  // blank pixels between the row labels and the plot (markers the caller draws)
  // Column labels, centred on their column under the plot (or above it), thinned to every k-th so
  // the widest fits. With `colLabelSlot` > 0 every k-th with k = ceil(slot / cell width) instead,
  // left-aligned and shortened to its k cells (long tokens in narrow columns).
  const std::vector<std::string>* colLabels = nullptr;
  bool colLabelsAbove = false;
  float colLabelSlot = 0;
  bool colIndicesWhenNarrow = false;  // when not every column label fits, write the column numbers
  // One row and one column drawn as selected: outlined in `selectedColor`, their labels in it too.
  int selectedRow = -1, selectedCol = -1;
  ImU32 selectedColor = IM_COL32(240, 140, 40, 255);
  float selectedThickness = 2.0f;
  ImU32 hoverColor = IM_COL32(255, 60, 60, 255);  // outline of the hovered cell (0: none)
  bool rowLabelHover = false;                     // hovering a row label reports that row, with col -1
  // The tooltip of the hovered cell (col -1: a row label); "" shows none.
  std::function<std::string(int row, int col)> readout{};
  // The plot's rectangle is recorded as shared->regions[region] (both given) for the GUI tests.
  SharedView* shared = nullptr;
  const char* region = nullptr;
  // The colour scale: its range and colours (often the map's own), the caption of a Below bar and
  // its width (0: the plot's, at most 14 text heights).
  ScalePlace scale = ScalePlace::None;
  float scaleLo = 0, scaleHi = 1;
  Colormap scaleColormap = Colormap::Perceptual;
  const char* scaleCaption = "";
  float scaleWidth = 0;
};

// What the mouse did this frame, and where the plot is (for the caller's own overlays).
struct TokenHeatmapHit {
  int row = -1, col = -1;  // the hovered cell; col -1 with row >= 0: that row's label
  bool clicked = false;    // the left button went down on the hovered cell this frame
  ImVec2 plotMin{0, 0}, plotMax{0, 0};
  ImVec2 cell{0, 0};  // one cell's width and height in pixels
  ImVec2 cellMin(int r, int c) const { return ImVec2(plotMin.x + c * cell.x, plotMin.y + r * cell.y); }
  ImVec2 cellMax(int r, int c) const { return ImVec2(plotMin.x + (c + 1) * cell.x, plotMin.y + (r + 1) * cell.y); }
};

class TokenHeatmap {
 public:
  // Row-major (rows, cols) values, coloured lo..hi (Heatmap::setData).
  void setData(HeatmapRenderer& renderer, const float* values, int rows, int cols, float lo, float hi, Colormap colormap) {
    map_.setData(renderer, values, rows, cols, lo, hi, colormap);
  }
  bool empty() const { return map_.empty(); }
  int rows() const { return map_.rows(); }
  int cols() const { return map_.cols(); }
  float value(int row, int col) const { return map_.value(row, col); }

  // Draws at the cursor with cells `cell` pixels (width, height) and claims the space of the
  // labels, the plot and the scale; the cursor ends under them.
  TokenHeatmapHit draw(HeatmapRenderer& renderer, ImVec2 cell, const TokenHeatmapStyle& style);

  // The left margin that fits the widest of `labels` (plus a little), at most `maxWidth`.
  static float labelWidthFor(const std::vector<std::string>& labels, float maxWidth);
  // The height of a band of column labels.
  static float colLabelHeight();
  // Square cells of at most `maxCell` pixels that fit (rows, cols) in `avail` beside a
  // `labelWidth` margin and above a band of column labels (at least 2 pixels).
  static float squareCell(ImVec2 avail, int rows, int cols, float labelWidth, float maxCell);

 private:
  Heatmap map_;
  ColorScale beside_;
  Colorbar below_;
};

}  // namespace tscope::gui

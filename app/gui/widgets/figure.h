// Labelled figures around the Heatmap widget: a title, axis names and end numbers on both axes,
// and a colour bar showing what the colours mean. Used by the architecture-lab panels.
#pragma once
#include <imgui.h>

#include <string>

#include "app/gui/widgets/heatmap.h"

namespace tscope::gui {

struct FigureAxes {
  std::string title;     // one line above the plot
  std::string rowLabel;  // beside the rows (may hold '\n' to wrap), e.g. "position t"
  std::string colLabel;  // under the columns, e.g. "dimension 2i, 2i+1"
  int rowFirst = 0;      // number shown for row 0 (the last row shows rowFirst + rows - 1)
  int colFirst = 0;
};

// Left margin the figure reserves for the row label and row numbers (pixels).
float figureLeftMargin(const FigureAxes& axes, int rows);
// Height the figure adds around the plot: the title line above, numbers and the column label below.
float figureExtraHeight();

// Draws the whole figure with the plot `plotSize` pixels; the plot's top-left corner is returned
// in *plotOrigin. True, with the cell, while the mouse is over a cell.
bool drawHeatmapFigure(const Heatmap& map, const FigureAxes& axes, ImVec2 plotSize, ImVec2* plotOrigin, int* row, int* col);

// A horizontal colour ramp from lo to hi with its end values (and 0 for a diverging map) written
// under it. The ramp texture is rebuilt only when lo, hi or the colour map change.
class Colorbar {
 public:
  void draw(HeatmapRenderer& renderer, float lo, float hi, Colormap colormap, float width, const char* caption);

 private:
  Heatmap ramp_;
  float lo_ = 0, hi_ = 0;
  int colormap_ = -1;
};

// Two square figures side by side, each with its colour bar under it, sized to fill the space
// left after `reservedBelow` pixels. Reports which figure (0, 1; -1 none) and cell is hovered.
struct FigureSpec {
  const Heatmap* map;
  FigureAxes axes;
  Colorbar* bar;
  float lo, hi;
  Colormap colormap;
  const char* barCaption;
};
struct FigureHover {
  int figure = -1, row = -1, col = -1;
  ImVec2 origin{0, 0};        // the hovered plot's top-left corner
  float side = 0;             // and its side in pixels
  ImVec2 plotOrigin[2] = {};  // every drawn plot's top-left corner (for screen regions)
  float plotSide = 0;
};
FigureHover drawFigurePair(HeatmapRenderer& renderer, const FigureSpec& left, const FigureSpec& right, float reservedBelow);
// Draws a single figure of side `side` with its colour bar; fills *hover when it is hovered.
void drawFigure(HeatmapRenderer& renderer, const FigureSpec& spec, float side, int index, FigureHover* hover);

// Outlines the diagonal col - row = const through the hovered cell of an (n x n) plot.
void drawOffsetDiagonal(const FigureHover& hover, int n);

}  // namespace tscope::gui

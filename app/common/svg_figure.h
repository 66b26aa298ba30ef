// Vector figures for slides and papers: a heatmap as an SVG document with the screen's colours
// (colormap.h), its row and column labels and its title as text, and its colour scale. Plain C++
// (no GL): the window's Export SVG and the tests call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/common/colormap.h"

namespace tscope {

struct HeatmapFigure {
  std::string title;
  std::vector<float> values;  // (rows, cols) row-major; NaN / inf cells are masked (grey)
  int rows = 0, cols = 0;
  float lo = 0, hi = 1;  // the colour scale's range, as on screen
  Colormap colormap = Colormap::Perceptual;
  std::vector<std::string> rowLabels, colLabels;  // empty: none (else one per row / column)
};

// The figure as a standalone SVG 1.1 document. Each cell is a <rect class="cell"> carrying
// data-row, data-col and data-value, filled with colourAt(value) as #rrggbb; labels are <text>
// (XML-escaped; bytes that are not UTF-8 become U+FFFD). Throws std::invalid_argument when values do not
// hold rows x cols or a label list has the wrong length.
std::string heatmapSvg(const HeatmapFigure& figure);

// The pieces every vector figure is written with: text for XML (markup escaped, control characters
// dropped, bytes that are not UTF-8 as U+FFFD), a number (%.6g), and the document's opening (the
// XML declaration, <svg> of that size with the font, <title>, a white background).
std::string svgText(const std::string& text);
std::string svgNumber(double value);
std::string svgOpen(double width, double height, double font, const std::string& title);

// Several heatmaps of one colour scale as one figure (the Attention panel's every layer x head):
// each under its title in a grid of `columns` columns, its cells <rect class="cell"> with
// data-panel (its index), data-row, data-col and data-value; the first one's colour scale beside.
// Throws std::invalid_argument like heatmapSvg, or for no panels.
std::string heatmapGridSvg(const std::string& title, const std::vector<HeatmapFigure>& panels, int columns);

// #rrggbb of 8-bit RGBA packed as ImGui's IM_COL32 (red in the low byte; alpha ignored).
std::string packedColour(uint32_t colour);

// #rrggbb of a colour, each channel rounded to 8 bits as the screen stores it.
std::string hexColour(const Rgb& colour);

}  // namespace tscope

// Vector figures (svg_figure.h).
#include "app/common/svg_figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <stdexcept>

namespace tscope {

std::string svgText(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    for (int k = 1; k < length; ++k)
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) >> 6) != 2) length = 0;
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (length > 1) out.append(text, i, length);
    else if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else if (c >= 0x20 || c == '\t') out += static_cast<char>(c);
    i += length;
  }
  return out;
}

std::string svgNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string svgOpen(double width, double height, double font, const std::string& title) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + svgNumber(width) +
         "\" height=\"" + svgNumber(height) + "\" viewBox=\"0 0 " + svgNumber(width) + " " + svgNumber(height) +
         "\" font-family=\"sans-serif\" font-size=\"" + svgNumber(font) + "\">\n<title>" + svgText(title) +
         "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

std::string packedColour(uint32_t colour) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", colour & 0xff, (colour >> 8) & 0xff, (colour >> 16) & 0xff);
  return text;
}

std::string hexColour(const Rgb& colour) {
  auto channel = [](float v) { return static_cast<int>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); };
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", channel(colour.r), channel(colour.g), channel(colour.b));
  return text;
}

namespace {

void checkFigure(const HeatmapFigure& f) {
  if (f.rows <= 0 || f.cols <= 0 || f.values.size() != static_cast<size_t>(f.rows) * f.cols)
    throw std::invalid_argument("figure '" + f.title + "': " + std::to_string(f.values.size()) + " values for " + std::to_string(f.rows) + " x " +
                                std::to_string(f.cols));
  if ((!f.rowLabels.empty() && f.rowLabels.size() != static_cast<size_t>(f.rows)) ||
      (!f.colLabels.empty() && f.colLabels.size() != static_cast<size_t>(f.cols)))
    throw std::invalid_argument("figure '" + f.title + "': the labels do not match its " + std::to_string(f.rows) + " x " + std::to_string(f.cols) +
                                " cells");
}

// A rect per cell of `f`, `cell` units square from (left, top); `tag` adds attributes to each.
std::string cellsSvg(const HeatmapFigure& f, double left, double top, double cell, const std::string& tag = "") {
  std::string svg = "<g shape-rendering=\"crispEdges\">\n";
  for (int r = 0; r < f.rows; ++r)
    for (int c = 0; c < f.cols; ++c) {
      const float v = f.values[static_cast<size_t>(r) * f.cols + c];
      svg += "<rect class=\"cell\"" + tag + " data-row=\"" + std::to_string(r) + "\" data-col=\"" + std::to_string(c) + "\" data-value=\"" +
             (std::isfinite(v) ? svgNumber(v) : std::string("masked")) + "\" x=\"" + svgNumber(left + c * cell) + "\" y=\"" +
             svgNumber(top + r * cell) + "\" width=\"" + svgNumber(cell) + "\" height=\"" + svgNumber(cell) + "\" fill=\"" +
             hexColour(colourAt(f.colormap, v, f.lo, f.hi)) + "\"/>\n";
    }
  return svg + "</g>\n";
}

// The colour scale of lo..hi: 64 steps from lo (bottom) to hi (top), its ends written beside it.
std::string scaleSvg(Colormap colormap, float lo, float hi, double x, double top, double height, double font) {
  std::string svg;
  const double barH = std::max(height, 64.0) / 64;
  for (int i = 0; i < 64; ++i) {
    const float v = lo + (hi - lo) * (63 - i) / 63.0f;
    svg += "<rect class=\"scale\" x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(top + i * barH) + "\" width=\"14\" height=\"" + svgNumber(barH + 0.5) +
           "\" fill=\"" + hexColour(colourAt(colormap, v, lo, hi)) + "\"/>\n";
  }
  svg += "<text class=\"scale-hi\" x=\"" + svgNumber(x + 18) + "\" y=\"" + svgNumber(top + font * 0.8) + "\">" + svgNumber(hi) + "</text>\n";
  svg += "<text class=\"scale-lo\" x=\"" + svgNumber(x + 18) + "\" y=\"" + svgNumber(top + 64 * barH) + "\">" + svgNumber(lo) + "</text>\n";
  return svg;
}

}  // namespace

std::string heatmapSvg(const HeatmapFigure& f) {
  checkFigure(f);
  // Cells as large as fit 720 units (2 to 24), labels in a 12-unit font beside and under the plot.
  const double cell = std::clamp(720.0 / std::max(f.rows, f.cols), 2.0, 24.0), font = 12;
  size_t longestRow = 0, longestCol = 0;
  for (const std::string& label : f.rowLabels) longestRow = std::max(longestRow, std::min<size_t>(label.size(), 24));
  for (const std::string& label : f.colLabels) longestCol = std::max(longestCol, std::min<size_t>(label.size(), 24));
  const double left = 8 + longestRow * font * 0.6, top = 2.5 * font, plotW = cell * f.cols, plotH = cell * f.rows;
  const double bottom = 8 + longestCol * font * 0.6, scaleX = left + plotW + 16, width = scaleX + 80, height = top + plotH + bottom;
  std::string svg = svgOpen(width, height, font, f.title);
  svg += "<text x=\"" + svgNumber(left) + "\" y=\"" + svgNumber(1.5 * font) + "\" font-weight=\"bold\">" + svgText(f.title) + "</text>\n";
  svg += cellsSvg(f, left, top, cell);
  // Labels: every k-th when the cells are shorter than the text.
  const int every = std::max(1, static_cast<int>(std::ceil(font / cell)));
  for (int r = 0; r < static_cast<int>(f.rowLabels.size()); r += every)
    svg += "<text class=\"row-label\" x=\"" + svgNumber(left - 4) + "\" y=\"" + svgNumber(top + (r + 0.5) * cell) +
           "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + svgText(f.rowLabels[r]) + "</text>\n";
  for (int c = 0; c < static_cast<int>(f.colLabels.size()); c += every) {
    const double x = left + (c + 0.5) * cell, y = top + plotH + 4;
    svg += "<text class=\"col-label\" x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\" transform=\"rotate(90 " + svgNumber(x) + " " +
           svgNumber(y) + ")\" dominant-baseline=\"middle\">" + svgText(f.colLabels[c]) + "</text>\n";
  }
  svg += scaleSvg(f.colormap, f.lo, f.hi, scaleX, top, plotH, font);
  return svg + "</svg>\n";
}

std::string heatmapGridSvg(const std::string& title, const std::vector<HeatmapFigure>& panels, int columns) {
  if (panels.empty() || columns < 1) throw std::invalid_argument("figure grid '" + title + "': no panels");
  for (const HeatmapFigure& f : panels) checkFigure(f);
  // Each panel 160 units square under its title, in `columns` columns; the first panel's colour scale.
  const double side = 160, gap = 12, font = 12, titleH = 1.6 * font, top = 2.5 * font;
  const int rows = (static_cast<int>(panels.size()) + columns - 1) / columns;
  const double gridW = columns * (side + gap), gridH = rows * (side + titleH + gap);
  std::string svg = svgOpen(8 + gridW + 100, top + gridH + 8, font, title);
  svg += "<text x=\"8\" y=\"" + svgNumber(1.5 * font) + "\" font-weight=\"bold\">" + svgText(title) + "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    const HeatmapFigure& f = panels[i];
    const size_t row = i / static_cast<size_t>(columns), column = i % static_cast<size_t>(columns);  // the panel's place in the grid
    const double x = 8 + static_cast<double>(column) * (side + gap), y = top + static_cast<double>(row) * (side + titleH + gap);
    svg += "<text class=\"panel-title\" x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y + font) + "\">" + svgText(f.title) + "</text>\n";
    svg += cellsSvg(f, x, y + titleH, side / std::max(f.rows, f.cols), " data-panel=\"" + std::to_string(i) + "\"");
  }
  svg += scaleSvg(panels[0].colormap, panels[0].lo, panels[0].hi, 8 + gridW + 8, top, std::min(gridH, 320.0), font);
  return svg + "</svg>\n";
}

}  // namespace tscope

// Column charts as vector figures (column_figure.h).
#include "app/common/column_figure.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "app/common/svg_figure.h"

namespace tscope {

std::string columnValueText(const char* format, float value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string columnChartSvg(const ColumnChart& chart) {
  const size_t categories = chart.series.empty() ? 0 : chart.series[0].values.size();
  for (const ColumnSeries& s : chart.series)
    if (s.values.size() != categories)
      throw std::invalid_argument("chart '" + chart.title + "': series '" + s.name + "' has " + std::to_string(s.values.size()) + " values, not " +
                                  std::to_string(categories));
  const double width = 760, height = 360, font = 12, left = 56, top = 56, right = width - 16, bottom = height - 44;
  const double plotH = bottom - top, slot = categories ? (right - left) / categories : 0;
  auto yOf = [&](double v) { return bottom - plotH * std::clamp(chart.yMax > 0 ? v / chart.yMax : 0.0, 0.0, 1.0); };
  std::string svg = svgOpen(width, height, font, chart.title);
  svg += "<text x=\"8\" y=\"18\" font-weight=\"bold\">" + svgText(chart.title) + "</text>\n";
  double legendX = 8;
  for (const ColumnSeries& s : chart.series) {
    svg += "<rect class=\"legend\" x=\"" + svgNumber(legendX) + "\" y=\"28\" width=\"10\" height=\"10\" fill=\"" + packedColour(s.colour) + "\"/>\n";
    svg += "<text class=\"legend\" x=\"" + svgNumber(legendX + 14) + "\" y=\"37\">" + svgText(s.name) + "</text>\n";
    legendX += 30 + 7.0 * s.name.size();
  }
  if (!chart.referenceLabel.empty())
    svg += "<line x1=\"" + svgNumber(legendX) + "\" y1=\"33\" x2=\"" + svgNumber(legendX + 16) +
           "\" y2=\"33\" stroke=\"#e63c3c\" stroke-width=\"2\"/>\n" + "<text x=\"" + svgNumber(legendX + 20) + "\" y=\"37\">" +
           svgText(chart.referenceLabel) + "</text>\n";
  svg += "<line x1=\"" + svgNumber(left) + "\" y1=\"" + svgNumber(top) + "\" x2=\"" + svgNumber(left) + "\" y2=\"" + svgNumber(bottom) +
         "\" stroke=\"#888888\"/>\n<line x1=\"" + svgNumber(left) + "\" y1=\"" + svgNumber(bottom) + "\" x2=\"" + svgNumber(right) + "\" y2=\"" +
         svgNumber(bottom) + "\" stroke=\"#888888\"/>\n";
  svg += "<text class=\"y-max\" x=\"" + svgNumber(left - 4) + "\" y=\"" + svgNumber(top + 4) + "\" text-anchor=\"end\">" +
         svgText(columnValueText(chart.yFormat, chart.yMax)) + "</text>\n<text x=\"" + svgNumber(left - 4) + "\" y=\"" + svgNumber(bottom + 4) +
         "\" text-anchor=\"end\">0</text>\n";
  const size_t seriesCount = chart.series.size();
  for (size_t c = 0; c < categories; ++c) {
    const double x0 = left + c * slot + slot * 0.15, x1 = left + (c + 1) * slot - slot * 0.15;
    double base = 0;
    for (size_t s = 0; s < seriesCount; ++s) {
      const double v = chart.series[s].values[c];
      double cx = x0, cw = x1 - x0, y0 = yOf(v), y1 = bottom;
      if (chart.stacked) y0 = yOf(base + v), y1 = yOf(base), base += v;
      else cw = (x1 - x0) / seriesCount, cx = x0 + s * cw, cw = std::max(0.5, cw - 1);
      svg += "<rect class=\"column\" data-series=\"" + svgText(chart.series[s].name) + "\" data-category=\"" + std::to_string(c) +
             "\" data-value=\"" + svgNumber(v) + "\" x=\"" + svgNumber(cx) + "\" y=\"" + svgNumber(y0) + "\" width=\"" + svgNumber(cw) +
             "\" height=\"" + svgNumber(std::max(0.0, y1 - y0)) + "\" fill=\"" + packedColour(chart.series[s].colour) + "\"/>\n";
    }
    svg += "<text class=\"category\" x=\"" + svgNumber((x0 + x1) / 2) + "\" y=\"" + svgNumber(bottom + 14) + "\" text-anchor=\"middle\">" +
           std::to_string(c) + "</text>\n";
  }
  if (chart.reference >= 0)
    svg += "<line class=\"reference\" x1=\"" + svgNumber(left) + "\" y1=\"" + svgNumber(yOf(chart.reference)) + "\" x2=\"" + svgNumber(right) +
           "\" y2=\"" + svgNumber(yOf(chart.reference)) + "\" stroke=\"#e63c3c\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n";
  if (!chart.categoryLabel.empty())
    svg += "<text x=\"" + svgNumber((left + right) / 2) + "\" y=\"" + svgNumber(bottom + 32) + "\" text-anchor=\"middle\">" +
           svgText(chart.categoryLabel) + "</text>\n";
  return svg + "</svg>\n";
}

}  // namespace tscope

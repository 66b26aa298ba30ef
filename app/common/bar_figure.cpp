// Bar tables as vector figures (bar_figure.h).
#include "app/common/bar_figure.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "app/common/svg_figure.h"

namespace tscope {

std::string barTableSvg(const BarTable& t) {
  for (const BarTable::Column& column : t.columns)
    if (column.bars.size() != t.rowLabels.size())
      throw std::invalid_argument("bar table '" + t.title + "': column '" + column.header + "' has " + std::to_string(column.bars.size()) +
                                  " bars for " + std::to_string(t.rowLabels.size()) + " rows");
  const double font = 12, rowH = 20, labelW = 120, columnW = 220, top = 52;
  const double width = labelW + columnW * std::max<size_t>(1, t.columns.size()) + 8, height = top + rowH * t.rowLabels.size() + 12;
  std::string svg = svgOpen(width, height, font, t.title);
  svg += "<text x=\"8\" y=\"18\" font-weight=\"bold\">" + svgText(t.title) + "</text>\n";
  for (size_t r = 0; r < t.rowLabels.size(); ++r)
    svg += "<text class=\"row-label\" x=\"8\" y=\"" + svgNumber(top + r * rowH + 14) + "\" xml:space=\"preserve\">" + svgText(t.rowLabels[r]) +
           "</text>\n";
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const BarTable::Column& column = t.columns[c];
    const double x0 = labelW + c * columnW, room = columnW - 96;  // room for "0.388 in all" after a full bar
    svg += "<text class=\"header\" x=\"" + svgNumber(x0) + "\" y=\"" + svgNumber(top - 12) + "\">" + svgText(column.header) + "</text>\n";
    for (size_t r = 0; r < column.bars.size(); ++r) {
      const BarTable::Bar& bar = column.bars[r];
      const double scale = bar.scaleMax > 0 ? bar.scaleMax : column.scaleMax;
      const double fraction = scale > 0 ? std::clamp(static_cast<double>(bar.value) / scale, 0.0, 1.0) : 0.0;
      const double length = bar.stub ? 2.0 : bar.value > 0 ? std::max(1.0, room * fraction) : 0.0;
      const double y = top + r * rowH;
      svg += "<rect class=\"bar\" data-row=\"" + std::to_string(r) + "\" data-col=\"" + std::to_string(c) + "\" data-value=\"" +
             svgNumber(bar.value) + "\" x=\"" + svgNumber(x0) + "\" y=\"" + svgNumber(y + 3) + "\" width=\"" + svgNumber(length) + "\" height=\"" +
             svgNumber(rowH - 6) + "\" fill=\"" + (bar.stub ? std::string("#999999") : packedColour(bar.colour)) + "\"/>\n";
      svg += "<text x=\"" + svgNumber(x0 + length + 4) + "\" y=\"" + svgNumber(y + 14) + "\"" + (bar.stub ? " fill=\"#888888\"" : "") + ">" +
             svgText(bar.label) + "</text>\n";
    }
  }
  return svg + "</svg>\n";
}

}  // namespace tscope

// A vertical bar chart drawn with ImDrawList, one group of columns per category (e.g. per
// expert): series side by side or stacked, an optional dashed reference line (a capacity, the
// uniform share), end values on the y axis and category numbers under the bars.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "app/common/column_figure.h"  // ColumnChart, ColumnSeries

namespace tscope::gui {

// Draws the chart in `size` pixels (title, legend and labels included); returns the hovered
// category or -1. Its vector figure, named chart.name, goes to the frame's figure sink (Export SVG).
int drawColumnChart(const ColumnChart& chart, ImVec2 size);

}  // namespace tscope::gui

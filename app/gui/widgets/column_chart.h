// A vertical bar chart drawn with ImDrawList, one group of columns per category (e.g. per
// expert): series side by side or stacked, an optional dashed reference line (a capacity, the
// uniform share), end values on the y axis and category numbers under the bars.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

namespace tscope::gui {

struct ColumnSeries {
  std::string name;           // shown in the legend
  std::vector<float> values;  // one per category
  ImU32 colour;
};

struct ColumnChart {
  std::string title;
  std::vector<ColumnSeries> series;
  bool stacked = false;  // false: side by side within a category
  float yMax = 1;
  const char* yFormat = "%.2f";
  float reference = -1;  // dashed horizontal line when >= 0
  std::string referenceLabel;
  std::string categoryLabel;  // under the axis, e.g. "expert"
};

// Draws the chart in `size` pixels (title, legend and labels included); returns the hovered
// category or -1.
int drawColumnChart(const ColumnChart& chart, ImVec2 size);

}  // namespace tscope::gui

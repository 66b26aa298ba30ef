// A vertical bar chart as data and its vector figure: one group of columns per category (e.g. per
// expert), series side by side or stacked, an optional dashed reference line (a capacity, the
// uniform share). The window draws it with ImGui (app/gui/widgets/column_chart.h); Export SVG writes
// it with columnChartSvg. Plain C++ (no GL): the tests call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tscope {

struct ColumnSeries {
  std::string name;           // shown in the legend
  std::vector<float> values;  // one per category
  uint32_t colour;            // 8-bit RGBA packed as ImGui's IM_COL32 (red in the low byte)
};

struct ColumnChart {
  std::string name;  // the figure's name (Export SVG's file name), e.g. "expert_load"
  std::string title;
  std::vector<ColumnSeries> series;
  bool stacked = false;  // false: side by side within a category
  float yMax = 1;
  const char* yFormat = "%.2f";
  float reference = -1;  // dashed horizontal line when >= 0
  std::string referenceLabel;
  std::string categoryLabel;  // under the axis, e.g. "expert"
};

// A value as the chart writes it (its yFormat, e.g. "%.2f"), on screen and in the SVG.
std::string columnValueText(const char* format, float value);

// The chart as a standalone SVG 1.1 document on white: each column a <rect class="column"> with
// data-series, data-category and data-value, the y axis' ends, the reference line, the legend and
// labels as <text>. Throws std::invalid_argument when a series' length differs from the first's.
std::string columnChartSvg(const ColumnChart& chart);

}  // namespace tscope

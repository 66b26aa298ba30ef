// Horizontal bars in a table as data and its vector figure: a row per item (a candidate next
// token), a column per view of it (the sampling stages), each cell a bar scaled to its column's
// maximum with its value written beside it. The Next-token panel draws it with ImGui
// (app/gui/widgets/bar_chart.h) and Export SVG writes it with barTableSvg. Plain C++: the tests call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tscope {

struct BarTable {
  struct Bar {
    float value = 0;
    std::string label;   // written right of the bar, e.g. "0.231" or "filtered"
    uint32_t colour;     // 8-bit RGBA packed as ImGui's IM_COL32 (red in the low byte)
    bool stub = false;   // a removed entry: a short grey stub, whatever the value
    float scaleMax = 0;  // a bar of this value fills the column (0: the column's scaleMax)
  };
  struct Column {
    std::string header;
    float scaleMax = 1;     // a bar of this value fills the column
    std::vector<Bar> bars;  // one per row
  };
  std::string name;  // the figure's name (Export SVG's file name)
  std::string title;
  std::vector<std::string> rowLabels;
  std::vector<Column> columns;
};

// The table as a standalone SVG 1.1 document on white: every bar a <rect class="bar"> with
// data-row, data-col and data-value, labels and headers as <text>. Throws std::invalid_argument
// when a column's bars do not match the rows.
std::string barTableSvg(const BarTable& table);

}  // namespace tscope

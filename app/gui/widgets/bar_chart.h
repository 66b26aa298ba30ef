// Chart pieces drawn with ImDrawList (plots are ours: there is no ImPlot): a horizontal bar with
// its value written beside it (next-token probabilities, KV-cache timings), a colour-ramp legend
// with the heatmap shader's perceptual colours, the labels charts use for tokens and bytes, and
// a wrapping helper for rows of knobs.
#pragma once
#include <imgui.h>

#include "app/gui/widgets/layout.h"  // sameLineIfFits

#include <string>

#include "app/common/bar_figure.h"  // BarTable, the vector figure of a table of bars
#include "model/core/units.h"

namespace tscope::gui {

enum class BarStyle {
  Normal,       // a blue bar
  Highlighted,  // the token that was just drawn (orange)
  Rest,         // "all other tokens" (grey-blue)
  Filtered,     // removed by a filter: a grey stub and the label dimmed
};

// A bar's colour in that style (the same in the SVG of a bar table, bar_figure.h).
ImU32 barColor(BarStyle style);
// Hands a table of the bars just drawn to the frame's figure sink (figure_sink.h), as barTableSvg.
void addBarTableFigure(BarTable table);

// One bar, one text line high, `width` pixels wide in all: the bar's length is value / scaleMax
// of the width left after `label` (written just right of the bar). Returns true when hovered.
bool drawBar(float value, float scaleMax, float width, BarStyle style, const char* label);

// The perceptual (viridis-like) colour of t in [0, 1]: the same ramp as shaders/heatmap.frag, for
// things that are not heatmaps (table cells, legends).
ImU32 perceptualColor(float t);
// Black or white, whichever reads better on `background`.
ImU32 textColorOn(ImU32 background);
// A horizontal ramp `size` pixels with `leftLabel` and `rightLabel` at its ends.
void drawColorRamp(ImVec2 size, const char* leftLabel, const char* rightLabel);
float colorRampWidth(ImVec2 size, const char* leftLabel, const char* rightLabel);

// A token as shown in charts and tables: quoted so leading spaces show, control characters
// escaped, cut to maxChars characters (UTF-8 aware) with ".." when longer.
std::string tokenLabel(const std::string& text, size_t maxChars = 14);

// formatBytes ("12.0 KiB", "3.50 MiB") is model/core/units.h's.

}  // namespace tscope::gui

// A 2-D plot as data, its axes' ticks and its vector figure: what the window's Plot widget
// (app/gui/widgets/plot.h) draws on screen with ImGui and Export SVG writes as an SVG document, from
// the one tick rule and the one set of number formats. Plain C++ (no GL, no ImGui): the tests call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tscope {

// Turns an axis value into text (read-outs, and tick labels of linear axes with big numbers).
using AxisFormat = std::string (*)(double);
std::string formatGeneral(double v);         // 4 significant digits: 2.013, 0.5, 1.2e+05
std::string formatCount(double v);           // 175B, 1.4T, 3.2M, 850K, 12 (parameters, tokens)
std::string formatScientific(double v);      // 3.15e23 (FLOP)
std::string formatDuration(double seconds);  // "42 s", "3 min 07 s" (ETAs, elapsed time)

struct PlotAxis {
  double min = 0, max = 1;
  bool log = false;  // log10 scale; needs 0 < min < max
  std::string label;
  AxisFormat format = formatGeneral;
};

// Whether a value can be drawn on an axis (finite; positive on a log axis).
bool plottable(double v, bool log);
// Where `v` lies along the axis, 0 at min and 1 at max (on a log axis, in log10), and its inverse:
// the screen's Plot and the SVG place everything with these.
double axisFraction(const PlotAxis& axis, double v);
double axisValueAt(const PlotAxis& axis, double fraction);

// A tick of an axis: major ticks carry a label; decades of a log axis are written 10^k.
struct AxisTick {
  double value;
  bool major;
  bool decade;
};
// The ticks of `axis` drawn `pixels` long with labels about `labelPixels` wide (or tall): log axes
// spanning several decades get 10^k labels (every n-th decade when crowded) and 2..9 minor ticks;
// shorter log ranges get 1-2-5 labels; linear axes get 1-2-5 steps with a minor tick between.
std::vector<AxisTick> axisTicks(const PlotAxis& axis, float pixels, float labelPixels);
// A major tick's label as text (decades as "10^k"): the axis format for |v| >= 1e4, else formatGeneral.
std::string tickText(const PlotAxis& axis, const AxisTick& tick);

// Colours are 8-bit RGBA packed as ImGui's IM_COL32 (red in the low byte, alpha in the high one).
struct PlotFigure {
  struct Line {
    std::string name;
    std::vector<double> xs, ys;  // non-finite values (non-positive ones on log axes) break the line
    uint32_t colour;
    float thickness = 2;
    bool inLegend = true;
  };
  struct Mark {  // a point with its label (labelled false: a measured run, read out on hover only)
    std::string label;
    double x, y;
    uint32_t colour;
    bool labelled = true;
  };
  struct Rule {  // a dashed marker line at x (vertical) or y
    bool vertical;
    double value;
    std::string label;
    uint32_t colour;
  };
  std::string title;
  PlotAxis x, y;
  std::vector<Line> lines;
  std::vector<Mark> points, notes;  // notes: text centred under (x, y)
  std::vector<Rule> rules;
};

// The figure as a standalone SVG 1.1 document on white: ticks and grid as on screen, every line a
// <polyline class="series" data-name=...> per unbroken run, every point a <circle class="point">
// with data-x and data-y, rules dashed, the legend, text as <text>; colours as on screen but those
// too light for white (drawn for the dark theme) dark grey; untitled, it is named "Y against X".
// Throws std::invalid_argument for an empty axis range or a log axis reaching 0.
std::string plotSvg(const PlotFigure& figure);

}  // namespace tscope

// Plot ticks, number formats and the plot's vector figure (plot_figure.h).
#include "app/common/plot_figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "app/common/svg_figure.h"

namespace tscope {

std::string formatGeneral(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string formatCount(double v) {
  const double a = std::fabs(v);
  const char* suffix = "";
  double scaled = v;
  if (a >= 1e12) scaled = v / 1e12, suffix = "T";
  else if (a >= 1e9) scaled = v / 1e9, suffix = "B";
  else if (a >= 1e6) scaled = v / 1e6, suffix = "M";
  else if (a >= 1e3) scaled = v / 1e3, suffix = "K";
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(scaled) >= 100 ? "%.0f%s" : "%.3g%s", scaled, suffix);
  return text;
}

std::string formatScientific(double v) {
  if (v == 0) return "0";
  const int exponent = (int)std::floor(std::log10(std::fabs(v)));
  const double mantissa = v / std::pow(10.0, exponent);
  char text[32];
  if (std::fabs(mantissa - std::round(mantissa)) < 0.005) std::snprintf(text, sizeof text, "%.0fe%d", std::round(mantissa), exponent);
  else std::snprintf(text, sizeof text, "%.2fe%d", mantissa, exponent);
  return text;
}

std::string formatDuration(double seconds) {
  char text[32];
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 60) std::snprintf(text, sizeof text, "%ld min %02ld s", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%ld s", s);
  return text;
}

bool plottable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

namespace {
double axisPosition(const PlotAxis& a, double v) { return a.log ? std::log10(v) : v; }
}  // namespace

double axisFraction(const PlotAxis& axis, double v) {
  return (axisPosition(axis, v) - axisPosition(axis, axis.min)) / (axisPosition(axis, axis.max) - axisPosition(axis, axis.min));
}

double axisValueAt(const PlotAxis& axis, double fraction) {
  const double lo = axisPosition(axis, axis.min), hi = axisPosition(axis, axis.max), at = lo + fraction * (hi - lo);
  return axis.log ? std::pow(10.0, at) : at;
}

namespace {

// The 1-2-5 step nearest above `raw`.
double niceStep(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  return 10 * magnitude;
}

}  // namespace

std::vector<AxisTick> axisTicks(const PlotAxis& axis, float pixels, float labelPixels) {
  std::vector<AxisTick> out;
  const double slack = axis.log ? 0 : (axis.max - axis.min) * 1e-9;
  auto inside = [&](double v) {
    return axis.log ? v >= axis.min * (1 - 1e-9) && v <= axis.max * (1 + 1e-9) : v >= axis.min - slack && v <= axis.max + slack;
  };
  if (axis.log) {
    const double lo = std::log10(axis.min), hi = std::log10(axis.max), decades = hi - lo;
    const float perDecade = pixels / (float)decades;
    if (decades >= 2.5) {
      const int stride = std::max(1, (int)std::ceil(labelPixels / perDecade));
      const bool minors = perDecade > labelPixels * 0.75f;
      for (int k = (int)std::floor(lo); k <= (int)std::ceil(hi); ++k) {
        const double decade = std::pow(10.0, k);
        if (inside(decade)) out.push_back(AxisTick{decade, ((k % stride) + stride) % stride == 0, true});
        if (minors)
          for (int m = 2; m <= 9; ++m)
            if (inside(m * decade)) out.push_back(AxisTick{m * decade, false, false});
      }
      return out;
    }
    if (decades >= 0.6) {  // 1-2-5 labels (every mantissa when there is room), the rest as minor ticks
      const bool labelAll = perDecade > labelPixels * 6;
      for (int k = (int)std::floor(lo); k <= (int)std::ceil(hi); ++k)
        for (int m = 1; m <= 9; ++m) {
          const double v = m * std::pow(10.0, k);
          if (inside(v)) out.push_back(AxisTick{v, labelAll || m == 1 || m == 2 || m == 5, false});
        }
      return out;
    }
  }
  const int target = std::max(2, (int)(pixels / labelPixels));
  const double step = niceStep((axis.max - axis.min) / target);
  for (double v = std::ceil(axis.min / step - 1e-9) * step; v <= axis.max + step * 1e-9; v += step) {
    out.push_back(AxisTick{std::fabs(v) < step * 1e-9 ? 0.0 : v, true, false});
    const double minor = v + step / 2;
    if (!axis.log && inside(minor) && pixels / target > labelPixels * 0.6f) out.push_back(AxisTick{minor, false, false});
  }
  return out;
}

std::string tickText(const PlotAxis& axis, const AxisTick& tick) {
  if (tick.decade) return "10^" + std::to_string((int)std::lround(std::log10(tick.value)));
  return std::fabs(tick.value) >= 1e4 ? axis.format(tick.value) : formatGeneral(tick.value);
}

namespace {

// The colour on the figure's white: one drawn for the dark theme so light that it would vanish
// (the white frontier, pale grey labels) is drawn dark grey instead.
std::string rgb(uint32_t colour) {
  const unsigned r = colour & 0xff, g = (colour >> 8) & 0xff, b = (colour >> 16) & 0xff;
  return 0.299 * r + 0.587 * g + 0.114 * b > 215 ? "#303030" : packedColour(colour);
}
std::string opacity(uint32_t colour) { return svgNumber(((colour >> 24) & 0xff) / 255.0); }

// The figure's plot area in SVG units and the mapping of axis values into it.
struct Frame {
  const PlotFigure& f;
  double left, top, right, bottom;
  double sx(double x) const { return left + axisFraction(f.x, x) * (right - left); }
  double sy(double y) const { return bottom - axisFraction(f.y, y) * (bottom - top); }
};

// A tick label as SVG text: decades with a raised exponent.
std::string tickLabel(const PlotAxis& axis, const AxisTick& tick, double x, double y, const char* anchor) {
  std::string out = "<text class=\"tick\" x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\" text-anchor=\"" + anchor + "\">";
  if (tick.decade) out += "10<tspan dy=\"-5\" font-size=\"9\">" + std::to_string((int)std::lround(std::log10(tick.value))) + "</tspan>";
  else out += svgText(tickText(axis, tick));
  return out + "</text>\n";
}

std::string axesSvg(const Frame& fr) {
  const PlotFigure& f = fr.f;
  std::string svg = "<rect x=\"" + svgNumber(fr.left) + "\" y=\"" + svgNumber(fr.top) + "\" width=\"" + svgNumber(fr.right - fr.left) +
                    "\" height=\"" + svgNumber(fr.bottom - fr.top) + "\" fill=\"none\" stroke=\"#666666\"/>\n";
  for (const AxisTick& t : axisTicks(f.x, static_cast<float>(fr.right - fr.left), 70)) {
    const double x = fr.sx(t.value);
    svg += "<line x1=\"" + svgNumber(x) + "\" y1=\"" + svgNumber(fr.top) + "\" x2=\"" + svgNumber(x) + "\" y2=\"" + svgNumber(fr.bottom) +
           "\" stroke=\"#000000\" stroke-opacity=\"" + (t.major ? "0.13" : "0.05") + "\"/>\n";
    if (t.major) svg += tickLabel(f.x, t, x, fr.bottom + 16, "middle");
  }
  for (const AxisTick& t : axisTicks(f.y, static_cast<float>(fr.bottom - fr.top), 28)) {
    const double y = fr.sy(t.value);
    svg += "<line x1=\"" + svgNumber(fr.left) + "\" y1=\"" + svgNumber(y) + "\" x2=\"" + svgNumber(fr.right) + "\" y2=\"" + svgNumber(y) +
           "\" stroke=\"#000000\" stroke-opacity=\"" + (t.major ? "0.13" : "0.05") + "\"/>\n";
    if (t.major) svg += tickLabel(f.y, t, fr.left - 6, y + 4, "end");
  }
  svg += "<text class=\"x-label\" x=\"" + svgNumber((fr.left + fr.right) / 2) + "\" y=\"" + svgNumber(fr.bottom + 36) + "\" text-anchor=\"middle\">" +
         svgText(f.x.label) + "</text>\n";
  svg += "<text class=\"y-label\" x=\"" + svgNumber(fr.left) + "\" y=\"" + svgNumber(fr.top - 8) + "\">" + svgText(f.y.label) + "</text>\n";
  return svg;
}

std::string seriesSvg(const Frame& fr) {
  const PlotFigure& f = fr.f;
  std::string svg = "<g class=\"data\">\n";
  for (const PlotFigure::Line& line : f.lines) {
    std::string run;
    int points = 0;
    auto flush = [&] {
      if (points >= 2)
        svg += "<polyline class=\"series\" data-name=\"" + svgText(line.name) + "\" fill=\"none\" stroke=\"" + rgb(line.colour) +
               "\" stroke-opacity=\"" + opacity(line.colour) + "\" stroke-width=\"" + svgNumber(line.thickness) + "\" points=\"" + run + "\"/>\n";
      run.clear();
      points = 0;
    };
    for (size_t i = 0; i < std::min(line.xs.size(), line.ys.size()); ++i) {
      if (!plottable(line.xs[i], f.x.log) || !plottable(line.ys[i], f.y.log)) {
        flush();
        continue;
      }
      run += (run.empty() ? "" : " ") + svgNumber(fr.sx(line.xs[i])) + "," + svgNumber(fr.sy(line.ys[i]));
      ++points;
    }
    flush();
  }
  for (const PlotFigure::Rule& r : f.rules) {
    if (!plottable(r.value, r.vertical ? f.x.log : f.y.log)) continue;
    const double x1 = r.vertical ? fr.sx(r.value) : fr.left, x2 = r.vertical ? x1 : fr.right;
    const double y1 = r.vertical ? fr.top : fr.sy(r.value), y2 = r.vertical ? fr.bottom : y1;
    svg += "<line class=\"rule\" x1=\"" + svgNumber(x1) + "\" y1=\"" + svgNumber(y1) + "\" x2=\"" + svgNumber(x2) + "\" y2=\"" + svgNumber(y2) +
           "\" stroke=\"" + rgb(r.colour) + "\" stroke-width=\"2\" stroke-dasharray=\"8 5\"/>\n";
    if (!r.label.empty())
      svg += "<text x=\"" + svgNumber(r.vertical ? x1 + 5 : fr.left + 6) + "\" y=\"" + svgNumber(r.vertical ? fr.top + 14 : y1 - 5) + "\" fill=\"" +
             rgb(r.colour) + "\">" + svgText(r.label) + "</text>\n";
  }
  for (const PlotFigure::Mark& n : f.notes)
    if (plottable(n.x, f.x.log) && plottable(n.y, f.y.log))
      svg += "<text class=\"note\" x=\"" + svgNumber(fr.sx(n.x)) + "\" y=\"" + svgNumber(fr.sy(n.y) + 16) + "\" text-anchor=\"middle\" fill=\"" +
             rgb(n.colour) + "\">" + svgText(n.label) + "</text>\n";
  for (const PlotFigure::Mark& p : f.points) {
    if (!plottable(p.x, f.x.log) || !plottable(p.y, f.y.log)) continue;
    const double x = fr.sx(p.x), y = fr.sy(p.y);
    svg += "<circle class=\"point\" data-x=\"" + svgNumber(p.x) + "\" data-y=\"" + svgNumber(p.y) + "\" data-label=\"" + svgText(p.label) +
           "\" cx=\"" + svgNumber(x) + "\" cy=\"" + svgNumber(y) + "\" r=\"5\" fill=\"" + rgb(p.colour) + "\" stroke=\"#222222\"/>\n";
    if (p.labelled) svg += "<text x=\"" + svgNumber(x + 8) + "\" y=\"" + svgNumber(y - 8) + "\">" + svgText(p.label) + "</text>\n";
  }
  return svg + "</g>\n";
}

std::string legendSvg(const Frame& fr) {
  std::string svg;
  double y = fr.top + 16;
  size_t widest = 0;
  for (const PlotFigure::Line& line : fr.f.lines) widest = line.inLegend ? std::max(widest, std::min<size_t>(line.name.size(), 40)) : widest;
  const double x = fr.right - 40 - widest * 7.0;
  int entries = 0;
  for (const PlotFigure::Line& line : fr.f.lines) entries += line.inLegend;
  if (entries > 0)  // over the curves, as on screen
    svg += "<rect class=\"legend\" x=\"" + svgNumber(x - 6) + "\" y=\"" + svgNumber(fr.top + 4) + "\" width=\"" + svgNumber(fr.right - x) +
           "\" height=\"" + svgNumber(entries * 16 + 4) + "\" fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#bbbbbb\"/>\n";
  for (const PlotFigure::Line& line : fr.f.lines) {
    if (!line.inLegend) continue;
    svg += "<line class=\"legend\" x1=\"" + svgNumber(x) + "\" y1=\"" + svgNumber(y - 4) + "\" x2=\"" + svgNumber(x + 22) + "\" y2=\"" +
           svgNumber(y - 4) + "\" stroke=\"" + rgb(line.colour) + "\" stroke-width=\"3\"/>\n";
    svg += "<text class=\"legend\" x=\"" + svgNumber(x + 28) + "\" y=\"" + svgNumber(y) + "\">" + svgText(line.name) + "</text>\n";
    y += 16;
  }
  return svg;
}

}  // namespace

std::string plotSvg(const PlotFigure& f) {
  for (const PlotAxis* axis : {&f.x, &f.y})
    if (!(axis->max > axis->min) || (axis->log && !(axis->min > 0)) || !std::isfinite(axis->min) || !std::isfinite(axis->max))
      throw std::invalid_argument("plot '" + f.title + "': the axis '" + axis->label + "' runs " + svgNumber(axis->min) + " .. " +
                                  svgNumber(axis->max) + (axis->log ? " on a log scale" : ""));
  const double width = 760, height = 480, font = 12;
  const Frame frame{f, 76, 48, width - 20, height - 52};
  // A plot the panel titles with its own text above it is named by its axes.
  std::string svg = svgOpen(width, height, font, f.title.empty() ? f.y.label + " against " + f.x.label : f.title);
  if (!f.title.empty()) svg += "<text x=\"8\" y=\"18\" font-weight=\"bold\">" + svgText(f.title) + "</text>\n";
  svg += axesSvg(frame);
  svg += "<svg x=\"" + svgNumber(frame.left) + "\" y=\"" + svgNumber(frame.top) + "\" width=\"" + svgNumber(frame.right - frame.left) +
         "\" height=\"" + svgNumber(frame.bottom - frame.top) + "\" viewBox=\"" + svgNumber(frame.left) + " " + svgNumber(frame.top) + " " +
         svgNumber(frame.right - frame.left) + " " + svgNumber(frame.bottom - frame.top) + "\" overflow=\"hidden\">\n";
  svg += seriesSvg(frame) + "</svg>\n";
  svg += legendSvg(frame);
  return svg + "</svg>\n";
}

}  // namespace tscope

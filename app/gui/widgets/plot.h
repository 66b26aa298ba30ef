// An in-project 2-D plot drawn with ImDrawList (no ImPlot): linear or log10 axes chosen per axis,
// nice ticks (1-2-5 steps; decades written 10^k with 2..9 minor ticks), line series with a legend,
// labelled points, marker lines and a hover read-out of every series at the mouse x.
// Immediate mode like the rest of ImGui: build a Plot each frame, add what to show, call draw().
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "app/common/plot_figure.h"  // PlotAxis, the axis formats and ticks, the vector figure

namespace tscope::gui {

// Colour `index` of `count` categories (hues spread evenly, bright on the dark theme).
ImU32 categoryColour(int index, int count, float alpha = 1.0f);

// Where the legend goes: in rows between the title and the plot area, or in a corner inside it.
enum class LegendPlacement { Above, TopRight, TopLeft, BottomRight, BottomLeft, Hidden };
using LegendCorner = LegendPlacement;  // the first name of it, still used by other panels
// Where a point's label sits relative to the point.
enum class LabelSide { AboveRight, AboveLeft, BelowRight, BelowLeft };

// What the mouse did over the plot area this frame, in axis units.
struct PlotHover {
  bool active = false;   // the mouse is inside the plot area
  bool clicked = false;  // the left button went down inside it
  bool held = false;     // the left button is held after a press inside it (dragging)
  double x = 0, y = 0;
};

class Plot {
 public:
  // size: pixels; zero or negative means the available width/height plus that amount (ImGui's rule).
  Plot(const char* id, ImVec2 size);
  void setTitle(std::string title) { title_ = std::move(title); }
  void setAxes(double xmin, double xmax, bool logx, double ymin, double ymax, bool logy, std::string xlabel, std::string ylabel);
  void setFormats(AxisFormat x, AxisFormat y);
  void setLegend(LegendPlacement placement) { legend_ = placement; }

  // A polyline through (xs[i], ys[i]); non-finite values (and non-positive ones on log axes) break it.
  void line(std::string name, std::vector<double> xs, std::vector<double> ys, ImU32 colour, float thickness = 2.0f, bool inLegend = true);
  void point(std::string label, double x, double y, ImU32 colour, LabelSide side = LabelSide::AboveRight);
  // A point whose label shows only in the hover read-out (scatter plots of many measured runs).
  void marker(std::string label, double x, double y, ImU32 colour);
  void vline(double x, std::string label, ImU32 colour);
  void hline(double y, std::string label, ImU32 colour);
  // Text centred just below (x, y), e.g. a label on a curve's minimum.
  void note(double x, double y, std::string text, ImU32 colour);

  // Draws everything and claims the space as one item; returns what the mouse did. The plot's
  // vector figure, named by its id, goes to the frame's figure sink (figure_sink.h: Export SVG).
  PlotHover draw();
  PlotFigure figure() const;  // what it shows, for plotSvg

 private:
  struct Series {
    std::string name;
    std::vector<double> xs, ys;
    ImU32 colour;
    float thickness;
    bool inLegend;
  };
  struct Marker {
    std::string label;
    double x, y;
    ImU32 colour;
    LabelSide side = LabelSide::AboveRight;
    bool labelled = true;  // false: the label shows in the hover read-out only
  };
  struct Rule {
    bool vertical;
    double value;
    std::string label;
    ImU32 colour;
  };
  using Tick = AxisTick;
  float toScreenX(double x) const;
  float toScreenY(double y) const;
  double fromScreenX(float px) const;
  double fromScreenY(float py) const;
  ImVec2 tickLabelSize(const PlotAxis& axis, const Tick& tick) const;
  void drawTickLabel(ImDrawList* draw, const PlotAxis& axis, const Tick& tick, ImVec2 pos, ImU32 colour) const;
  void drawAxes(ImDrawList* draw, const std::vector<Tick>& xTicks, const std::vector<Tick>& yTicks) const;
  void drawSeries(ImDrawList* draw) const;
  void drawRulesAndPoints(ImDrawList* draw) const;
  // Legend entries laid out in rows `width` wide: the left edge of each entry and its row.
  std::vector<ImVec2> legendAboveLayout(float width, int* rows) const;
  void drawLegendAbove(ImDrawList* draw, ImVec2 corner) const;
  void drawLegend(ImDrawList* draw) const;
  void drawHover(ImDrawList* draw, ImVec2 mouse) const;

  std::string id_, title_;
  ImVec2 size_;
  PlotAxis x_, y_;
  LegendPlacement legend_ = LegendPlacement::TopRight;
  std::vector<Series> series_;
  std::vector<Marker> points_, notes_;
  std::vector<Rule> rules_;
  ImVec2 areaMin_, areaMax_;  // the plot area on screen (inside the axes), set by draw()
};

}  // namespace tscope::gui

// Plots and column charts as vector figures (app/common/plot_figure.h, column_figure.h): the ticks
// the screen and the SVG share, every line a polyline per unbroken run at the data's coordinates,
// points and columns carrying their values, text escaped, bad figures refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/common/bar_figure.h"
#include "app/common/column_figure.h"
#include "app/common/plot_figure.h"
#include "svg_reading.h"

using namespace tscope;
using tscope::testing::attribute;
using tscope::testing::tagsOfClass;

namespace {

std::vector<std::pair<double, double>> polylinePoints(const std::string& svg, size_t at) {
  std::vector<std::pair<double, double>> points;
  std::istringstream in(attribute(svg, at, "points"));
  std::string pair;
  while (in >> pair) {
    const size_t comma = pair.find(',');
    points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return points;
}

std::vector<double> majors(const std::vector<AxisTick>& ticks) {
  std::vector<double> out;
  for (const AxisTick& t : ticks)
    if (t.major) out.push_back(t.value);
  return out;
}

}  // namespace

TEST(PlotFigure, TicksAreDecadesOnLongLogAxesAndOneTwoFiveStepsElsewhere) {
  PlotAxis log{1e3, 1e9, true, "N", formatCount};
  const std::vector<AxisTick> decades = axisTicks(log, 600, 60);
  EXPECT_EQ(majors(decades), (std::vector<double>{1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}));
  EXPECT_EQ(tickText(log, decades[0]), "10^3");
  // Crowded: every second decade labelled.
  const std::vector<double> crowded = majors(axisTicks(log, 200, 60));
  EXPECT_LT(crowded.size(), 7u);
  EXPECT_GE(crowded.size(), 3u);
  PlotAxis linear{0, 1, false, "p"};
  EXPECT_EQ(majors(axisTicks(linear, 500, 100)), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  PlotAxis big{0, 3e6, false, "tokens", formatCount};
  EXPECT_EQ(tickText(big, AxisTick{2e6, true, false}), "2M");  // big numbers in the axis' format
  EXPECT_EQ(tickText(big, AxisTick{20, true, false}), "20");
}

TEST(PlotFigure, LinesArePolylinesAtTheDataCoordinatesBrokenWhereTheDataIs) {
  PlotFigure f;
  f.title = "loss <train & val>";
  f.x = {0, 10, false, "step"};
  f.y = {1, 1000, true, "loss"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  f.lines.push_back({"train", {0, 1, 5, 6, 10}, {1, 2, nan, 10, 100}, 0xff0000ffu, 2, true});
  f.lines.push_back({"hidden", {0, 10}, {10, 10}, 0x8000ff00u, 1, false});
  f.points.push_back({"minimum", 6, 10, 0xffff0000u, true});
  f.rules.push_back({true, 5, "x = 5", 0xff00ffffu});
  const std::string svg = plotSvg(f);
  EXPECT_NE(svg.find("loss &lt;train &amp; val&gt;"), std::string::npos);
  const std::vector<size_t> lines = tagsOfClass(svg, "polyline", "series");
  ASSERT_EQ(lines.size(), 3u);  // train in two runs (the NaN breaks it), hidden in one
  EXPECT_EQ(attribute(svg, lines[0], "data-name"), "train");
  EXPECT_EQ(attribute(svg, lines[0], "stroke"), "#ff0000");
  EXPECT_EQ(attribute(svg, lines[2], "stroke-opacity"), "0.501961");
  const auto first = polylinePoints(svg, lines[0]), second = polylinePoints(svg, lines[1]);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  // x = 0 and 10 are the plot area's left and right; y = 1 and 1000 its bottom and top (log scale).
  const double left = first[0].first, right = second[1].first, bottom = first[0].second;
  const double top = bottom - (bottom - second[1].second) * 3 / 2;  // 100 is 2/3 of the way up
  EXPECT_NEAR(first[1].first, left + (right - left) * 0.1, 1e-3);
  EXPECT_NEAR(first[1].second, bottom - (bottom - top) * std::log10(2) / 3, 1e-3);
  EXPECT_NEAR(second[0].second, bottom - (bottom - top) / 3, 1e-3);
  const std::vector<size_t> points = tagsOfClass(svg, "circle", "point");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(attribute(svg, points[0], "data-y"), "10");
  EXPECT_NEAR(std::stod(attribute(svg, points[0], "cx")), second[0].first, 1e-3);
  EXPECT_EQ(tagsOfClass(svg, "line", "rule").size(), 1u);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);   // in the legend
  EXPECT_EQ(svg.find(">hidden</text>"), std::string::npos);  // not in it
  EXPECT_NE(svg.find(">10<tspan"), std::string::npos);       // decades as 10 with a raised exponent

  PlotFigure bad = f;
  bad.y.min = 0;  // a log axis from 0
  EXPECT_THROW(plotSvg(bad), std::invalid_argument);
  bad = f;
  bad.x.max = bad.x.min;
  EXPECT_THROW(plotSvg(bad), std::invalid_argument);
}

TEST(ColumnFigure, EveryColumnCarriesItsValueAndStacksAsOnScreen) {
  ColumnChart chart;
  chart.name = "expert_load";
  chart.title = "Load per expert";
  chart.series = {{"kept", {4, 2, 0}, 0xffe68246u}, {"dropped", {1, 0, 3}, 0xff3c3ce6u}};
  chart.stacked = true;
  chart.yMax = 5;
  chart.reference = 4;
  chart.referenceLabel = "capacity 4";
  const std::string svg = columnChartSvg(chart);
  const std::vector<size_t> columns = tagsOfClass(svg, "rect", "column");
  ASSERT_EQ(columns.size(), 6u);
  auto at = [&](size_t i, const char* name) { return std::stod(attribute(svg, columns[i], name)); };
  // Category 0: kept 4 from the axis up, dropped 1 on top of it; 5 fills the plot's height.
  const double unit = at(0, "height") / 4;
  EXPECT_NEAR(at(1, "height"), unit, 1e-6);
  EXPECT_NEAR(at(1, "y") + at(1, "height"), at(0, "y"), 1e-6);
  EXPECT_EQ(attribute(svg, columns[5], "data-value"), "3");
  EXPECT_EQ(attribute(svg, columns[5], "data-series"), "dropped");
  EXPECT_EQ(tagsOfClass(svg, "line", "reference").size(), 1u);
  EXPECT_NE(svg.find("capacity 4"), std::string::npos);
  chart.series[1].values.pop_back();
  EXPECT_THROW(columnChartSvg(chart), std::invalid_argument);
}

TEST(BarFigure, EveryBarCarriesItsValueAndIsScaledAsOnScreen) {
  BarTable table{"next_token_stages", "Next token", {"' the'", "' a'", "other 2 tokens"}, {}};
  table.columns.push_back({"1. softmax", 0.5f, {{0.5f, "0.500", 0xffe1823cu}, {0.25f, "0.250", 0xffe1823cu}, {0.25f, "0.250 in all", 0xffaa8c78u}}});
  table.columns.push_back(
      {"2. top-k 1", 1.0f, {{1.0f, "1.000", 0xffe1823cu}, {0, "filtered", 0xff888888u, true}, {0, "0.000 in all", 0xffaa8c78u, false, 1.0f}}});
  const std::string svg = barTableSvg(table);
  const std::vector<size_t> bars = tagsOfClass(svg, "rect", "bar");
  ASSERT_EQ(bars.size(), 6u);
  auto width = [&](size_t i) { return std::stod(attribute(svg, bars[i], "width")); };
  EXPECT_NEAR(width(1), width(0) / 2, 1e-6);  // 0.25 of a 0.5 scale: half the longest bar
  EXPECT_NEAR(width(3), width(0), 1e-6);      // 1.0 of 1.0: full, like 0.5 of 0.5
  EXPECT_EQ(width(4), 2.0);                   // a filtered token is a stub
  EXPECT_EQ(attribute(svg, bars[4], "fill"), "#999999");
  EXPECT_EQ(attribute(svg, bars[2], "data-value"), "0.25");  // the true value, whatever its scale
  EXPECT_EQ(attribute(svg, bars[0], "fill"), "#3c82e1");
  EXPECT_NE(svg.find(">' the'</text>"), std::string::npos);  // quotes kept: a token's leading space shows
  EXPECT_NE(svg.find("2. top-k 1"), std::string::npos);
  table.columns[1].bars.pop_back();
  EXPECT_THROW(barTableSvg(table), std::invalid_argument);
}

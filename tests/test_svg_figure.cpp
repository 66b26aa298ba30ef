// Vector figures (app/common/svg_figure.h): every cell is a rect with the colour the screen's shader
// gives its value (colormap.h's colourAt, from the same stops), masked cells grey, labels as
// escaped text, the colour scale's ends written; a figure whose sizes disagree is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/common/svg_figure.h"
#include "svg_reading.h"

using namespace tscope;

using tscope::testing::attribute;

TEST(SvgFigure, ColoursFollowTheShadersStops) {
  EXPECT_EQ(hexColour(colourAt(Colormap::Perceptual, 0, 0, 1)), hexColour(kPerceptualStops.front()));
  EXPECT_EQ(hexColour(colourAt(Colormap::Perceptual, 1, 0, 1)), hexColour(kPerceptualStops.back()));
  EXPECT_EQ(hexColour(colourAt(Colormap::Perceptual, 0.5f, 0, 1)), hexColour(kPerceptualStops[4]));
  EXPECT_EQ(hexColour(colourAt(Colormap::Perceptual, 7, 0, 1)), hexColour(kPerceptualStops.back()));  // clamped
  EXPECT_EQ(hexColour(colourAt(Colormap::Diverging, 0, -2, 1)), hexColour(kDivergingStops[1]));       // 0 is white
  EXPECT_EQ(hexColour(colourAt(Colormap::Diverging, -2, -2, 1)), hexColour(kDivergingStops[0]));
  EXPECT_EQ(hexColour(colourAt(Colormap::Diverging, 2, -2, 1)), hexColour(kDivergingStops[2]));  // the range is symmetric
  EXPECT_EQ(hexColour(colourAt(Colormap::Perceptual, std::numeric_limits<float>::quiet_NaN(), 0, 1)), hexColour(kMaskColour));
  EXPECT_EQ(hexColour({1, 0.5f, 0}), "#ff8000");
}

TEST(SvgFigure, EveryCellIsARectWithItsValuesColourAndTheLabelsAreText) {
  HeatmapFigure f;
  f.title = "attention <l0 h1>";
  f.rows = 3;
  f.cols = 2;
  f.values = {0.1f, 0.9f, std::numeric_limits<float>::infinity(), 0.5f, 0.0f, 1.0f};
  f.lo = 0;
  f.hi = 1;
  f.rowLabels = {"The", "<&>", "bad\xff"};
  f.colLabels = {"a\"b", "c"};
  const std::string svg = heatmapSvg(f);
  int cells = 0;
  for (size_t at = svg.find("<rect class=\"cell\""); at != std::string::npos; at = svg.find("<rect class=\"cell\"", at + 1), ++cells) {
    const int r = std::stoi(attribute(svg, at, "data-row")), c = std::stoi(attribute(svg, at, "data-col"));
    const float v = f.values[r * 2 + c];
    EXPECT_EQ(attribute(svg, at, "fill"), hexColour(colourAt(f.colormap, v, f.lo, f.hi))) << r << "," << c;
    if (std::isfinite(v)) EXPECT_FLOAT_EQ(std::stof(attribute(svg, at, "data-value")), v) << r << "," << c;
    else EXPECT_EQ(attribute(svg, at, "data-value"), "masked");
  }
  EXPECT_EQ(cells, 6);
  EXPECT_NE(svg.find(">&lt;&amp;&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">bad\xEF\xBF\xBD</text>"), std::string::npos);  // not UTF-8: U+FFFD
  EXPECT_NE(svg.find(">a&quot;b</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>attention &lt;l0 h1&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"scale-hi\""), std::string::npos);
  EXPECT_EQ(svg.find("\xff"), std::string::npos);
  f.colLabels = {"only one"};
  EXPECT_THROW(heatmapSvg(f), std::invalid_argument);
  f.colLabels.clear();
  f.values.pop_back();
  EXPECT_THROW(heatmapSvg(f), std::invalid_argument);
}

TEST(SvgFigure, AGridOfHeatmapsKeepsEveryPanelsCellsAndTitle) {
  std::vector<HeatmapFigure> panels;
  for (int i = 0; i < 3; ++i) {
    HeatmapFigure f;
    f.title = "layer 0 head " + std::to_string(i);
    f.rows = 2;
    f.cols = 3;
    f.values = {0, 0.5f, 1, 0.25f * i, std::numeric_limits<float>::quiet_NaN(), 0.75f};
    panels.push_back(f);
  }
  const std::string svg = heatmapGridSvg("every head", panels, 2);
  EXPECT_NE(svg.find(">layer 0 head 2</text>"), std::string::npos);
  size_t cells = 0;
  for (size_t at = svg.find("<rect class=\"cell\""); at != std::string::npos; at = svg.find("<rect class=\"cell\"", at + 1)) {
    const size_t panel = std::stoul(attribute(svg, at, "data-panel"));
    const int r = std::stoi(attribute(svg, at, "data-row")), c = std::stoi(attribute(svg, at, "data-col"));
    const float v = panels[panel].values[static_cast<size_t>(r) * 3 + c];
    EXPECT_EQ(attribute(svg, at, "fill"), hexColour(colourAt(Colormap::Perceptual, v, 0, 1)));
    ++cells;
  }
  EXPECT_EQ(cells, 18u);
  panels[1].values.pop_back();
  EXPECT_THROW(heatmapGridSvg("bad", panels, 2), std::invalid_argument);
  EXPECT_THROW(heatmapGridSvg("none", {}, 2), std::invalid_argument);
}

// A matrix drawn as a texture: the floats go up as an R32F texture (one texel per cell) and the
// colormap shader (shaders/heatmap.frag) paints them into an RGBA texture once per data change;
// ImGui then shows that texture scaled with nearest filtering. Hovering reports the cell.
#pragma once
#include <imgui.h>

#include <vector>

#include "app/common/colormap.h"
#include "app/common/svg_figure.h"
#include "app/gui/gfx.h"

namespace tscope::gui {

// The shader program and vertex array every heatmap shares (created once the GL context exists).
class HeatmapRenderer {
 public:
  HeatmapRenderer();
  void paint(GLuint valuesTexture, GLuint framebuffer, int cols, int rows, float lo, float hi, Colormap colormap);

 private:
  Program program_;
  VertexArray emptyVao_;
  GLint loLocation_, hiLocation_, colormapLocation_, maskLocation_, valuesLocation_;
};

class Heatmap {
 public:
  // Row-major (rows, cols) values; range lo..hi (diverging maps centre on 0). Repaints the texture.
  void setData(HeatmapRenderer& renderer, const float* values, int rows, int cols, float lo, float hi, Colormap colormap);
  bool empty() const { return rows_ == 0; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  float value(int row, int col) const { return values_[(size_t)row * cols_ + col]; }
  // What is on screen as a vector figure (svg_figure.h): the values with the same range and colours;
  // labels given when there is one per row / column.
  HeatmapFigure figure(const std::string& title, const std::vector<std::string>* rowLabels, const std::vector<std::string>* colLabels) const;
  // Draws at `size` pixels; returns true and sets row/col when the mouse is over a cell.
  bool draw(ImVec2 size, int* hoveredRow, int* hoveredCol) const;

 private:
  std::vector<float> values_;
  int rows_ = 0, cols_ = 0;
  float lo_ = 0, hi_ = 1;
  Colormap colormap_ = Colormap::Perceptual;
  Texture raw_, colored_;
  Framebuffer framebuffer_;
};

// A vertical colour scale (hi at the top) with its end values, for beside a heatmap.
class ColorScale {
 public:
  void draw(HeatmapRenderer& renderer, float lo, float hi, Colormap colormap, ImVec2 size);

 private:
  Heatmap bar_;
  float lo_ = 0, hi_ = 0;
  Colormap colormap_ = Colormap::Perceptual;
  bool built_ = false;
};

}  // namespace tscope::gui

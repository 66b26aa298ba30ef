// Heatmap textures: upload, colour through the shader into an RGBA texture, show with ImGui.
#include "app/gui/widgets/heatmap.h"

#include <cstdio>

#include "shaders_embedded.h"

namespace tscope::gui {

HeatmapRenderer::HeatmapRenderer() : program_(makeProgram(kShader_fullscreen_vert, kShader_heatmap_frag, "heatmap")), emptyVao_(makeVertexArray()) {
  loLocation_ = glGetUniformLocation(program_.id(), "lo");
  hiLocation_ = glGetUniformLocation(program_.id(), "hi");
  colormapLocation_ = glGetUniformLocation(program_.id(), "colormap");
  maskLocation_ = glGetUniformLocation(program_.id(), "maskColor");
  valuesLocation_ = glGetUniformLocation(program_.id(), "values");
  // The colour stops, once: uniforms keep their values in the program.
  static_assert(sizeof(Rgb) == 3 * sizeof(float));
  glUseProgram(program_.id());
  glUniform3fv(glGetUniformLocation(program_.id(), "viridis"), kPerceptualStops.size(), &kPerceptualStops[0].r);
  glUniform3fv(glGetUniformLocation(program_.id(), "divergingStops"), kDivergingStops.size(), &kDivergingStops[0].r);
  glUseProgram(0);
}

void HeatmapRenderer::paint(GLuint valuesTexture, GLuint framebuffer, int cols, int rows, float lo, float hi, Colormap colormap) {
  GLint previousFramebuffer = 0, previousProgram = 0, previousVao = 0, previousTexture = 0, viewport[4];
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &previousFramebuffer);
  glGetIntegerv(GL_CURRENT_PROGRAM, &previousProgram);
  glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &previousVao);
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previousTexture);
  glGetIntegerv(GL_VIEWPORT, viewport);
  const GLboolean blend = glIsEnabled(GL_BLEND), scissor = glIsEnabled(GL_SCISSOR_TEST);
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  glViewport(0, 0, cols, rows);
  glUseProgram(program_.id());
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, valuesTexture);
  glUniform1i(valuesLocation_, 0);
  glUniform1f(loLocation_, lo);
  glUniform1f(hiLocation_, hi);
  glUniform1i(colormapLocation_, static_cast<int>(colormap));
  glUniform4f(maskLocation_, kMaskColour.r, kMaskColour.g, kMaskColour.b, 1.0f);
  glBindVertexArray(emptyVao_.id());
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glBindVertexArray(previousVao);
  glBindTexture(GL_TEXTURE_2D, previousTexture);
  glUseProgram(previousProgram);
  glBindFramebuffer(GL_FRAMEBUFFER, previousFramebuffer);
  glViewport(viewport[0], viewport[1], viewport[2], viewport[3]);
  if (blend) glEnable(GL_BLEND);
  if (scissor) glEnable(GL_SCISSOR_TEST);
  TSCOPE_CHECK_GL();
}

HeatmapFigure Heatmap::figure(const std::string& title, const std::vector<std::string>* rowLabels, const std::vector<std::string>* colLabels) const {
  HeatmapFigure f{title, values_, rows_, cols_, lo_, hi_, colormap_, {}, {}};
  if (rowLabels && rowLabels->size() == static_cast<size_t>(rows_)) f.rowLabels = *rowLabels;
  if (colLabels && colLabels->size() == static_cast<size_t>(cols_)) f.colLabels = *colLabels;
  return f;
}

void Heatmap::setData(HeatmapRenderer& renderer, const float* values, int rows, int cols, float lo, float hi, Colormap colormap) {
  lo_ = lo;
  hi_ = hi;
  colormap_ = colormap;
  values_.assign(values, values + (size_t)rows * cols);
  rows_ = rows;
  cols_ = cols;
  if (rows == 0 || cols == 0) return;
  if (!raw_) {
    raw_ = makeTexture();
    colored_ = makeTexture();
    framebuffer_ = makeFramebuffer();
  }
  auto setupTexture = [](GLuint id) {
    glBindTexture(GL_TEXTURE_2D, id);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  };
  GLint previousTexture = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &previousTexture);
  setupTexture(raw_.id());
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, cols, rows, 0, GL_RED, GL_FLOAT, values);
  setupTexture(colored_.id());
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, cols, rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  GLint previousFramebuffer = 0;
  glGetIntegerv(GL_FRAMEBUFFER_BINDING, &previousFramebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_.id());
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, colored_.id(), 0);
  glBindFramebuffer(GL_FRAMEBUFFER, previousFramebuffer);
  glBindTexture(GL_TEXTURE_2D, previousTexture);
  TSCOPE_CHECK_GL();
  renderer.paint(raw_.id(), framebuffer_.id(), cols, rows, lo, hi, colormap);
}

bool Heatmap::draw(ImVec2 size, int* hoveredRow, int* hoveredCol) const {
  if (empty()) {
    ImGui::Dummy(size);
    return false;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  // The colour texture's texel row 0 is the data's row 0, shown at the top.
  ImGui::Image(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(colored_.id())), size, ImVec2(0, 0), ImVec2(1, 1));
  if (!ImGui::IsItemHovered()) return false;
  const ImVec2 mouse = ImGui::GetMousePos();
  const int col = static_cast<int>((mouse.x - origin.x) / size.x * cols_);
  const int row = static_cast<int>((mouse.y - origin.y) / size.y * rows_);
  if (col < 0 || col >= cols_ || row < 0 || row >= rows_) return false;
  *hoveredRow = row;
  *hoveredCol = col;
  return true;
}

void ColorScale::draw(HeatmapRenderer& renderer, float lo, float hi, Colormap colormap, ImVec2 size) {
  if (!built_ || lo != lo_ || hi != hi_ || colormap != colormap_) {
    constexpr int steps = 128;
    std::vector<float> values(steps);
    for (int i = 0; i < steps; ++i) values[i] = hi - (hi - lo) * i / (steps - 1.0f);  // top row = hi
    bar_.setData(renderer, values.data(), steps, 1, lo, hi, colormap);
    lo_ = lo;
    hi_ = hi;
    colormap_ = colormap;
    built_ = true;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  int row, col;
  bar_.draw(size, &row, &col);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  char label[32];
  std::snprintf(label, sizeof label, "%.3g", hi);
  draw->AddText(ImVec2(origin.x + size.x + 4, origin.y), text, label);
  std::snprintf(label, sizeof label, "%.3g", lo);
  draw->AddText(ImVec2(origin.x + size.x + 4, origin.y + size.y - ImGui::GetTextLineHeight()), text, label);
}

}  // namespace tscope::gui

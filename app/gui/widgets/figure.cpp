// Figure frames and colour bars drawn with ImGui's draw list around Heatmap textures.
#include "app/gui/widgets/figure.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace tscope::gui {

namespace {
constexpr int kRampCells = 128;

std::string number(int value) { return std::to_string(value); }

std::string shortNumber(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}
}  // namespace

float figureLeftMargin(const FigureAxes& axes, int rows) {
  const float numbers = ImGui::CalcTextSize(number(axes.rowFirst + std::max(rows - 1, 0)).c_str()).x;
  const float label = ImGui::CalcTextSize(axes.rowLabel.c_str()).x;
  return std::max(numbers, label) + ImGui::GetStyle().ItemSpacing.x;
}

float figureExtraHeight() { return ImGui::GetTextLineHeightWithSpacing() * 3.0f; }

bool drawHeatmapFigure(const Heatmap& map, const FigureAxes& axes, ImVec2 plotSize, ImVec2* plotOrigin, int* row, int* col) {
  ImGui::BeginGroup();
  ImGui::TextUnformatted(axes.title.c_str());
  const float margin = figureLeftMargin(axes, map.rows());
  const ImVec2 start = ImGui::GetCursorScreenPos();
  const ImVec2 origin(start.x + margin, start.y);
  *plotOrigin = origin;
  ImGui::SetCursorScreenPos(origin);
  const bool hovered = map.draw(plotSize, row, col);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const float lineHeight = ImGui::GetTextLineHeight(), gap = ImGui::GetStyle().ItemSpacing.x * 0.5f;
  // Row numbers at the first and last row, the row label centred between them.
  const std::string firstRow = number(axes.rowFirst), lastRow = number(axes.rowFirst + std::max(map.rows() - 1, 0));
  draw->AddText(ImVec2(origin.x - gap - ImGui::CalcTextSize(firstRow.c_str()).x, origin.y), dim, firstRow.c_str());
  draw->AddText(ImVec2(origin.x - gap - ImGui::CalcTextSize(lastRow.c_str()).x, origin.y + plotSize.y - lineHeight), dim, lastRow.c_str());
  const ImVec2 rowLabelSize = ImGui::CalcTextSize(axes.rowLabel.c_str());
  draw->AddText(ImVec2(origin.x - gap - rowLabelSize.x, origin.y + (plotSize.y - rowLabelSize.y) * 0.5f), text, axes.rowLabel.c_str());
  // Column numbers at both ends, the column label centred under the plot.
  const float below = origin.y + plotSize.y + 2;
  const std::string firstCol = number(axes.colFirst), lastCol = number(axes.colFirst + std::max(map.cols() - 1, 0));
  draw->AddText(ImVec2(origin.x, below), dim, firstCol.c_str());
  draw->AddText(ImVec2(origin.x + plotSize.x - ImGui::CalcTextSize(lastCol.c_str()).x, below), dim, lastCol.c_str());
  // The column label goes between the end numbers, or on its own line when they would overlap.
  const float colLabelWidth = ImGui::CalcTextSize(axes.colLabel.c_str()).x;
  const float numbersWidth = ImGui::CalcTextSize(firstCol.c_str()).x + ImGui::CalcTextSize(lastCol.c_str()).x;
  const bool ownLine = colLabelWidth + numbersWidth + 4 * gap > plotSize.x;
  const float labelY = ownLine ? below + lineHeight : below;
  draw->AddText(ImVec2(origin.x + std::max(0.0f, (plotSize.x - colLabelWidth) * 0.5f), labelY), text, axes.colLabel.c_str());
  ImGui::SetCursorScreenPos(ImVec2(start.x, below));
  ImGui::Dummy(ImVec2(margin + plotSize.x, (ownLine ? 2 : 1) * lineHeight + 2));
  ImGui::EndGroup();
  if (hovered) draw->AddRect(origin, ImVec2(origin.x + plotSize.x, origin.y + plotSize.y), ImGui::GetColorU32(ImGuiCol_Border));
  return hovered;
}

void Colorbar::draw(HeatmapRenderer& renderer, float lo, float hi, Colormap colormap, float width, const char* caption) {
  if (ramp_.empty() || lo != lo_ || hi != hi_ || static_cast<int>(colormap) != colormap_) {
    std::vector<float> values(kRampCells);
    for (int i = 0; i < kRampCells; ++i) values[i] = lo + (hi - lo) * i / (kRampCells - 1.0f);
    ramp_.setData(renderer, values.data(), 1, kRampCells, lo, hi, colormap);
    lo_ = lo;
    hi_ = hi;
    colormap_ = static_cast<int>(colormap);
  }
  ImGui::BeginGroup();
  const float lineHeight = ImGui::GetTextLineHeight();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  int unusedRow, unusedCol;
  ramp_.draw(ImVec2(width, lineHeight * 0.8f), &unusedRow, &unusedCol);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const float below = origin.y + lineHeight * 0.8f + 2;
  const std::string loText = shortNumber(lo), hiText = shortNumber(hi);
  draw->AddText(ImVec2(origin.x, below), text, loText.c_str());
  draw->AddText(ImVec2(origin.x + width - ImGui::CalcTextSize(hiText.c_str()).x, below), text, hiText.c_str());
  if (lo < 0 && hi > 0) {
    const float zeroX = origin.x + width * (-lo / (hi - lo));
    draw->AddLine(ImVec2(zeroX, origin.y), ImVec2(zeroX, below), text);
    draw->AddText(ImVec2(zeroX - ImGui::CalcTextSize("0").x * 0.5f, below), text, "0");
  }
  float captionWidth = 0;
  if (caption && *caption) {
    const float x = origin.x + width + ImGui::GetStyle().ItemSpacing.x;
    draw->AddText(ImVec2(x, origin.y - lineHeight * 0.1f), ImGui::GetColorU32(ImGuiCol_TextDisabled), caption);
    captionWidth = ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(caption).x;
  }
  ImGui::Dummy(ImVec2(width + captionWidth, lineHeight + 2));
  ImGui::EndGroup();
}

void drawFigure(HeatmapRenderer& renderer, const FigureSpec& spec, float side, int index, FigureHover* hover) {
  ImGui::BeginGroup();
  ImVec2 origin;
  int row = -1, col = -1;
  if (drawHeatmapFigure(*spec.map, spec.axes, ImVec2(side, side), &origin, &row, &col)) {
    hover->figure = index;
    hover->row = row;
    hover->col = col;
    hover->origin = origin;
    hover->side = side;
  }
  hover->plotOrigin[std::clamp(index, 0, 1)] = origin;
  hover->plotSide = side;
  ImGui::SetCursorScreenPos(ImVec2(origin.x, ImGui::GetCursorScreenPos().y));
  spec.bar->draw(renderer, spec.lo, spec.hi, spec.colormap, std::min(side, ImGui::GetFontSize() * 16), spec.barCaption);
  ImGui::EndGroup();
}

FigureHover drawFigurePair(HeatmapRenderer& renderer, const FigureSpec& left, const FigureSpec& right, float reservedBelow) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetFontSize() * 2;
  const float margins = figureLeftMargin(left.axes, left.map->rows()) + figureLeftMargin(right.axes, right.map->rows());
  const float colorbarHeight = ImGui::GetTextLineHeightWithSpacing() * 2;
  // Fill the height when the width allows; on a short window (large text) keep the plots
  // readable and let the panel scroll rather than shrink them to thumbnails.
  const float byWidth = (avail.x - margins - gap) * 0.5f;
  const float byHeight = avail.y - figureExtraHeight() - colorbarHeight - reservedBelow;
  const float side = std::max(ImGui::GetTextLineHeight() * 6, std::min(byWidth, std::max(byHeight, ImGui::GetTextLineHeight() * 16)));
  FigureHover hover;
  drawFigure(renderer, left, side, 0, &hover);
  ImGui::SameLine(0, gap);
  drawFigure(renderer, right, side, 1, &hover);
  return hover;
}

void drawOffsetDiagonal(const FigureHover& hover, int n) {
  if (hover.figure < 0 || n <= 0) return;
  const int offset = hover.col - hover.row;
  const int firstRow = std::max(0, -offset), lastRow = std::min(n - 1, n - 1 - offset);
  if (lastRow < firstRow) return;
  const float cell = hover.side / n;
  const ImVec2 a(hover.origin.x + (firstRow + offset) * cell, hover.origin.y + firstRow * cell);
  const ImVec2 b(hover.origin.x + (lastRow + offset + 1) * cell, hover.origin.y + (lastRow + 1) * cell);
  ImGui::GetWindowDrawList()->AddLine(a, b, IM_COL32(255, 200, 0, 255), std::max(2.0f, ImGui::GetFontSize() * 0.15f));
}

}  // namespace tscope::gui

// TokenHeatmap (token_heatmap.h): the plot is a Heatmap texture; the labels, outlines and the
// tooltip are drawn with ImGui's draw list around it, all inside one group so a caller can put the
// next widget beside the whole of it.
#include "app/gui/widgets/token_heatmap.h"

#include <algorithm>
#include <cmath>

#include "app/gui/widgets/figure_sink.h"

namespace tscope::gui {

namespace {

float widest(const std::vector<std::string>& labels) {
  float width = 0;
  for (const std::string& label : labels) width = std::max(width, ImGui::CalcTextSize(label.c_str()).x);
  return width;
}

// `text` cut by whole UTF-8 characters, with "..", until it fits `width` pixels ("" when nothing does).
std::string fitted(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  std::string cut = text;
  while (!cut.empty()) {
    size_t end = cut.size() - 1;
    while (end > 0 && (static_cast<unsigned char>(cut[end]) & 0xC0) == 0x80) --end;  // a continuation byte
    cut.resize(end);
    if (ImGui::CalcTextSize((cut + "..").c_str()).x <= width) return cut + "..";
  }
  return "";
}

// Labels every `step`-th index, and always the selected one: the ones within a step of it make way.
bool labelled(int i, int step, int selected) {
  if (i == selected) return true;
  return i % step == 0 && (selected < 0 || std::abs(i - selected) >= step);
}

bool mouseIn(ImVec2 min, ImVec2 max) {
  const ImVec2 mouse = ImGui::GetMousePos();
  return ImGui::IsWindowHovered() && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y && mouse.y < max.y;
}

void drawRowLabels(const TokenHeatmapStyle& style, const TokenHeatmapHit& hit, int rows) {
  if (!style.rowLabels || style.labelWidth <= 0) return;
  const float f = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight();
  const float right = hit.plotMin.x - style.gutter - f * 0.3f, room = style.labelWidth - f * 0.3f;
  const int step = std::max(1, static_cast<int>(std::ceil(lineH * 0.9f / hit.cell.y)));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
  for (int r = 0; r < rows && r < static_cast<int>(style.rowLabels->size()); ++r) {
    if (!labelled(r, step, style.selectedRow)) continue;
    const std::string label = fitted((*style.rowLabels)[r], room);
    const float width = ImGui::CalcTextSize(label.c_str()).x;
    draw->AddText(ImVec2(right - width, hit.plotMin.y + (r + 0.5f) * hit.cell.y - lineH * 0.5f), r == style.selectedRow ? style.selectedColor : ink,
                  label.c_str());
  }
}

void drawColLabels(const TokenHeatmapStyle& style, const TokenHeatmapHit& hit, int cols, float y) {
  if (!style.colLabels) return;
  const float f = ImGui::GetFontSize();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
  const int count = std::min(cols, static_cast<int>(style.colLabels->size()));
  auto colour = [&](int c) { return c == style.selectedCol ? style.selectedColor : ink; };
  if (style.colLabelSlot > 0) {  // every k-th, left-aligned, shortened to its k cells
    const int step = std::max(1, static_cast<int>(std::ceil(style.colLabelSlot / hit.cell.x)));
    for (int c = 0; c < count; ++c)
      if (labelled(c, step, style.selectedCol))
        draw->AddText(ImVec2(hit.plotMin.x + c * hit.cell.x + 2, y), colour(c), fitted((*style.colLabels)[c], step * hit.cell.x - 4).c_str());
    return;
  }
  const bool numbers = style.colIndicesWhenNarrow && widest(*style.colLabels) + 2 > hit.cell.x;
  const float labelWidth = numbers ? ImGui::CalcTextSize("000").x : widest(*style.colLabels) + f * 0.1f;
  const int step = std::max(1, static_cast<int>(std::ceil(labelWidth / hit.cell.x)));
  for (int c = 0; c < count; ++c) {
    if (!labelled(c, step, style.selectedCol)) continue;
    const std::string label = numbers ? std::to_string(c) : (*style.colLabels)[c];
    const float width = ImGui::CalcTextSize(label.c_str()).x;
    draw->AddText(ImVec2(hit.plotMin.x + (c + 0.5f) * hit.cell.x - width * 0.5f, y), colour(c), label.c_str());
  }
}

// The selected row and column outlined across the plot, and the hovered cell.
void drawOutlines(const TokenHeatmapStyle& style, const TokenHeatmapHit& hit, int rows, int cols) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float pad = style.selectedThickness * 0.5f;
  if (style.selectedRow >= 0 && style.selectedRow < rows)
    draw->AddRect(ImVec2(hit.plotMin.x - pad, hit.plotMin.y + style.selectedRow * hit.cell.y),
                  ImVec2(hit.plotMax.x + pad, hit.plotMin.y + (style.selectedRow + 1) * hit.cell.y), style.selectedColor, 0, 0,
                  style.selectedThickness);
  if (style.selectedCol >= 0 && style.selectedCol < cols)
    draw->AddRect(ImVec2(hit.plotMin.x + style.selectedCol * hit.cell.x, hit.plotMin.y - pad),
                  ImVec2(hit.plotMin.x + (style.selectedCol + 1) * hit.cell.x, hit.plotMax.y + pad), style.selectedColor, 0, 0,
                  style.selectedThickness);
  if (style.hoverColor && hit.row >= 0 && hit.col >= 0) draw->AddRect(hit.cellMin(hit.row, hit.col), hit.cellMax(hit.row, hit.col), style.hoverColor);
}

}  // namespace

float TokenHeatmap::labelWidthFor(const std::vector<std::string>& labels, float maxWidth) {
  return std::min(widest(labels), maxWidth) + ImGui::GetFontSize() * 0.5f;
}

float TokenHeatmap::colLabelHeight() { return ImGui::GetTextLineHeight() + ImGui::GetFontSize() * 0.3f; }

float TokenHeatmap::squareCell(ImVec2 avail, int rows, int cols, float labelWidth, float maxCell) {
  if (rows <= 0 || cols <= 0) return 2.0f;
  return std::max(2.0f, std::min({maxCell, (avail.x - labelWidth) / cols, (avail.y - colLabelHeight()) / rows}));
}

TokenHeatmapHit TokenHeatmap::draw(HeatmapRenderer& renderer, ImVec2 cell, const TokenHeatmapStyle& style) {
  TokenHeatmapHit hit;
  hit.cell = cell;
  const int rows = map_.rows(), cols = map_.cols();
  const float f = ImGui::GetFontSize();
  const float band = style.colLabels ? colLabelHeight() : 0.0f;
  ImGui::BeginGroup();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  hit.plotMin = ImVec2(origin.x + style.labelWidth + style.gutter, origin.y + (style.colLabelsAbove ? band : 0.0f));
  hit.plotMax = ImVec2(hit.plotMin.x + cell.x * cols, hit.plotMin.y + cell.y * rows);
  ImGui::SetCursorScreenPos(hit.plotMin);
  int row = -1, col = -1;
  if (map_.draw(ImVec2(hit.plotMax.x - hit.plotMin.x, hit.plotMax.y - hit.plotMin.y), &row, &col)) {
    hit.row = row;
    hit.col = col;
    hit.clicked = ImGui::IsMouseClicked(0);
  }
  if (style.shared && style.region) {
    style.shared->regions[style.region] = {hit.plotMin.x, hit.plotMin.y, hit.plotMax.x, hit.plotMax.y};
    // Made only when Export SVG asks, in this frame (the labels are the caller's until it ends).
    addFigure(style.region, [this, name = std::string(style.region), rowLabels = style.rowLabels, colLabels = style.colLabels] {
      return heatmapSvg(map_.figure(name, rowLabels, colLabels));
    });
  }
  float right = hit.plotMax.x;
  if (style.scale == ScalePlace::Right) {
    ImGui::SameLine();
    beside_.draw(renderer, style.scaleLo, style.scaleHi, style.scaleColormap, ImVec2(f, hit.plotMax.y - hit.plotMin.y));
    right = ImGui::GetItemRectMax().x + f * 3;  // the end values written beside the bar
  }
  drawRowLabels(style, hit, rows);
  drawColLabels(style, hit, cols, style.colLabelsAbove ? origin.y : hit.plotMax.y + f * 0.15f);
  if (style.rowLabelHover && hit.row < 0 && rows > 0 && mouseIn(ImVec2(origin.x, hit.plotMin.y), ImVec2(hit.plotMin.x, hit.plotMax.y)))
    hit.row = std::clamp(static_cast<int>((ImGui::GetMousePos().y - hit.plotMin.y) / cell.y), 0, rows - 1);
  drawOutlines(style, hit, rows, cols);
  if (style.readout && hit.row >= 0) {
    const std::string text = style.readout(hit.row, hit.col);
    if (!text.empty()) ImGui::SetTooltip("%s", text.c_str());
  }
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(right - origin.x, hit.plotMax.y - origin.y + (style.colLabelsAbove ? 0.0f : band)));
  if (style.scale == ScalePlace::Below) {
    ImGui::SetCursorScreenPos(ImVec2(origin.x, ImGui::GetCursorScreenPos().y));
    const float width = std::min(style.scaleWidth > 0 ? style.scaleWidth : f * 14, hit.plotMax.x - origin.x);
    below_.draw(renderer, style.scaleLo, style.scaleHi, style.scaleColormap, width, style.scaleCaption);
  }
  ImGui::EndGroup();
  return hit;
}

}  // namespace tscope::gui

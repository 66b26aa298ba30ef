// Bars, colour ramps and chart labels (see bar_chart.h).
#include "app/gui/widgets/bar_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/common/colormap.h"
#include "app/gui/widgets/figure_sink.h"

namespace tscope::gui {

ImU32 barColor(BarStyle style) {
  switch (style) {
    case BarStyle::Highlighted: return IM_COL32(240, 140, 40, 255);
    case BarStyle::Rest: return IM_COL32(120, 140, 170, 255);
    case BarStyle::Filtered: return ImGui::GetColorU32(ImGuiCol_TextDisabled);
    case BarStyle::Normal: break;
  }
  return IM_COL32(60, 130, 225, 255);
}

void addBarTableFigure(BarTable table) {
  if (!figureSinkOpen()) return;
  std::string name = table.name;
  addFigure(std::move(name), [table = std::move(table)] { return barTableSvg(table); });
}

bool drawBar(float value, float scaleMax, float width, BarStyle style, const char* label) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float height = ImGui::GetTextLineHeight();
  const float labelWidth = ImGui::CalcTextSize(label).x;
  const float room = std::max(1.0f, width - labelWidth - ImGui::GetFontSize() * 0.4f);
  const float fraction = scaleMax > 0 ? std::clamp(value / scaleMax, 0.0f, 1.0f) : 0.0f;
  float length = room * fraction;
  if (style == BarStyle::Filtered) length = 2.0f;
  else if (value > 0) length = std::max(length, 1.0f);  // a non-zero value never disappears
  const float inset = height * 0.12f;
  if (length > 0) draw->AddRectFilled(ImVec2(origin.x, origin.y + inset), ImVec2(origin.x + length, origin.y + height - inset), barColor(style));
  const ImU32 text = ImGui::GetColorU32(style == BarStyle::Filtered ? ImGuiCol_TextDisabled : ImGuiCol_Text);
  draw->AddText(ImVec2(origin.x + length + ImGui::GetFontSize() * 0.3f, origin.y), text, label);
  ImGui::Dummy(ImVec2(width, height));
  return ImGui::IsItemHovered();
}

ImU32 perceptualColor(float t) {
  const Rgb c = colourAt(Colormap::Perceptual, std::isfinite(t) ? t : 0.0f, 0.0f, 1.0f);  // the heatmaps' own stops
  return ImGui::ColorConvertFloat4ToU32(ImVec4(c.r, c.g, c.b, 1.0f));
}

ImU32 textColorOn(ImU32 background) {
  const ImVec4 c = ImGui::ColorConvertU32ToFloat4(background);
  // Rec. 709 luma weights.
  const float luma = 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z;
  return luma > 0.45f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
}

void drawColorRamp(ImVec2 size, const char* leftLabel, const char* rightLabel) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  ImVec2 at = ImGui::GetCursorScreenPos();
  draw->AddText(at, text, leftLabel);
  at.x += ImGui::CalcTextSize(leftLabel).x + ImGui::GetFontSize() * 0.4f;
  const int segments = 16;
  const float step = size.x / segments;
  const float inset = (ImGui::GetTextLineHeight() - size.y) * 0.5f;
  for (int i = 0; i < segments; ++i) {
    const ImU32 a = perceptualColor(static_cast<float>(i) / segments), b = perceptualColor(static_cast<float>(i + 1) / segments);
    draw->AddRectFilledMultiColor(ImVec2(at.x + i * step, at.y + inset), ImVec2(at.x + (i + 1) * step + 0.5f, at.y + inset + size.y), a, b, b, a);
  }
  at.x += size.x + ImGui::GetFontSize() * 0.4f;
  draw->AddText(at, text, rightLabel);
  at.x += ImGui::CalcTextSize(rightLabel).x;
  ImGui::Dummy(ImVec2(at.x - ImGui::GetCursorScreenPos().x, ImGui::GetTextLineHeight()));
}

float colorRampWidth(ImVec2 size, const char* leftLabel, const char* rightLabel) {
  return ImGui::CalcTextSize(leftLabel).x + ImGui::CalcTextSize(rightLabel).x + size.x + ImGui::GetFontSize() * 0.8f;
}

std::string tokenLabel(const std::string& text, size_t maxChars) {
  std::string out = "'";
  size_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    if (chars == maxChars) {
      out += "..";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length = 1;
    if (c >= 0xF0) length = 4;
    else if (c >= 0xE0) length = 3;
    else if (c >= 0xC0) length = 2;
    length = std::min(length, text.size() - i);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out.append(text, i, length);
    i += length;
    ++chars;
  }
  return out + "'";
}

}  // namespace tscope::gui

// Column charts for per-expert quantities (see column_chart.h).
#include "app/gui/widgets/column_chart.h"

#include <algorithm>
#include <cstdio>

#include "app/gui/widgets/figure_sink.h"

namespace tscope::gui {

int drawColumnChart(const ColumnChart& chart, ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float line = ImGui::GetTextLineHeight(), pad = ImGui::GetStyle().ItemSpacing.x;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  // Title, then the legend on one line.
  draw->AddText(origin, text, chart.title.c_str());
  float legendX = origin.x;
  for (const ColumnSeries& s : chart.series) {
    const ImVec2 at(legendX, origin.y + line * 1.1f);
    draw->AddRectFilled(ImVec2(at.x, at.y + line * 0.2f), ImVec2(at.x + line * 0.6f, at.y + line * 0.8f), s.colour);
    draw->AddText(ImVec2(at.x + line * 0.8f, at.y), text, s.name.c_str());
    legendX += line * 0.8f + ImGui::CalcTextSize(s.name.c_str()).x + pad * 2;
  }
  if (!chart.referenceLabel.empty()) {
    const ImVec2 at(legendX, origin.y + line * 1.1f + line * 0.5f);
    draw->AddLine(at, ImVec2(at.x + line * 1.2f, at.y), IM_COL32(230, 60, 60, 255), 2.0f);
    draw->AddText(ImVec2(at.x + line * 1.4f, at.y - line * 0.5f), text, chart.referenceLabel.c_str());
  }
  const std::string top = columnValueText(chart.yFormat, chart.yMax);
  const float axisWidth = ImGui::CalcTextSize(top.c_str()).x + pad;
  const ImVec2 plotMin(origin.x + axisWidth, origin.y + line * 2.6f);
  const ImVec2 plotMax(origin.x + size.x, origin.y + size.y - line * (chart.categoryLabel.empty() ? 1.2f : 2.2f));
  const float plotHeight = std::max(1.0f, plotMax.y - plotMin.y);
  auto yOf = [&](float v) { return plotMax.y - plotHeight * std::clamp(chart.yMax > 0 ? v / chart.yMax : 0.0f, 0.0f, 1.0f); };
  draw->AddLine(ImVec2(plotMin.x, plotMin.y), ImVec2(plotMin.x, plotMax.y), dim);
  draw->AddLine(ImVec2(plotMin.x, plotMax.y), ImVec2(plotMax.x, plotMax.y), dim);
  draw->AddText(ImVec2(origin.x, plotMin.y - line * 0.5f), dim, top.c_str());
  draw->AddText(ImVec2(origin.x + axisWidth - pad - ImGui::CalcTextSize("0").x, plotMax.y - line * 0.5f), dim, "0");
  const int categories = chart.series.empty() ? 0 : static_cast<int>(chart.series[0].values.size());
  const float slot = categories > 0 ? (plotMax.x - plotMin.x) / categories : 0.0f;
  const int seriesCount = static_cast<int>(chart.series.size());
  const ImVec2 mouse = ImGui::GetMousePos();
  int hovered = -1;
  for (int c = 0; c < categories; ++c) {
    const float x0 = plotMin.x + c * slot + slot * 0.15f, x1 = plotMin.x + (c + 1) * slot - slot * 0.15f;
    if (ImGui::IsWindowHovered() && mouse.x >= plotMin.x + c * slot && mouse.x < plotMin.x + (c + 1) * slot && mouse.y >= plotMin.y &&
        mouse.y <= plotMax.y) {
      hovered = c;
      draw->AddRectFilled(ImVec2(plotMin.x + c * slot, plotMin.y), ImVec2(plotMin.x + (c + 1) * slot, plotMax.y),
                          ImGui::GetColorU32(ImGuiCol_HeaderHovered, 0.35f));
    }
    float base = 0;
    for (int s = 0; s < seriesCount; ++s) {
      const float v = chart.series[s].values[c];
      if (chart.stacked) {
        draw->AddRectFilled(ImVec2(x0, yOf(base + v)), ImVec2(x1, yOf(base)), chart.series[s].colour);
        base += v;
      } else {
        const float w = (x1 - x0) / seriesCount;
        draw->AddRectFilled(ImVec2(x0 + s * w, yOf(v)), ImVec2(x0 + (s + 1) * w - 1, plotMax.y), chart.series[s].colour);
      }
    }
    const std::string label = std::to_string(c);
    const float labelWidth = ImGui::CalcTextSize(label.c_str()).x;
    if (labelWidth < slot) draw->AddText(ImVec2((x0 + x1 - labelWidth) * 0.5f, plotMax.y + 2), text, label.c_str());
  }
  if (chart.reference >= 0) {
    const float y = yOf(chart.reference);
    for (float x = plotMin.x; x < plotMax.x; x += line * 0.8f)
      draw->AddLine(ImVec2(x, y), ImVec2(std::min(x + line * 0.5f, plotMax.x), y), IM_COL32(230, 60, 60, 255), 2.0f);
  }
  if (!chart.categoryLabel.empty()) {
    const float w = ImGui::CalcTextSize(chart.categoryLabel.c_str()).x;
    draw->AddText(ImVec2((plotMin.x + plotMax.x - w) * 0.5f, plotMax.y + line * 1.05f), text, chart.categoryLabel.c_str());
  }
  ImGui::Dummy(size);
  if (figureSinkOpen()) addFigure(chart.name.empty() ? "column_chart" : chart.name, [chart] { return columnChartSvg(chart); });
  return hovered;
}

}  // namespace tscope::gui

// Small layout helpers shared by the panels: flowing a row of widgets onto the next line when
// the window is too narrow (projector mode at 2-3x text size).
#pragma once
#include <imgui.h>

namespace tscope::gui {

// Call before a widget whose label is `nextLabel` (plus `extraWidth` for its frame or slider):
// stays on the current line when the widget fits, else starts a new line.
inline void sameLineIfFits(const char* nextLabel, float extraWidth = 0) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float needed = ImGui::CalcTextSize(nextLabel, nullptr, true).x + extraWidth + style.FramePadding.x * 2 + style.ItemSpacing.x;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + needed < right) ImGui::SameLine();
}

}  // namespace tscope::gui

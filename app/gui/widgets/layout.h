// Small layout helpers shared by the panels: flowing a row of widgets onto the next line when
// the window is too narrow (projector mode at 2-3x text size).
#pragma once
#include <imgui.h>

namespace tscope::gui {

// Call before a widget whose label is `nextLabel` (plus `extraWidth` for its frame or slider):
// stays on the current line when the widget fits, else starts a new line.
// The same for a widget `nextWidth` pixels wide.
inline void sameLineIfFits(float nextWidth) {
  const float right = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + nextWidth;
  if (right <= ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::SameLine();
}

inline void sameLineIfFits(const char* nextLabel, float extraWidth = 0) {
  sameLineIfFits(ImGui::CalcTextSize(nextLabel, nullptr, true).x + extraWidth + ImGui::GetStyle().FramePadding.x * 2);
}

}  // namespace tscope::gui

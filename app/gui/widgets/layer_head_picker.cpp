// The layer and head sliders (layer_head_picker.h).
#include "app/gui/widgets/layer_head_picker.h"

#include <imgui.h>

#include <algorithm>

#include "app/gui/widgets/layout.h"

namespace tscope::gui {

bool layerHeadSliders(SharedView* shared, const LayerHeadPicker& picker, int& layer, int layers, int& head, int heads) {
  const float width = ImGui::GetFontSize() * picker.widthEms;
  const ImGuiSliderFlags clamp = ImGuiSliderFlags_AlwaysClamp;  // a typed value past the model stays in it
  ImGui::SetNextItemWidth(width);
  bool changed = ImGui::SliderInt(picker.layerLabel, &layer, 0, std::max(0, layers - 1), "%d", clamp);
  if (picker.region && shared) recordItem(*shared, std::string(picker.region) + "_layer");
  sameLineIfFits(picker.headLabel, width);
  ImGui::SetNextItemWidth(width);
  ImGui::BeginDisabled(picker.headDisabled);
  changed |= ImGui::SliderInt(picker.headLabel, &head, 0, std::max(0, heads - 1), "%d", clamp);
  ImGui::EndDisabled();
  if (picker.region && shared) recordItem(*shared, std::string(picker.region) + "_head");
  return changed;
}

}  // namespace tscope::gui

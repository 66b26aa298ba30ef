// The layer and head sliders (layer_head_picker.h).
#include "app/gui/widgets/layer_head_picker.h"

#include <imgui.h>

#include <algorithm>

#include "app/gui/widgets/layout.h"

namespace tscope::gui {

namespace {
constexpr ImGuiSliderFlags kClamp = ImGuiSliderFlags_AlwaysClamp;  // a typed value past the model stays in it
}

bool layerSlider(SharedView* shared, const LayerHeadPicker& picker, int& layer, int layers) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * picker.widthEms);
  const bool changed = ImGui::SliderInt(picker.layerLabel, &layer, 0, std::max(0, layers - 1), "%d", kClamp);
  if (picker.region && shared) recordItem(*shared, std::string(picker.region) + "_layer");
  return changed;
}

bool layerHeadSliders(SharedView* shared, const LayerHeadPicker& picker, int& layer, int layers, int& head, int heads) {
  const float width = ImGui::GetFontSize() * picker.widthEms;
  bool changed = layerSlider(shared, picker, layer, layers);
  sameLineIfFits(picker.headLabel, width);
  ImGui::SetNextItemWidth(width);
  ImGui::BeginDisabled(picker.headDisabled);
  changed |= ImGui::SliderInt(picker.headLabel, &head, 0, std::max(0, heads - 1), "%d", kClamp);
  ImGui::EndDisabled();
  if (picker.region && shared) recordItem(*shared, std::string(picker.region) + "_head");
  return changed;
}

}  // namespace tscope::gui

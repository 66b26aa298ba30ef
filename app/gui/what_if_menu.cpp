// The "What if" menu and its status line (what_if_menu.h).
#include "app/gui/what_if_menu.h"

#include <imgui.h>

#include <algorithm>

namespace tscope::gui {

namespace {

const char* label(WhatIfKind kind) {
  switch (kind) {
    case WhatIfKind::NoCausalMask: return "no causal mask (the decoder sees the future)";
    case WhatIfKind::NoPositions: return "no positions (no table, RoPE or ALiBi)";
    case WhatIfKind::NoScale: return "no 1/sqrt(d) scaling of the scores";
    case WhatIfKind::UniformAttention: return "uniform attention (the mean of the visible values) in layer";
    case WhatIfKind::SkipResidual: return "no residual connection in layer";
    case WhatIfKind::SkipMlp: return "no MLP in layer";
    case WhatIfKind::SkipFinalNorm: return "no final norm before the unembedding";
    case WhatIfKind::Shuffle: return "shuffle the prompt's tokens, seed";
  }
  return "?";
}

// The item of `kind` in `whatIfs`, or null.
WhatIf* find(WhatIfs& whatIfs, WhatIfKind kind) {
  const auto it = std::find_if(whatIfs.items.begin(), whatIfs.items.end(), [kind](const WhatIf& w) { return w.kind == kind; });
  return it == whatIfs.items.end() ? nullptr : &*it;
}

}  // namespace

bool drawWhatIfMenu(WhatIfMenu& menu, WhatIfs& whatIfs, const ModelConfig& config, SharedView& shared, const std::string& id) {
  const std::string button = whatIfs.empty() ? "What if..." : "What if (" + std::to_string(whatIfs.items.size()) + " on)...";
  if (!whatIfs.empty()) ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
  const std::string popup = id + "_menu";
  if (ImGui::Button((button + "###" + id).c_str())) ImGui::OpenPopup(popup.c_str());
  if (!whatIfs.empty()) ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("take a piece out of the live model and see what it was for");
  recordItem(shared, id);
  bool changed = false;
  if (!ImGui::BeginPopup(popup.c_str())) return false;
  ImGui::TextUnformatted("What if the model had no...  (every panel shows the changed forward)");
  for (size_t i = 0; i < std::size(kWhatIfKinds); ++i) {
    const WhatIfKind kind = kWhatIfKinds[i];
    const std::string name = whatIfName(kind);
    WhatIf* on = find(whatIfs, kind);
    int& arg = whatIfTakesSeed(kind) ? menu.seed : menu.layer[i];
    if (on) arg = static_cast<int>(on->arg);
    arg = whatIfTakesLayer(kind) ? std::clamp(arg, 0, config.n_layer - 1) : std::max(arg, 0);
    const std::string problem = whatIfProblem(WhatIf{kind, arg}, config);
    bool checked = on != nullptr;
    ImGui::BeginDisabled(!problem.empty() && !on);
    if (ImGui::Checkbox((std::string(label(kind)) + "##" + name).c_str(), &checked)) {
      if (checked) whatIfs.items.push_back(WhatIf{kind, arg});
      else std::erase_if(whatIfs.items, [kind](const WhatIf& w) { return w.kind == kind; });
      changed = true;
    }
    if (!problem.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", problem.c_str());
    recordItem(shared, id + "_" + name);
    if (whatIfTakesLayer(kind) || whatIfTakesSeed(kind)) {
      ImGui::SameLine();
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
      const bool moved = whatIfTakesLayer(kind) ? ImGui::SliderInt(("##layer_" + name).c_str(), &arg, 0, config.n_layer - 1)
                                                : ImGui::InputInt(("##seed_" + name).c_str(), &arg);
      recordItem(shared, id + "_arg_" + name);
      if (moved && (on = find(whatIfs, kind))) {
        on->arg = std::max(arg, 0);
        changed = true;
      }
    }
    ImGui::EndDisabled();
  }
  ImGui::BeginDisabled(whatIfs.empty());
  if (ImGui::Button("All back on")) {
    whatIfs = {};
    changed = true;
  }
  recordItem(shared, id + "_clear");
  ImGui::EndDisabled();
  ImGui::EndPopup();
  return changed;
}

std::string whatIfsLine(const AppState& state, const Snapshot* snapshot) {
  if (state.whatIfs.empty()) return "";
  std::string line = "What if: " + describeWhatIfs(state.whatIfs) + " (every panel shows the changed model)";
  if (snapshot && !snapshot->shuffleOrder.empty()) {
    constexpr size_t kShown = 24;
    line += "; the model reads prompt tokens";
    for (size_t i = 0; i < std::min(kShown, snapshot->shuffleOrder.size()); ++i) line += " " + std::to_string(snapshot->shuffleOrder[i]);
    if (snapshot->shuffleOrder.size() > kShown) line += " ...";
  }
  return line;
}

}  // namespace tscope::gui

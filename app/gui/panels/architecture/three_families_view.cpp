#include "app/gui/panels/architecture/three_families_view.h"

#include <imgui.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "app/gui/widgets/bar_chart.h"

namespace tscope::gui {

namespace {

using session::FamilyExample;
using session::FamilyMask;

// One attention mask as a grid of n x m cells: `allowed(query, key)` filled, the rest outlined.
template <class Allowed>
void drawMaskGrid(const char* label, int queries, int keys, float cell, Allowed allowed) {
  ImGui::BeginGroup();
  ImGui::TextDisabled("%s", label);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 on = perceptualColor(0.8f), off = ImGui::GetColorU32(ImGuiCol_FrameBg), edge = ImGui::GetColorU32(ImGuiCol_Border);
  for (int q = 0; q < queries; ++q)
    for (int k = 0; k < keys; ++k) {
      const ImVec2 a(origin.x + k * cell, origin.y + q * cell), b(a.x + cell - 1, a.y + cell - 1);
      draw->AddRectFilled(a, b, allowed(q, k) ? on : off);
      draw->AddRect(a, b, edge);
    }
  ImGui::Dummy(ImVec2(keys * cell, queries * cell));
  ImGui::EndGroup();
}

void drawMask(const FamilyExample& e, float cell) {
  constexpr int n = 6;
  switch (e.mask) {
    case FamilyMask::Causal: drawMaskGrid("self-attention (query row, key column)", n, n, cell, [](int q, int k) { return k <= q; }); break;
    case FamilyMask::Bidirectional: drawMaskGrid("self-attention (query row, key column)", n, n, cell, [](int, int) { return true; }); break;
    case FamilyMask::EncoderDecoder:
      drawMaskGrid("encoder", n, n, cell, [](int, int) { return true; });
      ImGui::SameLine();
      drawMaskGrid("decoder", n - 2, n - 2, cell, [](int q, int k) { return k <= q; });
      ImGui::SameLine();
      drawMaskGrid("cross", n - 2, n, cell, [](int, int) { return true; });
      break;
  }
}

void drawExample(const FamilyExample& e, float cell) {
  ImGui::TextUnformatted(e.family.c_str());
  ImGui::TextDisabled("%s", e.model.c_str());
  ImGui::TextWrapped("Lecture: %s", e.lecture.c_str());
  ImGui::Spacing();
  ImGui::TextWrapped("In:  %s", e.input.c_str());
  if (!e.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.35f, 1.0f));
    ImGui::TextWrapped("%s", e.error.c_str());
    ImGui::PopStyleColor();
  } else {
    ImGui::TextWrapped("Out: %s", e.output.c_str());
    for (size_t s = 0; s < e.slots.size(); ++s) {
      std::string line = e.slots.size() > 1 ? "[MASK] " + std::to_string(s + 1) + ":" : "next:";
      for (const auto& c : e.slots[s]) {
        char p[32];
        std::snprintf(p, sizeof p, " %.0f%%", 100 * c.p);
        line += " \"" + c.token + "\"" + p;
      }
      ImGui::TextDisabled("%s", line.c_str());
    }
  }
  ImGui::Spacing();
  ImGui::TextWrapped("Mask: %s", e.maskText.c_str());
  drawMask(e, cell);
  ImGui::Spacing();
  ImGui::TextWrapped("Objective: %s", e.objective.c_str());
}

}  // namespace

void ThreeFamiliesView::draw(PanelContext& ctx) {
  if (!examples_ && !pending_.valid()) {
    const std::string models = (std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets/models").string();
    pending_ = std::async(std::launch::async, [models] { return session::runThreeFamilies(models); });
  }
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) examples_ = pending_.get();
  ImGui::TextWrapped(
      "The same block in three arrangements (the lecture's three families), each a shipped model run live on the lecture's example. "
      "Only the attention mask and the training objective differ.");
  if (!examples_) {
    ImGui::TextDisabled("running brown-small, brown-bert and dates-encdec...");
    ctx.shared.facts["families"] = {{"loading", true}};
    return;
  }
  ctx.shared.facts["families"] = {{"loading", false}, {"families", session::familiesJson(*examples_)}};
  const float cell = ImGui::GetFontSize() * 0.9f;
  if (!ImGui::BeginTable("families", 3, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchSame)) return;
  for (const FamilyExample& e : *examples_) {
    ImGui::TableNextColumn();
    drawExample(e, cell);
  }
  ImGui::EndTable();
  recordItem(ctx.shared, "families_table");
}

}  // namespace tscope::gui

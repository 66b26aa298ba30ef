// The router by hand (see moe_router_by_hand.h). Experts are numbered from 1 here, as the slide's
// E_1 .. E_8 are (the rest of the panel counts from 0, as the model's weights do).
#include "app/gui/panels/moe_router_by_hand.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>

#include "model/core/error.h"
#include "model/nn/moe.h"

namespace tscope::gui {

namespace {

void drawTable(const TypedRouterLogits& typed, const MoeRouting& routing, nlohmann::json& facts) {
  const int E = typed.experts;
  nlohmann::json tokens = nlohmann::json::array();
  if (!ImGui::BeginTable("router_by_hand_table", 2 + E, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
  ImGui::TableSetupColumn("token");
  ImGui::TableSetupColumn("row");
  for (int e = 0; e < E; ++e) ImGui::TableSetupColumn(("E_" + std::to_string(e + 1)).c_str());
  ImGui::TableHeadersRow();
  for (int t = 0; t < typed.tokens; ++t) {
    std::vector<float> gates(E, 0.0f);
    std::vector<int> chosen, dropped;
    for (const MoeAssignment& a : routing.assignments)
      if (a.token == t) {
        gates[a.expert] = a.gate;
        (a.dropped ? dropped : chosen).push_back(a.expert + 1);
      }
    const char* rows[3] = {"logit", "softmax", "gate"};
    for (int row = 0; row < 3; ++row) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      if (row == 0) ImGui::Text("%d", t + 1);
      ImGui::TableSetColumnIndex(1);
      ImGui::TextUnformatted(rows[row]);
      for (int e = 0; e < E; ++e) {
        ImGui::TableSetColumnIndex(2 + e);
        const size_t i = (size_t)t * E + e;
        const bool isChosen = std::find(chosen.begin(), chosen.end(), e + 1) != chosen.end();
        const bool isDropped = std::find(dropped.begin(), dropped.end(), e + 1) != dropped.end();
        if (row == 0) ImGui::Text("%.2f", typed.logits[i]);
        else if (row == 1) ImGui::Text("%.3f", routing.routerProbs[i]);
        else if (isDropped) ImGui::TextColored(ImVec4(0.92f, 0.2f, 0.2f, 1), "%.3f dropped", gates[e]);
        else if (isChosen) ImGui::TextColored(ImVec4(1, 0.75f, 0.2f, 1), "%.3f", gates[e]);
        else ImGui::TextDisabled("-");
      }
    }
    tokens.push_back({{"chosen", chosen}, {"dropped", dropped}, {"gates", gates}});
  }
  ImGui::EndTable();
  facts["tokens"] = tokens;
}

}  // namespace

void drawRouterByHand(PanelContext& ctx, RouterByHand& r) {
  const bool open = ImGui::CollapsingHeader("Router by hand: type logits (the lecture's worked example)");
  recordItem(ctx.shared, "router_by_hand");
  nlohmann::json& facts = ctx.shared.facts["router_by_hand"];
  facts = {{"open", open}};
  if (!open) return;
  ImGui::TextDisabled("one token per line, one logit W_g x per expert; routed exactly as the model's layers route");
  ImGui::InputTextMultiline("##router_logits", &r.text, ImVec2(-1, ImGui::GetTextLineHeight() * 3.5f));
  recordItem(ctx.shared, "router_by_hand_text");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderInt("k (experts per token)", &r.topK, 1, 8);
  recordItem(ctx.shared, "router_by_hand_k");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  ImGui::SliderFloat("capacity factor (0: no limit)", &r.capacityFactor, 0.0f, 2.0f, "%.2f");
  TypedRouterLogits typed;
  MoeRouting routing;
  try {
    typed = parseRouterLogits(r.text);
    MoeRoutingParams params;
    params.experts = typed.experts;
    params.topK = std::clamp(r.topK, 1, typed.experts);
    params.capacityFactor = r.capacityFactor;
    routing = routeTokens(typed.logits, typed.tokens, params);
  } catch (const Error& e) {
    ImGui::TextColored(ImVec4(0.92f, 0.3f, 0.25f, 1), "%s", e.what());
    facts["error"] = e.what();
    return;
  }
  facts["error"] = "";
  facts["experts"] = typed.experts;
  facts["k"] = routing.topK;
  facts["capacity"] = routing.capacity;
  ImGui::Text("%d token%s, %d experts, top-%d: gates = softmax over the chosen logits (they sum to 1); capacity %s", typed.tokens,
              typed.tokens == 1 ? "" : "s", typed.experts, routing.topK,
              routing.capacity < 0 ? "unlimited" : (std::to_string(routing.capacity) + " per expert = ceil(factor T / E)").c_str());
  drawTable(typed, routing, facts);
  if (typed.tokens == 1 && routing.topK == 2) {
    const auto& a = routing.assignments;
    ImGui::TextDisabled("G_%d = exp(%.2f) / (exp(%.2f) + exp(%.2f)) = %.3f, and G_%d = %.3f: y = %.2f E_%d(x) + %.2f E_%d(x)", a[0].expert + 1,
                        typed.logits[a[0].expert], typed.logits[a[0].expert], typed.logits[a[1].expert], a[0].gate, a[1].expert + 1, a[1].gate,
                        a[0].gate, a[0].expert + 1, a[1].gate, a[1].expert + 1);
  }
}

}  // namespace tscope::gui

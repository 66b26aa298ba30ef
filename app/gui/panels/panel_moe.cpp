// Experts panel (mixture-of-experts models only): for the selected layer, the token x expert
// gate matrix with each token's chosen experts outlined and capacity drops marked, the load per
// expert against the capacity, f_i and P_i of the load-balancing loss, and the routing knobs
// (top-k, capacity factor, token or expert choice), which re-run the model live.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/column_chart.h"
#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/panels/panel_moe.h"

#include <memory>
#include "model/nn/trace_views.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kChosen = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kDropped = IM_COL32(235, 50, 50, 255);
constexpr ImU32 kSelected = IM_COL32(255, 150, 0, 255);  // a lesson's expert

// The routing knobs; they apply to every layer and post a new request when changed.
void drawKnobs(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const float width = ImGui::GetFontSize() * 8;
  layerSlider(&ctx.shared, {.widthEms = 8}, st.layer, c.n_layer);
  sameLineIfFits(width + ImGui::CalcTextSize("top-k").x);
  int topK = st.moeTopK > 0 ? st.moeTopK : c.moe_top_k;
  ImGui::SetNextItemWidth(width);
  if (ImGui::SliderInt("top-k", &topK, 1, c.n_experts)) {
    st.moeTopK = std::clamp(topK, 1, c.n_experts);
    ctx.repost = true;
  }
  sameLineIfFits(width + ImGui::CalcTextSize("capacity factor").x);
  float factor = static_cast<float>(st.moeCapacityFactor >= 0 ? st.moeCapacityFactor : std::max(0.0, c.moe_capacity_factor));
  const float minFactor = st.moeExpertChoice ? 0.25f : 0.0f;  // expert choice needs a capacity
  ImGui::SetNextItemWidth(width);
  if (ImGui::SliderFloat("capacity factor", &factor, minFactor, 4.0f, factor <= 0 ? "unlimited" : "%.2f")) {
    st.moeCapacityFactor = std::clamp(factor, minFactor, 4.0f);
    ctx.repost = true;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Each expert takes at most ceil(T / E x factor) tokens (0 = no limit).");
  sameLineIfFits(ImGui::CalcTextSize("tokens choose experts  experts choose tokens").x + ImGui::GetFontSize() * 4);
  int choice = st.moeExpertChoice ? 1 : 0;
  bool changed = ImGui::RadioButton("tokens choose experts", &choice, 0);
  ImGui::SameLine();
  changed |= ImGui::RadioButton("experts choose tokens", &choice, 1);
  if (changed) {
    st.moeExpertChoice = choice == 1;
    if (st.moeExpertChoice && factor <= 0) {
      st.moeCapacityFactor = 1.0;
      ctx.message = "expert choice needs a capacity: the capacity factor is now 1";
    }
    ctx.repost = true;
  }
  sameLineIfFits(ImGui::CalcTextSize("model's routing").x + ImGui::GetFontSize());
  if (ImGui::Button("model's routing")) {
    st.moeTopK = 0;
    st.moeCapacityFactor = -1;
    st.moeExpertChoice = c.moe_routing == MoeRoutingKind::ExpertChoice;
    ctx.repost = true;
  }
}

// (T, E): gates at the chosen experts and 0 elsewhere, or the router's full softmax.
std::vector<float> gateMatrix(const MoeRouting& r, bool probabilities) { return probabilities ? r.routerProbs : activeExperts(r); }

void drawSummary(const Snapshot& s, const MoeRouting& r) {
  const int droppedAssignments = expertLoadSplit(r).droppedAssignments;
  const bool expertChoice = s.moeRouting && s.moeRouting->expertChoice;
  const double factor = s.moeRouting ? s.moeRouting->capacityFactor : 0;
  std::string capacity = "unlimited";
  if (r.capacity >= 0) {
    char text[96];
    std::snprintf(text, sizeof text, "%d tokens per expert = ceil(%s x %.2f)", r.capacity, expertChoice ? "T k / E" : "T / E", factor);
    capacity = text;
  }
  ImGui::Text("T = %d tokens, E = %d experts, %s, k = %d; capacity %s", r.tokens, r.experts,
              expertChoice ? "experts choose tokens (Zhou et al. 2022)" : "tokens choose experts (top-k, Shazeer et al. 2017)", r.topK,
              capacity.c_str());
  ImGui::Text("dropped: %d of %zu assignments; %zu %s no expert and %s through on the residual stream unchanged", droppedAssignments,
              r.assignments.size(), r.droppedTokens.size(), r.droppedTokens.size() == 1 ? "token gets" : "tokens get",
              r.droppedTokens.size() == 1 ? "passes" : "pass");
}

// The gate heatmap with token labels, chosen cells outlined and drops marked in red.
void drawGates(PanelContext& ctx, const Snapshot& s, const MoeRouting& r, MoeView& v, ImVec2 area) {
  const float line = ImGui::GetTextLineHeight();
  const float labelWidth = ImGui::GetFontSize() * 7;
  const float markerWidth = line * 1.2f;
  // Rows stay one text line high (token labels readable; the panel scrolls) up to 64 tokens.
  const float cellH = std::clamp((area.y - line * 4) / r.tokens, r.tokens <= 64 ? line : 2.0f, line * 1.5f);
  const float cellW = std::clamp((area.x - labelWidth - markerWidth) / r.experts, line, line * 3.5f);
  ImGui::TextUnformatted(v.showProbs ? "Router probabilities softmax(W_g x) over all experts" : "Gates at the chosen experts (0 elsewhere)");
  const float thickness = std::max(1.5f, cellH * 0.12f);
  const bool selected = v.selectedExpert >= 0 && v.selectedExpert < r.experts;  // a lesson's expert: its whole column
  TokenHeatmapStyle style{.rowLabels = &v.tokenLabels,
                          .labelWidth = labelWidth,
                          .gutter = markerWidth,
                          .colLabels = &v.expertLabels,
                          .colLabelsAbove = true,
                          .selectedCol = selected ? v.selectedExpert : -1,
                          .selectedColor = kSelected,
                          .selectedThickness = thickness * 2,
                          .hoverColor = 0,  // the chosen cells are outlined in white already
                          .shared = &ctx.shared,
                          .region = "moe_gates",
                          .scale = ScalePlace::Below,
                          .scaleHi = v.gatesMax,
                          .scaleCaption = v.showProbs ? "probability" : "gate"};
  style.readout = [&](int row, int col) {
    char line[160];
    std::snprintf(line, sizeof line, "token %d %s, expert %d\nrouter probability %.4f, logit %.3f", row,
                  tokenLabel(s.tokenText[std::min<size_t>(row, s.tokenText.size() - 1)]).c_str(), col,
                  r.routerProbs[static_cast<size_t>(row) * r.experts + col], r.routerLogits[static_cast<size_t>(row) * r.experts + col]);
    std::string text = line;
    for (const MoeAssignment& a : r.assignments)
      if (a.token == row && a.expert == col) {
        std::snprintf(line, sizeof line, "\nchosen (rank %d), gate %.4f%s", a.rank, a.gate, a.dropped ? ": DROPPED, the expert was full" : "");
        text += line;
      }
    if (static_cast<size_t>(row) < r.sharedExpertGates.size()) {
      std::snprintf(line, sizeof line, "\nshared expert gate %.4f", r.sharedExpertGates[row]);
      text += line;
    }
    return text;
  };
  const TokenHeatmapHit hit = v.gates.draw(ctx.renderer, ImVec2(cellW, cellH), style);
  if (selected) ctx.shared.facts["moe_selected_expert"] = v.selectedExpert;
  // The routing over the map: chosen cells outlined, dropped ones crossed, and a red dot left of a
  // row whose token reached no expert.
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (const MoeAssignment& a : r.assignments) {
    const ImVec2 p0 = hit.cellMin(a.token, a.expert), p1 = hit.cellMax(a.token, a.expert);
    if (a.dropped) {
      draw->AddLine(ImVec2(p0.x + 2, p0.y + 2), ImVec2(p1.x - 2, p1.y - 2), kDropped, thickness);
      draw->AddLine(ImVec2(p0.x + 2, p1.y - 2), ImVec2(p1.x - 2, p0.y + 2), kDropped, thickness);
    }
    draw->AddRect(p0, p1, a.dropped ? kDropped : kChosen, 0, 0, thickness);
  }
  for (int t : r.droppedTokens) {
    const ImVec2 centre(hit.plotMin.x - markerWidth * 0.5f, hit.plotMin.y + (t + 0.5f) * cellH);
    draw->AddCircleFilled(centre, std::min(markerWidth, cellH) * 0.35f, kDropped);
  }
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + std::max(area.x, ImGui::GetFontSize() * 12));
  ImGui::TextDisabled("white outline: chosen; red cross: dropped (expert full); red dot: token with no expert");
  if (s.moeRouting && !s.moeRouting->normalizeTopK && !v.showProbs)
    ImGui::TextDisabled("gates are the chosen experts' router probabilities, not renormalised: a token's gates need not sum to 1");
  if (!r.sharedExpertGates.empty()) ImGui::TextDisabled("every token also runs the shared expert, weighted by its own sigmoid gate (in the tooltip)");
  ImGui::PopTextWrapPos();
}

void drawBalance(const Snapshot& s, const MoeRouting& r, ImVec2 area, nlohmann::json& facts) {
  const int E = r.experts;
  area.x = std::min(area.x, ImGui::GetFontSize() * std::max(45.0f, 5.0f * E));  // few experts: no giant bars
  const auto [kept, dropped, droppedAssignments] = expertLoadSplit(r);
  float most = r.capacity >= 0 ? static_cast<float>(r.capacity) : 1.0f;
  for (int e = 0; e < E; ++e) most = std::max(most, kept[e] + dropped[e]);
  ColumnChart load;
  load.name = "expert_load";
  load.title = "Load per expert (tokens routed to it)";
  load.series = {{"kept", kept, IM_COL32(70, 130, 230, 255)}, {"dropped", dropped, kDropped}};
  load.stacked = true;
  load.yMax = std::ceil(most);
  load.yFormat = "%.0f";
  load.reference = static_cast<float>(r.capacity);
  load.referenceLabel = r.capacity >= 0 ? "capacity " + std::to_string(r.capacity) : "";
  load.categoryLabel = "expert";
  const float chartHeight = std::max(ImGui::GetTextLineHeight() * 9, (area.y - ImGui::GetTextLineHeightWithSpacing() * 4) * 0.5f);
  int hovered = drawColumnChart(load, ImVec2(area.x, chartHeight));
  ColumnChart balance;
  balance.name = "expert_balance";
  balance.title = "Load balance: f_i (share of assignments) and P_i (mean router probability)";
  balance.series = {{"f_i", r.fraction, IM_COL32(70, 130, 230, 255)}, {"P_i", r.meanProb, IM_COL32(240, 150, 40, 255)}};
  float top = 1.0f / E;
  for (int e = 0; e < E; ++e) top = std::max({top, r.fraction[e], r.meanProb[e]});
  balance.yMax = std::min(1.0f, std::ceil(top * 10.0f) / 10.0f);
  balance.reference = 1.0f / E;
  balance.referenceLabel = "uniform 1/E";
  balance.categoryLabel = "expert";
  const int hoveredBalance = drawColumnChart(balance, ImVec2(area.x, chartHeight));
  if (hovered < 0) hovered = hoveredBalance;
  const double alpha = s.moeRouting ? s.moeRouting->auxLossAlpha : 0.0;
  ImGui::Text("aux loss = alpha E sum_i f_i P_i = %.5f", r.auxLoss);
  ImGui::SameLine();
  ImGui::TextDisabled("(alpha = %g; perfectly balanced routing gives alpha; Fedus et al. 2021)", alpha);
  // The lecture's other load-balancing loss (appendix A7), on the same routing.
  const double cvFraction = cvSquared(r.fraction), cvProb = cvSquared(r.meanProb);
  ImGui::Text("the CV^2 loss: alpha CV(f_1..f_E)^2 = %.5f;  over the importance: alpha CV(P_1..P_E)^2 = %.5f", alpha * cvFraction, alpha * cvProb);
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "CV = standard deviation / mean over the E experts: 0 when balanced, E - 1 = %d when one expert takes everything.\n"
        "On the fractions f_i, as the slide writes it, the loss has no gradient (f_i are counts); Shazeer et al. 2017 take it over\n"
        "each expert's importance, its summed gate values (here the router probabilities), whose CV is that of P_i.",
        E - 1);
  facts["moe_cv2_fraction"] = cvFraction;
  facts["moe_cv2_importance"] = cvProb;
  facts["moe_aux_loss"] = r.auxLoss;
  facts["moe_fraction"] = r.fraction;
  if (hovered >= 0) {
    ImGui::BeginTooltip();
    ImGui::Text("expert %d: %d kept, %d dropped", hovered, static_cast<int>(kept[hovered]), static_cast<int>(dropped[hovered]));
    ImGui::Text("f_i = %.4f, P_i = %.4f (uniform: %.4f)", r.fraction[hovered], r.meanProb[hovered], 1.0 / E);
    ImGui::EndTooltip();
  }
}

}  // namespace

void MoePanel::draw(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  if (!c.isMoe()) {
    ImGui::TextDisabled("This model has no mixture-of-experts layers.");
    return;
  }
  drawKnobs(ctx);
  const Snapshot* s = ctx.snapshot;
  const int layer = std::clamp(ctx.state.layer, 0, c.n_layer - 1);
  if (!s || s->trace.moe.size() <= static_cast<size_t>(layer) || s->trace.moe[layer].tokens == 0) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
    return;
  }
  const MoeRouting& r = s->trace.moe[layer];
  MoeView& v = view_;
  sameLineIfFits(ImGui::CalcTextSize("router probabilities").x + ImGui::GetFontSize() * 2);
  ImGui::Checkbox("router probabilities", &v.showProbs);
  drawRouterByHand(ctx, byHand_);
  drawSummary(*s, r);
  if (v.builtFor != s->id || v.layer != layer || v.builtProbs != v.showProbs) {
    const auto m = gateMatrix(r, v.showProbs);
    v.gatesMax = std::max(1e-6f, *std::max_element(m.begin(), m.end()));  // expert-choice gates sit near 1/E
    v.gates.setData(ctx.renderer, m.data(), r.tokens, r.experts, 0.0f, v.gatesMax, Colormap::Perceptual);
    v.tokenLabels.clear();
    for (int t = 0; t < r.tokens && t < static_cast<int>(s->tokenText.size()); ++t) v.tokenLabels.push_back(tokenLabel(s->tokenText[t], 10));
    v.expertLabels.clear();
    for (int e = 0; e < r.experts; ++e) v.expertLabels.push_back(std::to_string(e));
    v.builtFor = s->id;
    v.layer = layer;
    v.builtProbs = v.showProbs;
  }
  ctx.shared.exportable = {std::string(v.showProbs ? "moe_router_probs_l" : "moe_gates_l") + std::to_string(layer), gateMatrix(r, v.showProbs),
                           r.tokens, r.experts};
  // Gates and charts side by side when the window is wide for its text size, else stacked.
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float fontSize = ImGui::GetFontSize();
  const bool sideBySide = avail.x > fontSize * 60;
  const float gatesWidth = std::min(sideBySide ? avail.x * 0.45f : avail.x, fontSize * 9 + r.experts * ImGui::GetTextLineHeight() * 3.5f);
  ImGui::BeginGroup();
  drawGates(ctx, *s, r, v, ImVec2(gatesWidth, avail.y));
  ImGui::EndGroup();
  if (sideBySide) ImGui::SameLine(0, fontSize * 2);
  ImGui::BeginGroup();
  drawBalance(*s, r, ImVec2(ImGui::GetContentRegionAvail().x, sideBySide ? avail.y : std::max(avail.y, fontSize * 24)), ctx.shared.facts);
  ImGui::EndGroup();
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeMoePanel() { return std::make_unique<MoePanel>(); }

}  // namespace tscope::gui

// The Inside panel's side column (panel_inside.h): the interventions grid (a toggle per head and
// per MLP, the kind, the patch source, Clear all), the next token before and after them, and the
// direct logit attribution of every head and MLP toward a chosen token at the query.
#include <imgui.h>

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/panel_inside.h"
#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/layout.h"

namespace tscope::gui {

namespace {

// A cell's background from blue (negative) through the window to red (positive), |v| / bound.
ImU32 divergingColor(float v, float bound) {
  const float t = std::clamp(std::abs(v) / std::max(bound, 1e-9f), 0.0f, 1.0f);
  return v < 0 ? IM_COL32(60, 110, 230, (int)(230 * t)) : IM_COL32(230, 70, 60, (int)(230 * t));
}

}  // namespace

void InsidePanel::drawInterventions(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const char* kinds[] = {"zero", "mean", "patch"};
  int kind = static_cast<int>(st.ablationKind);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  if (ImGui::Combo("kind for new toggles", &kind, kinds, 3)) st.ablationKind = static_cast<AblationKind>(kind);
  recordItem(ctx.shared, "ablation_kind");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("zero: replace the output by zeros; mean: by its mean over the prompt; patch: by its value on the source prompt");
  sameLineIfFits("Clear all");
  ImGui::BeginDisabled(st.interventions.empty());
  if (ImGui::Button("Clear all")) {
    st.interventions.clear();
    ctx.repost = true;
  }
  ImGui::EndDisabled();
  recordItem(ctx.shared, "ablate_clear");
  if (st.ablationKind == AblationKind::Patch ||
      std::any_of(st.interventions.begin(), st.interventions.end(), [](const InterventionSpec& s) { return s.kind == AblationKind::Patch; })) {
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 7);
    if (ImGui::InputText("source prompt", &st.patchSource, ImGuiInputTextFlags_EnterReturnsTrue)) ctx.repost = true;
    if (ImGui::IsItemDeactivatedAfterEdit()) ctx.repost = true;
    recordItem(ctx.shared, "patch_source");
  }
  // One toggle per (layer, head) and per layer's MLP: the cell's letter is the kind it applies.
  const int columns = c.n_head + (c.hasFeedForward() ? 1 : 0) + 1;
  if (ImGui::BeginTable(
          "ablate", columns, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX,
          ImVec2(0, std::min(ImGui::GetFrameHeightWithSpacing() * ((c.isEncoderDecoder() ? 2 : 1) * c.n_layer + 1.5f), ImGui::GetFontSize() * 16)))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableNextColumn();
    for (int h = 0; h < c.n_head; ++h) {
      ImGui::TableNextColumn();
      ImGui::Text("h%d", h);
    }
    if (c.hasFeedForward()) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted("mlp");
    }
    // One row of toggles: layer l's self-attention heads and MLP, or (cross) its cross-attention
    // heads (encoder-decoder models: a row "L x" under each layer's, no MLP cell).
    auto toggleRow = [&](int l, bool cross) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(("L" + std::to_string(l) + (cross ? " x" : "")).c_str());
      if (cross && ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d's cross-attention heads (they read the encoder's output)", l);
      for (int h = 0; h < columns - 1; ++h) {
        ImGui::TableNextColumn();
        if (cross && h >= c.n_head) continue;
        InterventionSpec spec{l, h < c.n_head ? h : -1, st.ablationKind};
        spec.cross = cross;
        auto it = std::find_if(st.interventions.begin(), st.interventions.end(),
                               [&](const InterventionSpec& s) { return s.layer == spec.layer && s.head == spec.head && s.cross == spec.cross; });
        const bool active = it != st.interventions.end();
        bool on = active;
        ImGui::PushID(l * 1000 + h + (cross ? 500 : 0));
        if (active) ImGui::PushStyleColor(ImGuiCol_CheckMark, kInterventionColor);
        if (ImGui::Checkbox("##on", &on)) {
          if (on) st.interventions.push_back(spec);
          else st.interventions.erase(it);
          ctx.repost = true;
        }
        if (active) ImGui::PopStyleColor();
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("%s layer %d %s", active ? "clear the intervention on" : (std::string(ablationKindName(spec.kind)) + "-ablate").c_str(),
                            l, spec.isMlp() ? "MLP" : ((cross ? "cross-attention head " : "head ") + std::to_string(h)).c_str());
        ImGui::PopID();
        recordItem(ctx.shared, "ablate_" + std::to_string(l) + "_" + (spec.isMlp() ? std::string("mlp") : (cross ? "x" : "") + std::to_string(h)));
      }
    };
    for (int l = 0; l < c.n_layer; ++l) {
      toggleRow(l, false);
      if (c.isEncoderDecoder()) toggleRow(l, true);
    }
    ImGui::EndTable();
  }
  drawBeforeAfter(ctx);
}

void InsidePanel::drawBeforeAfter(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s) return;
  const int V = ctx.session.config().vocab_size;
  // An image model's class is [CLS]'s row (the first); a text model's next token is the last row's.
  const bool image = ctx.session.config().isImage() && s->trace.logits.size() >= (size_t)V;
  const auto after = topNextTokens(image ? std::span<const float>(s->trace.logits).first(V) : lastRow(s->trace.logits, V), 5);
  nlohmann::json& facts = ctx.shared.facts["inside"];
  if (!after.empty()) facts["next_token"] = after.front().id;
  if (ctx.state.interventions.empty() || s->cleanLogits.empty()) {
    if (!after.empty())
      ImGui::Text(image ? "class at [CLS]: %s (%.3f)" : "next token: %s (%.3f)", tokenText(ctx.session, after.front().id), after.front().probability);
    return;
  }
  const auto before = topNextTokens(s->cleanLogits, 5);
  if (!before.empty()) facts["next_token_clean"] = before.front().id;
  ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
  ImGui::Text("%zu interventions active: the next token before and after", ctx.state.interventions.size());
  ImGui::PopStyleColor();
  if (ImGui::BeginTable("before_after", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableSetupColumn("clean model");
    ImGui::TableSetupColumn("with interventions");
    ImGui::TableHeadersRow();
    const float width = ImGui::GetContentRegionAvail().x / 2 - ImGui::GetFontSize();
    BarTable figure{"next_token_before_after",
                    "The next token without and with the interventions",
                    {},
                    {{"clean model", 1.0f, {}}, {"with interventions", 1.0f, {}}}};
    for (size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
      figure.rowLabels.push_back(std::to_string(i + 1) + ".");
      for (const auto* list : {&before, &after}) {
        ImGui::TableNextColumn();
        BarTable::Column& column = figure.columns[list == &after ? 1 : 0];
        if (i >= list->size()) {
          column.bars.push_back({0, "", barColor(BarStyle::Normal)});
          continue;
        }
        char label[64];
        std::snprintf(label, sizeof label, "%s %.3f", tokenText(ctx.session, (*list)[i].id), (*list)[i].probability);
        const BarStyle style = list == &after ? BarStyle::Highlighted : BarStyle::Normal;
        drawBar((*list)[i].probability, 1.0f, width, style, label);
        column.bars.push_back({(*list)[i].probability, label, barColor(style)});
      }
    }
    ImGui::EndTable();
    addBarTableFigure(std::move(figure));
  }
  ctx.shared.regions["before_after"] = {ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y, ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y};
}

void InsidePanel::drawAttribution(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s || key_.query < 0) return;
  const Trace& trace = s->trace;
  const int V = ctx.session.config().vocab_size;
  // The candidates: the logits at the query when the trace holds that row, else the last row.
  const int rows = V > 0 ? (int)(trace.logits.size() / V) : 0;
  const int row = rows == trace.T ? key_.query : rows - 1;
  if (!(attributionKey_ == key_)) {
    const bool held = row >= 0 && (size_t)(row + 1) * V <= trace.logits.size();
    attributionChoices_ = held ? topNextTokens(std::span<const float>(trace.logits).subspan((size_t)row * V, V), 5) : std::vector<TokenProbability>{};
    attributionFor_ = -2;
    attributionKey_ = key_;
  }
  if (rows != trace.T && key_.query != trace.T - 1) ImGui::TextDisabled("(the candidates are the last position's next tokens)");
  int token = attributionToken_ >= 0 ? attributionToken_ : (attributionChoices_.empty() ? 0 : attributionChoices_.front().id);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  if (ImGui::BeginCombo("toward token", tokenText(ctx.session, token))) {
    for (const TokenProbability& choice : attributionChoices_) {
      char label[64];
      std::snprintf(label, sizeof label, "%s (%.3f)", tokenText(ctx.session, choice.id), choice.probability);
      if (ImGui::Selectable(label, choice.id == token)) attributionToken_ = token = choice.id;
    }
    ImGui::EndCombo();
  }
  recordItem(ctx.shared, "attribution_token");
  if (attributionFor_ != token) {
    attributionFor_ = token;
    attribution_.reset();
    attributionError_.clear();
    try {
      attribution_ = directLogitAttribution(trace, ctx.session.weights(), key_.query, token);
    } catch (const std::exception& e) {
      attributionError_ = e.what();
    }
  }
  if (!attribution_) {
    ImGui::TextWrapped("%s", attributionError_.c_str());
    return;
  }
  const LogitAttribution& a = *attribution_;
  const int L = (int)a.attnBias.size(), H = L > 0 ? (int)a.heads.size() / L : 0;
  float bound = std::abs(a.embedding);
  for (float v : a.heads) bound = std::max(bound, std::abs(v));
  for (float v : a.mlp) bound = std::max(bound, std::abs(v));
  for (float v : a.crossHeads) bound = std::max(bound, std::abs(v));
  const bool cross = !a.crossBias.empty();  // encoder-decoder: a cross-attention row under each layer's
  ImGui::Text("logit %.4f = sum of the parts %.4f", a.logit, a.sum());
  ctx.shared.facts["inside"]["dla_sum"] = a.sum();
  ctx.shared.facts["inside"]["dla_cross_parts"] = a.crossHeads.size() + a.crossBias.size();
  ctx.shared.facts["inside"]["dla_logit"] = a.logit;
  ctx.shared.facts["inside"]["dla_token"] = token;
  const bool mlp = ctx.session.config().hasFeedForward();  // attention-only models: no MLP column
  const int tableRows = cross ? 2 * L : L;
  if (ImGui::BeginTable("dla", H + (mlp ? 3 : 2), ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX | ImGuiTableFlags_BordersInnerV,
                        ImVec2(0, std::min(ImGui::GetTextLineHeightWithSpacing() * (tableRows + 1.6f), ImGui::GetFontSize() * 14)))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("");
    for (int h = 0; h < H; ++h) ImGui::TableSetupColumn(("h" + std::to_string(h)).c_str());
    if (mlp) ImGui::TableSetupColumn("mlp");
    ImGui::TableSetupColumn("b_O");
    ImGui::TableHeadersRow();
    for (int l = 0; l < L; ++l) {
      ImGui::TableNextColumn();
      ImGui::Text("L%d", l);
      auto cellValue = [&](float v, const char* what) {
        ImGui::TableNextColumn();
        ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, divergingColor(v, bound));
        ImGui::Text("%+.2f", v);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d %s adds %.7g to the logit", l, what, v);
      };
      for (int h = 0; h < H; ++h) cellValue(a.heads[(size_t)l * H + h], ("head " + std::to_string(h)).c_str());
      if (mlp) cellValue(a.mlp[l], "MLP");
      cellValue(a.attnBias[l], "attention bias b_O");
      if (!cross) continue;
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(("L" + std::to_string(l) + " x").c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d's cross-attention: its heads read the encoder's output", l);
      for (int h = 0; h < H; ++h) cellValue(a.crossHeads[(size_t)l * H + h], ("cross-attention head " + std::to_string(h)).c_str());
      if (mlp) ImGui::TableNextColumn();
      cellValue(a.crossBias[l], "cross-attention bias b_O");
    }
    ImGui::EndTable();
  }
  if (a.outputBias != 0) ImGui::Text("embedding %+.3f, final norm bias %+.3f, classifier bias %+.3f", a.embedding, a.normBias, a.outputBias);
  else ImGui::Text("embedding %+.3f, final norm bias %+.3f", a.embedding, a.normBias);
}

}  // namespace tscope::gui

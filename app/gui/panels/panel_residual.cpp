// Residual & logit lens panel: for each block and position, the token the model would predict if
// it stopped there (the logit lens: softmax(unembed(final norm(residual)))), as a table coloured by
// the top token's probability with the top-K on hover; and the residual stream's L2 norm after the
// embedding and after each block as a heatmap. The selected token's column is outlined in both.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "app/gui/widgets/bar_chart.h"
#include "app/gui/panels/panel_residual.h"

#include <memory>
#include "model/nn/trace_views.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kSelectedColor = IM_COL32(240, 140, 40, 255);

// Colour position of a probability on a log scale from uniform guessing (1/V) to certainty (1).
float certainty(float prob, int V) {
  if (!(prob > 0) || V < 2) return 0;
  return std::clamp(std::log(prob * V) / std::log((float)V), 0.0f, 1.0f);
}

std::string percent(float prob) {
  char buffer[32];
  const float p = prob * 100;
  std::snprintf(buffer, sizeof buffer, p >= 10 ? "%.0f%%" : p >= 0.1f ? "%.1f%%" : "%.2g%%", p);
  return buffer;
}

std::string tokenAt(const PanelContext& ctx, int id) {
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  return tokenizer ? tokenizer->tokenText(id) : std::to_string(id);
}

void drawLensTooltip(const PanelContext& ctx, const Snapshot& s, int lensRow, int column) {
  const Trace& trace = s.trace;
  const int P = (int)trace.lensPositions.size(), K = trace.lensK, position = trace.lensPositions[column];
  const size_t at = ((size_t)lensRow * P + column) * K;
  const int layer = lensRow;  // the lens covers every layer
  ImGui::BeginTooltip();
  ImGui::Text("after block %d%s, position %d %s", layer, layer + 1 == trace.L ? " (the model's output)" : "", position,
              tokenLabel(s.tokenText[position], 24).c_str());
  const int next = position + 1 < (int)s.ids.size() ? s.ids[position + 1] : -1;
  if (ImGui::BeginTable("top k", 3)) {
    for (int k = 0; k < K; ++k) {
      const int id = trace.lensIds[at + k];
      ImGui::TableNextColumn();
      ImGui::Text("%d. %s", k + 1, tokenLabel(tokenAt(ctx, id), 16).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(percent(trace.lensProbs[at + k]).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(id == next ? "the prompt's next token" : "");
    }
    ImGui::EndTable();
  }
  if (next >= 0) ImGui::TextDisabled("the prompt continues with %s", tokenLabel(tokenAt(ctx, next), 24).c_str());
  ImGui::TextDisabled("click to select this token");
  ImGui::EndTooltip();
}

// One cell: the top-1 token and its probability on a background coloured by that probability.
void drawLensCell(PanelContext& ctx, ResidualView& view, const Snapshot& s, int lensRow, int column, bool selected) {
  const Trace& trace = s.trace;
  const size_t at = ((size_t)lensRow * trace.lensPositions.size() + column) * trace.lensK;
  const float prob = trace.lensProbs[at];
  const ImU32 background = perceptualColor(certainty(prob, trace.V));
  ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, background);
  const ImVec2 start = ImGui::GetCursorScreenPos();
  ImGui::PushStyleColor(ImGuiCol_Text, textColorOn(background));
  ImGui::TextUnformatted(tokenLabel(tokenAt(ctx, trace.lensIds[at]), 9).c_str());
  ImGui::TextUnformatted(percent(prob).c_str());
  ImGui::PopStyleColor();
  const ImVec2 end(start.x + ImGui::GetContentRegionAvail().x, ImGui::GetCursorScreenPos().y - ImGui::GetStyle().ItemSpacing.y);
  ImGui::SetCursorScreenPos(start);
  ImGui::PushID(lensRow * 100000 + column);
  ImGui::InvisibleButton("cell", ImVec2(std::max(1.0f, end.x - start.x), std::max(1.0f, end.y - start.y)));
  ImGui::PopID();
  if (ImGui::IsItemHovered()) drawLensTooltip(ctx, s, lensRow, column);
  if (ImGui::IsItemClicked()) ctx.state.token = trace.lensPositions[column];
  if (!selected) return;
  ImGui::GetWindowDrawList()->AddRect(start, end, kSelectedColor, 0, 0, 2.0f);
  // Bring a newly selected token's column into view (once, so the user can still scroll away).
  if (lensRow == 0 && view.scrolledTo != trace.lensPositions[column]) {
    ImGui::SetScrollHereX(0.5f);
    view.scrolledTo = trace.lensPositions[column];
  }
}

void drawLensTable(PanelContext& ctx, ResidualView& view, const Snapshot& s, int selectedPosition, float maxHeight) {
  const Trace& trace = s.trace;
  const int P = (int)trace.lensPositions.size(), Lc = trace.L;  // the lens covers every layer
  // ImGui tables hold at most 64 columns: a long prompt shows a window of positions around the
  // selected one (lens columns first .. first + count - 1), with a note saying so.
  constexpr int kMaxColumns = 63;
  int selectedColumn = P - 1;
  for (int c = 0; c < P; ++c)
    if (trace.lensPositions[c] == selectedPosition) selectedColumn = c;
  const int count = std::min(P, kMaxColumns);
  const int first = std::clamp(selectedColumn - count / 2, 0, P - count);
  if (count < P)
    ImGui::TextDisabled("positions %d to %d of %d around the selected token (select another token to move the window)", trace.lensPositions[first],
                        trace.lensPositions[first + count - 1], trace.T);
  const float font = ImGui::GetFontSize();
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInner | ImGuiTableFlags_SizingFixedFit;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float rowHeight = 2 * ImGui::GetTextLineHeightWithSpacing() + 2 * style.CellPadding.y;
  const float textRow = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  const float tableWidth = font * (6.5f + 5.5f * count) + (count + 1) * 2 * style.CellPadding.x;
  const float scrollbar = tableWidth > ImGui::GetContentRegionAvail().x ? style.ScrollbarSize : 0.0f;
  const float height = std::min(maxHeight, rowHeight * Lc + 2 * textRow + scrollbar + 4);
  if (!ImGui::BeginTable("logit lens", count + 1, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, font * 6.5f);
  for (int c = first; c < first + count; ++c) ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, font * 5.5f);
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  ImGui::TableSetColumnIndex(0);
  ImGui::TableHeader("input token");
  for (int c = first; c < first + count; ++c) {
    const int position = trace.lensPositions[c];
    ImGui::TableSetColumnIndex(c - first + 1);
    if (position == selectedPosition) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, IM_COL32(240, 140, 40, 110));
    const std::string label = tokenLabel(s.tokenText[position], 7) + "##" + std::to_string(position);
    ImGui::TableHeader(label.c_str());
    if (ImGui::IsItemClicked()) ctx.state.token = position;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("position %d: %s", position, tokenLabel(s.tokenText[position], 40).c_str());
  }
  for (int row = 0; row < Lc; ++row) {
    ImGui::TableNextRow(0, rowHeight);
    ImGui::TableSetColumnIndex(0);
    const int layer = row;
    ImGui::Text("block %d", layer);
    if (layer + 1 == trace.L) ImGui::TextDisabled("= output");
    for (int c = first; c < first + count; ++c) {
      ImGui::TableSetColumnIndex(c - first + 1);
      drawLensCell(ctx, view, s, row, c, trace.lensPositions[c] == selectedPosition);
    }
  }
  ImGui::TableNextRow();
  ImGui::TableSetColumnIndex(0);
  ImGui::TextDisabled("next in prompt");
  for (int c = first; c < first + count; ++c) {
    ImGui::TableSetColumnIndex(c - first + 1);
    const int position = trace.lensPositions[c];
    if (position + 1 < (int)s.ids.size()) ImGui::TextDisabled("%s", tokenLabel(s.tokenText[position + 1], 9).c_str());
    else ImGui::TextDisabled("(to come)");
  }
  ImGui::EndTable();
}

void drawNormHeatmap(PanelContext& ctx, ResidualView& view, const Snapshot& s, int selectedPosition) {
  const Trace& trace = s.trace;
  const int rows = trace.L + 1, T = trace.T;
  if (view.builtFor != s.id) {
    std::tie(view.lo, view.hi) = finiteRange(trace.residNorm);
    view.norms.setData(ctx.renderer, trace.residNorm.data(), rows, T, view.lo, view.hi, Colormap::Perceptual);
    view.rowLabels.clear();
    for (int r = 0; r < rows; ++r) view.rowLabels.push_back(r == 0 ? "embedding" : "block " + std::to_string(r - 1));
    view.colLabels.clear();
    for (int t = 0; t < T; ++t) view.colLabels.push_back(tokenLabel(s.tokenText[t], 24));
    view.builtFor = s.id;
  }
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "%.3g", view.lo);
  std::snprintf(hi, sizeof hi, "%.3g", view.hi);
  ImGui::TextWrapped("Residual stream: its length ||x|| (L2 norm) after the embedding and after each block");
  const ImVec2 rampSize(ImGui::GetFontSize() * 8, ImGui::GetTextLineHeight() * 0.7f);
  sameLineIfFits(colorRampWidth(rampSize, lo, hi));
  drawColorRamp(rampSize, lo, hi);
  const float font = ImGui::GetFontSize(), lineHeight = ImGui::GetTextLineHeight();
  const float labelWidth = font * 6.5f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float width = std::max(font * 4, avail.x - labelWidth);
  const float rowHeight = std::clamp((avail.y - lineHeight * 2) / rows, lineHeight * 1.1f, lineHeight * 4.0f);
  ctx.shared.exportable = {"residual_norm", trace.residNorm, rows, T};
  // Token labels under the columns, as many as fit (shortened to their slot); the selected token's
  // always, in its colour, its column outlined.
  TokenHeatmapStyle style{.rowLabels = &view.rowLabels,
                          .labelWidth = labelWidth,
                          .colLabels = &view.colLabels,
                          .colLabelSlot = font * 4.5f,
                          .selectedCol = selectedPosition,
                          .selectedColor = kSelectedColor,
                          .shared = &ctx.shared,
                          .region = "residual_norm_heatmap"};
  style.readout = [&](int row, int col) {
    char norm[48];
    std::snprintf(norm, sizeof norm, "||x|| = %.4f", view.norms.value(row, col));
    return (row == 0 ? std::string("after the embedding") : "after block " + std::to_string(row - 1)) + ", position " + std::to_string(col) + " " +
           view.colLabels[col] + "\n" + norm + "\nclick to select this token";
  };
  const TokenHeatmapHit hit = view.norms.draw(ctx.renderer, ImVec2(width / T, rowHeight), style);
  if (hit.clicked) ctx.state.token = hit.col;
}

}  // namespace

void ResidualPanel::draw(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s || s->trace.T == 0) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
    return;
  }
  const Trace& trace = s->trace;
  const int selectedPosition = ctx.state.token >= 0 && ctx.state.token < trace.T ? ctx.state.token : trace.T - 1;
  ImGui::TextWrapped("Logit lens: the next token the model would predict if it stopped after each block");
  char hint[160];
  std::snprintf(hint, sizeof hint, "(softmax of the unembedding of the normalised residual; hover a cell for the top %d, click to select)",
                trace.lensK);
  sameLineIfFits(ImGui::CalcTextSize(hint).x);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", hint);
  ImGui::TextWrapped("cell colour: the top token's probability, log scale from uniform guessing to certain");
  ImGui::PopStyleColor();
  const ImVec2 rampSize(ImGui::GetFontSize() * 8, ImGui::GetTextLineHeight() * 0.7f);
  const std::string uniform = "1/" + std::to_string(trace.V);
  sameLineIfFits(colorRampWidth(rampSize, uniform.c_str(), "1"));
  drawColorRamp(rampSize, uniform.c_str(), "1");
  if (trace.truncated) ImGui::TextColored(ImVec4(0.95f, 0.6f, 0.2f, 1.0f), "%s", trace.note.c_str());
  if (trace.lensK == 0 || trace.lensIds.empty()) {
    ImGui::TextDisabled("this trace has no logit lens");
  } else {
    if ((int)trace.lensPositions.size() < trace.T)
      ImGui::TextColored(ImVec4(0.95f, 0.6f, 0.2f, 1.0f),
                         "Large vocabulary (V = %d) and a long prompt: the lens is captured only at the last position (%d), to keep the "
                         "forward fast. Shorten the prompt to see every position.",
                         trace.V, trace.T - 1);
    // About half the height, but room for a few rows at large font scales (the panel scrolls).
    drawLensTable(ctx, view_, *s, selectedPosition, std::max(ImGui::GetContentRegionAvail().y * 0.55f, ImGui::GetFontSize() * 14));
  }
  ImGui::Spacing();
  if (trace.residNorm.size() == (size_t)(trace.L + 1) * trace.T) drawNormHeatmap(ctx, view_, *s, selectedPosition);
  else ImGui::TextDisabled("this trace has no residual norms");
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeResidualPanel() { return std::make_unique<ResidualPanel>(); }

}  // namespace tscope::gui

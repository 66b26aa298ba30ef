// The prompt strip (always on top: the editable prompt and the token strip, hover a token for
// its id and bytes) and the Prompt panel: every token in a table and, for a chosen word, GPT-2's
// BPE merges applied one by one.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

#include "model/tokenizer.h"
#include "layout.h"
#include "panels.h"

namespace tscope::gui {

namespace {

std::string hexBytes(const std::string& bytes) {
  std::string out;
  char buffer[4];
  for (unsigned char b : bytes) {
    std::snprintf(buffer, sizeof buffer, "%02X", b);
    out += (out.empty() ? "" : " ") + std::string(buffer);
  }
  return out;
}

}  // namespace

void drawPromptStrip(PanelContext& ctx) {
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputTextMultiline("##prompt", &ctx.state.prompt, ImVec2(-1, ImGui::GetTextLineHeight() * 2.6f))) ctx.repost = true;
  const Snapshot* s = ctx.snapshot;
  if (!s) {
    ImGui::TextDisabled("computing...");
    return;
  }
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  // The token strip wraps, and scrolls after three rows so long prompts keep the panels in view.
  const float rowHeight = ImGui::GetFrameHeightWithSpacing();
  const float contentHeight = ctx.views.tokenStripHeight > 0 ? ctx.views.tokenStripHeight : rowHeight;
  ImGui::BeginChild("token strip", ImVec2(0, std::min(rowHeight * 3.0f, contentHeight)), false);
  ImGui::TextDisabled("%zu tokens", s->ids.size());
  for (size_t i = 0; i < s->ids.size(); ++i) {
    std::string label = s->tokenText[i];
    for (char& ch : label)
      if (ch == '\n') ch = ' ';
    if (label.empty()) label = " ";
    sameLineIfFits(label.c_str());
    ImGui::PushID(static_cast<int>(i));
    const bool selected = ctx.state.token == static_cast<int>(i) || (ctx.state.token < 0 && i + 1 == s->ids.size());
    if (selected) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (ImGui::SmallButton(label.c_str())) ctx.state.token = static_cast<int>(i);
    if (selected) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered() && tokenizer) {
      ImGui::BeginTooltip();
      ImGui::Text("position %zu, id %d", i, s->ids[i]);
      ImGui::Text("bytes: %s", hexBytes(tokenizer->tokenBytes(s->ids[i])).c_str());
      ImGui::EndTooltip();
    }
    ImGui::PopID();
  }
  ctx.views.tokenStripHeight = ImGui::GetCursorPosY() + ImGui::GetStyle().ItemSpacing.y;  // sizes next frame's strip
  ImGui::EndChild();
}

void drawPromptPanel(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  if (!s || !tokenizer) {
    ImGui::TextDisabled(s ? "this model has no tokenizer" : "computing...");
    return;
  }
  ImGui::BeginChild("tokens", ImVec2(ImGui::GetContentRegionAvail().x * 0.45f, 0), true);
  if (ImGui::BeginTable("token table", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY)) {
    ImGui::TableSetupColumn("pos");
    ImGui::TableSetupColumn("token");
    ImGui::TableSetupColumn("id");
    ImGui::TableSetupColumn("bytes");
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < s->ids.size(); ++i) {
      ImGui::TableNextColumn();
      ImGui::Text("%zu", i);
      ImGui::TableNextColumn();
      if (ImGui::Selectable(("'" + s->tokenText[i] + "'##" + std::to_string(i)).c_str(), ctx.state.token == (int)i,
                            ImGuiSelectableFlags_SpanAllColumns))
        ctx.state.token = static_cast<int>(i);
      ImGui::TableNextColumn();
      ImGui::Text("%d", s->ids[i]);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(hexBytes(tokenizer->tokenBytes(s->ids[i])).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("merges", ImVec2(0, 0), true);
  if (tokenizer->kind() != "gpt2-bpe") {
    ImGui::TextWrapped("This model uses a character-level tokenizer: every character is one token, no merges.");
    ImGui::EndChild();
    return;
  }
  // The word containing the selected token: the pre-tokenizer's piece at that spot.
  const std::vector<std::string> words = gpt2PreTokenize(ctx.state.prompt);
  const int position = ctx.state.token >= 0 ? ctx.state.token : (int)s->ids.size() - 1;
  size_t byteOffset = 0;
  for (int i = 0; i < position && i < (int)s->ids.size(); ++i) byteOffset += tokenizer->tokenBytes(s->ids[i]).size();
  std::string word;
  size_t seen = 0;
  for (const auto& w : words) {
    if (byteOffset < seen + w.size()) {
      word = w;
      break;
    }
    seen += w.size();
  }
  ImGui::Text("BPE merges for the word '%s'", word.c_str());
  ImGui::TextDisabled("start from single bytes; each step merges the adjacent pair with the lowest rank in merges.txt");
  if (!word.empty()) {
    const auto steps = bpeMergeSteps(*tokenizer, word);
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& step = steps[i];
      std::string pieces;
      for (const auto& piece : step.pieces) pieces += "[" + piece + "] ";
      if (step.rank < 0) ImGui::Text("start:  %s", pieces.c_str());
      else ImGui::Text("%2zu. merge '%s' + '%s' (rank %d):  %s", i, step.left.c_str(), step.right.c_str(), step.rank, pieces.c_str());
    }
  }
  ImGui::EndChild();
}

}  // namespace tscope::gui

// TokenStrip (always on top: the editable prompt and the token strip, hover a token for its id
// and bytes) and PromptPanel: every token in a table and, for a chosen word, GPT-2's
// BPE merges applied one by one.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

#include <memory>
#include <string_view>

#include "app/gui/panels/panel_prompt.h"
#include "app/gui/widgets/layout.h"
#include "model/tokenize/tokenizer.h"

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

// One token as a small framed chip. Drawn by hand rather than as an ImGui button, whose label
// would treat "##" inside a token as an ID marker; returns true when clicked.
bool tokenChip(const std::string& text, bool selected, bool dropped) {
  std::string label = text.empty() ? " " : text;
  for (char& ch : label)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  const ImVec2 padding(ImGui::GetStyle().FramePadding.x, 0);
  const ImVec2 textSize = ImGui::CalcTextSize(label.c_str(), nullptr, false);
  const ImVec2 size(textSize.x + padding.x * 2, ImGui::GetTextLineHeight());
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const bool clicked = ImGui::InvisibleButton("chip", size) && !dropped;
  const bool hovered = ImGui::IsItemHovered();
  ImGuiCol fill = selected ? ImGuiCol_ButtonActive : hovered && !dropped ? ImGuiCol_ButtonHovered : ImGuiCol_Button;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float alpha = dropped ? 0.35f : 1.0f;
  draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), ImGui::GetColorU32(fill, alpha), ImGui::GetStyle().FrameRounding);
  draw->AddText(ImVec2(at.x + padding.x, at.y), ImGui::GetColorU32(dropped ? ImGuiCol_TextDisabled : ImGuiCol_Text), label.c_str(),
                label.c_str() + label.size());
  return clicked;
}

void tokenTooltip(const Tokenizer* tokenizer, int id, const char* where) {
  if (!ImGui::IsItemHovered() || !tokenizer) return;
  ImGui::BeginTooltip();
  ImGui::Text("%s, id %d", where, id);
  ImGui::Text("bytes: %s", hexBytes(tokenizer->tokenBytes(id)).c_str());
  ImGui::EndTooltip();
}

}  // namespace

void TokenStrip::draw(PanelContext& ctx) {
  const ModelConfig& config = ctx.session.config();
  if (config.isImage()) {  // no text to type: the tokens are the picture's patches (the Vision tab draws and opens pictures)
    ImGui::BeginChild("##prompt", ImVec2(-1, ImGui::GetTextLineHeight() * 2.6f), true);
    ImGui::TextWrapped(
        "An image model reads no text: its %d tokens are [CLS] and the %d patches of %d x %d pixels cut from the picture. Draw "
        "or open one in the Vision tab.",
        config.n_positions, config.numPatches(), config.patch_size, config.patch_size);
    ImGui::EndChild();
  } else {
    ImGui::SetNextItemWidth(-1);
    if (ImGui::InputTextMultiline("##prompt", &ctx.state.prompt, ImVec2(-1, ImGui::GetTextLineHeight() * 2.6f))) ctx.repost = true;
  }
  recordItem(ctx.shared, "prompt");
  const Snapshot* s = ctx.snapshot;
  if (!s) {
    ImGui::TextDisabled("computing...");
    return;
  }
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  const int context = ctx.session.config().n_positions;
  // The token strip wraps, and scrolls after three rows so long prompts keep the panels in view.
  const float rowHeight = ImGui::GetFrameHeightWithSpacing();
  const float contentHeight = contentHeight_ > 0 ? contentHeight_ : rowHeight;
  ImGui::BeginChild("token strip", ImVec2(0, std::min(rowHeight * 3.0f, contentHeight)), false);
  const size_t dropped = s->droppedIds.size();
  if (dropped > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.6f, 0.1f, 1.0f));
    ImGui::Text("%zu earlier tokens dropped (greyed): the model's context holds %d tokens, so every panel shows the last %d", dropped, context,
                context);
    ImGui::PopStyleColor();
    recordItem(ctx.shared, "dropped_note");
  }
  if (ctx.session.config().isEncoderDecoder())  // the box holds the target; the source is the Translation tab's
    ImGui::TextDisabled("%zu / %d target tokens (the decoder's input; the source is in the Translation tab)", s->ids.size(), context);
  else if (config.isImage()) ImGui::TextDisabled("%zu patch tokens:", s->ids.size());
  else ImGui::TextDisabled("%zu / %d tokens", s->ids.size(), context);
  // The last few dropped tokens, greyed and not selectable, before the kept ones.
  const size_t droppedShown = s->droppedText.size();
  if (dropped > droppedShown) {
    sameLineIfFits("...");
    ImGui::TextDisabled("...");
  }
  for (size_t i = 0; i < droppedShown; ++i) {
    const size_t position = dropped - droppedShown + i;
    sameLineIfFits(s->droppedText[i].c_str());
    ImGui::PushID(-1 - static_cast<int>(i));
    tokenChip(s->droppedText[i], false, true);
    tokenTooltip(tokenizer, s->droppedIds[position], ("dropped token " + std::to_string(position)).c_str());
    ImGui::PopID();
  }
  const size_t T = std::min(s->ids.size(), s->tokenText.size());
  for (size_t i = 0; i < T; ++i) {
    sameLineIfFits(s->tokenText[i].c_str());
    ImGui::PushID(static_cast<int>(i));
    const bool selected = ctx.state.token == static_cast<int>(i) || (ctx.state.token < 0 && i + 1 == T);
    if (tokenChip(s->tokenText[i], selected, false)) ctx.state.token = static_cast<int>(i);
    if (!config.isImage()) tokenTooltip(tokenizer, s->ids[i], ("position " + std::to_string(i)).c_str());  // a patch has no bytes
    ImGui::PopID();
  }
  // A new prompt scrolls the strip to its end, where the newest (and the selected last) token is.
  if (scrolledFor_ != s->id) {
    ImGui::SetScrollHereY(1.0f);
    scrolledFor_ = s->id;
  }
  contentHeight_ = ImGui::GetCursorPosY() + ImGui::GetStyle().ItemSpacing.y;  // sizes next frame's strip
  ImGui::EndChild();
  recordItem(ctx.shared, "token_strip");
}

void PromptPanel::draw(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s || !ctx.session.tokenizer()) {
    ImGui::TextDisabled(s ? "this model has no tokenizer" : "computing...");
    return;
  }
  ImGui::BeginChild("tokens", ImVec2(ImGui::GetContentRegionAvail().x * 0.45f, 0), true);
  drawTokenTable(ctx);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("merges", ImVec2(0, 0), true);
  drawMerges(ctx);
  ImGui::EndChild();
}

void PromptPanel::drawTokenTable(PanelContext& ctx) {
  const Snapshot& s = *ctx.snapshot;
  const Tokenizer& tokenizer = *ctx.session.tokenizer();
  if (!ImGui::BeginTable("token table", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("pos");
  ImGui::TableSetupColumn("token");
  ImGui::TableSetupColumn("id");
  ImGui::TableSetupColumn("bytes");
  ImGui::TableHeadersRow();
  const int rows = (int)std::min(s.ids.size(), s.tokenText.size());
  ImGuiListClipper clipper;  // only the rows in view are drawn: a prompt of thousands of tokens costs a screenful
  clipper.Begin(rows);
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::TableNextColumn();
      ImGui::Text("%d", i);
      ImGui::TableNextColumn();
      // The label is only an ID: a token's own text may contain "##".
      ImGui::PushID(i);
      if (ImGui::Selectable("##row", ctx.state.token == i, ImGuiSelectableFlags_SpanAllColumns)) ctx.state.token = i;
      ImGui::PopID();
      ImGui::SameLine();
      ImGui::TextUnformatted(("'" + s.tokenText[i] + "'").c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%d", s.ids[i]);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(hexBytes(tokenizer.tokenBytes(s.ids[i])).c_str());
    }
  ImGui::EndTable();
}

PromptPanel::Merges PromptPanel::mergesOf(const MergeKey& key, const Snapshot& snapshot, const Tokenizer& tokenizer) {
  Merges merges{.key = key, .word = {}, .steps = {}, .note = {}};
  // The word containing the selected token: the pre-tokenizer's piece at that spot.
  size_t byteOffset = 0;  // of the selected token in the prompt: the dropped tokens come first
  for (int id : snapshot.droppedIds) byteOffset += tokenizer.tokenBytes(id).size();
  for (int i = 0; i < key.position && i < (int)snapshot.ids.size(); ++i) byteOffset += tokenizer.tokenBytes(snapshot.ids[i]).size();
  size_t seen = 0;
  for (std::string_view w : gpt2PreTokenizeViews(snapshot.request.prompt)) {
    if (byteOffset < seen + w.size()) {
      merges.word = w;
      break;
    }
    seen += w.size();
  }
  if (merges.word.size() > kMaxMergedWordBytes) {
    merges.note = "this word is " + std::to_string(merges.word.size()) + " bytes long: merges are stepped through for words of up to " +
                  std::to_string(kMaxMergedWordBytes) + " bytes";
    merges.word.resize(64);  // its start, for the heading
  } else if (!merges.word.empty()) {
    merges.steps = bpeMergeSteps(tokenizer, merges.word);
  }
  return merges;
}

void PromptPanel::drawMerges(PanelContext& ctx) {
  const Snapshot& s = *ctx.snapshot;
  const Tokenizer& tokenizer = *ctx.session.tokenizer();
  if (tokenizer.kind() != TokenizerKind::Gpt2Bpe) {  // the merge steps are GPT-2's tokenizer's (bpeMergeSteps)
    if (tokenizer.kind() == TokenizerKind::Char)
      ImGui::TextWrapped("This model uses a character-level tokenizer: every character is one token, no merges.");
    else
      ImGui::TextWrapped(
          "This model's tokenizer is %s. Step-by-step merges are shown for GPT-2's tokenizer (vocab.json + "
          "merges.txt) only.",
          tokenizer.description().c_str());
    return;
  }
  TaskChannel<Merges>& channel = ctx.tasks.channel<Merges>("prompt merges");
  const int position = ctx.state.token >= 0 && ctx.state.token < (int)s.ids.size() ? ctx.state.token : (int)s.ids.size() - 1;
  const MergeKey key{ctx.session.serial(), s.id, position};
  const std::shared_ptr<const Snapshot> latest = ctx.session.latest();
  if (!(key == postedMerges_) && latest && latest->id == s.id) {
    postedMerges_ = key;
    channel.post([key, snapshot = latest, tokenizer = ctx.session.sharedTokenizer()](TaskScope<Merges>& scope) {
      auto merges = std::make_shared<Merges>(mergesOf(key, *snapshot, *tokenizer));
      if (!scope.cancelled()) scope.publish(std::move(merges));
    });
  }
  const std::shared_ptr<const Merges> shown = channel.latest();
  if (!shown || shown->key.session != key.session) {  // none yet for this model
    ImGui::TextDisabled("working out the merges...");
    return;
  }
  ImGui::Text("BPE merges for the word '%s'%s", shown->word.c_str(), shown->key == key ? "" : " (updating)");
  ImGui::TextDisabled("start from single bytes; each step merges the adjacent pair with the lowest rank in merges.txt");
  recordItem(ctx.shared, "prompt_merges");
  nlohmann::json& facts = ctx.shared.facts["prompt"];
  facts["merge_word"] = shown->word;
  facts["merge_steps"] = shown->steps.size();
  facts["merges_current"] = shown->key == key;
  if (!shown->note.empty()) ImGui::TextWrapped("%s", shown->note.c_str());
  for (size_t i = 0; i < shown->steps.size(); ++i) {
    const BpeStep& step = shown->steps[i];
    std::string pieces;
    for (const auto& piece : step.pieces) pieces += "[" + piece + "] ";
    if (step.rank < 0) ImGui::Text("start:  %s", pieces.c_str());
    else ImGui::Text("%2zu. merge '%s' + '%s' (rank %d):  %s", i, step.left.c_str(), step.right.c_str(), step.rank, pieces.c_str());
  }
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makePromptPanel() { return std::make_unique<PromptPanel>(); }

}  // namespace tscope::gui

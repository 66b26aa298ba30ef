// TranslationPanel: the source and target of an encoder-decoder model and the three attentions
// that connect them. Step and Translate post the Next-token panel's generation (the App takes the
// new tokens into the prompt, which is the target here); beam mode takes the session's beam
// search's best hypothesis instead. Maps are textures rebuilt only when the snapshot or the
// selection changes; rows of every map are decoder steps labelled "reads → writes".
#include "app/gui/panels/translation/panel_translation.h"

#include <memory>

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/gui/panels/translation/translation_views.h"

namespace tscope::gui {

namespace {

const ImVec4 kWarning(0.95f, 0.6f, 0.1f, 1.0f);
const ImVec4 kError(0.9f, 0.25f, 0.2f, 1.0f);

// A greyed explanation after a title: on its line when it fits in the cell, else wrapped below.
void hint(float right, const char* text) {
  sameLineIfFitsBefore(right, ImGui::CalcTextSize(text).x);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", text);
  ImGui::PopStyleColor();
}

void clearTarget(PanelContext& ctx) {
  ctx.state.prompt.clear();
  ctx.state.generatedFrom.clear();
  ctx.state.generatedIds.clear();
  ctx.repost = true;
}

}  // namespace

void TranslationPanel::draw(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  if (!c.isEncoderDecoder()) {
    drawNoEncoder(ctx);
    return;
  }
  nextOutlinedRow_ = -1;
  if (awaitingGeneration_ && !ctx.session.busy()) awaitingGeneration_ = false;
  ctx.state.encoderLayer = std::clamp(ctx.state.encoderLayer, 0, c.n_encoder_layer - 1);
  ctx.state.encoderHead = std::clamp(ctx.state.encoderHead, 0, c.n_head - 1);
  if (ImGui::BeginTable("translation_top", 2, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("source", ImGuiTableColumnFlags_WidthStretch, 0.44f);
    ImGui::TableSetupColumn("target", ImGuiTableColumnFlags_WidthStretch, 0.56f);
    ImGui::TableNextColumn();
    drawSource(ctx);
    ImGui::TableNextColumn();
    drawTarget(ctx);
    ImGui::EndTable();
  }
  ImGui::Separator();
  const Snapshot* s = ctx.snapshot;
  if (!s) {
    ImGui::TextDisabled("computing...");
  } else if (!s->error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kError);
    ImGui::TextWrapped("Cannot translate: %s", s->error.c_str());
    ImGui::PopStyleColor();
    recordItem(ctx.shared, "translation_error");
  } else {
    drawMapControls(ctx);
    drawMaps(ctx);
  }
  outlinedRow_ = nextOutlinedRow_;
  recordFacts(ctx);
}

void TranslationPanel::drawNoEncoder(PanelContext& ctx) {
  ImGui::TextWrapped(
      "This model has no encoder: translation needs an encoder-decoder model (n_encoder_layer > 0), which reads a source "
      "and writes a target.");
  recordItem(ctx.shared, "translation_no_encoder");
  const std::filesystem::path dates = std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets/models/dates-encdec";
  std::error_code ec;
  const bool shipped = std::filesystem::exists(dates / "config.json", ec);
  ImGui::BeginDisabled(!shipped);
  if (ImGui::Button("Open the dates translator (assets/models/dates-encdec)")) ctx.openModel = dates.string();
  ImGui::EndDisabled();
  recordItem(ctx.shared, "translation_open_encdec");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(shipped ? "an encoder-decoder trained by tscope: spelled-out dates to ISO dates, one character at a time"
                              : "assets/models/dates-encdec is not in this tree");
  ctx.shared.facts["translation"] = {{"encoder_decoder", false}};
}

void TranslationPanel::drawSource(PanelContext& ctx) {
  AppState& st = ctx.state;
  const float f = ImGui::GetFontSize();
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;  // the cell's edge
  ImGui::TextUnformatted("Source");
  hint(right, "what the encoder reads (editing it starts a new target)");
  const float boxHeight = ImGui::GetTextLineHeight() * 2.4f + ImGui::GetStyle().FramePadding.y * 2;
  if (ImGui::InputTextMultiline("##translation_source", &st.source, ImVec2(-FLT_MIN, boxHeight))) clearTarget(ctx);
  recordItem(ctx.shared, "translation_source");
  const Snapshot* s = ctx.snapshot;
  if (!s || s->sourceIds.empty()) {
    ImGui::TextDisabled(s ? "no source tokens" : "computing...");
    return;
  }
  const int context = ctx.session.config().n_positions;
  ImGui::TextDisabled("%zu / %d source tokens", s->sourceIds.size(), context);
  if (s->droppedSourceTokens > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, kWarning);
    ImGui::TextWrapped("%zu earlier source tokens dropped: the encoder reads at most %d, so it sees the last %d", s->droppedSourceTokens, context,
                       context);
    ImGui::PopStyleColor();
    recordItem(ctx.shared, "translation_dropped_note");
  }
  // The tokens as small chips, wrapped inside this column.
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(f * 0.15f, f * 0.2f));
  ImGui::BeginGroup();
  for (size_t j = 0; j < s->sourceText.size(); ++j) {
    const std::string label = axisLabel(s->sourceText[j], 12);
    if (j > 0 && ImGui::GetItemRectMax().x + f * 0.15f + ImGui::CalcTextSize(label.c_str()).x + f * 0.5f <= right) ImGui::SameLine();
    ImGui::PushID(static_cast<int>(j));
    if (sourceChip(label)) ImGui::SetTooltip("source position %zu, token id %d", j, s->sourceIds[j]);
    ImGui::PopID();
  }
  ImGui::EndGroup();
  ImGui::PopStyleVar();
  recordItem(ctx.shared, "translation_source_tokens");
}

void TranslationPanel::drawTarget(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const Snapshot* s = ctx.snapshot;
  const float f = ImGui::GetFontSize();
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;  // the cell's edge
  ImGui::TextUnformatted("Target");
  hint(right, "the decoder writes it one token at a time after ^ (the start token)");
  const DecodeMode mode = modeOf(st);
  if (ImGui::RadioButton("greedy", mode == DecodeMode::Greedy)) {
    st.sampling.greedy = true;
    st.beamWidth = 0;
    ctx.repost = true;
  }
  recordItem(ctx.shared, "translation_mode_greedy");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("every step takes the most probable token");
  ImGui::SameLine();
  if (ImGui::RadioButton("sample", mode == DecodeMode::Sample)) {
    st.sampling.greedy = false;
    st.beamWidth = 0;
    ctx.repost = true;
  }
  recordItem(ctx.shared, "translation_mode_sample");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("every step draws a token (temperature here; top-k, top-p and the seed in the Next-token panel)");
  ImGui::SameLine();
  if (ImGui::RadioButton("beam search", mode == DecodeMode::Beam)) {
    st.beamWidth = beamWidth_;
    // Steps ahead: as many as the Next-token panel's steps slider allows (12), which covers a date's
    // ten characters and its end token; Translate goes on from the best beam's tokens when more remain.
    st.beamSteps = std::clamp(c.n_positions, 1, 12);
    ctx.repost = true;
  }
  recordItem(ctx.shared, "translation_mode_beam");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("keep the most probable partial targets at every step; Step and Translate take the best one's tokens");
  if (mode == DecodeMode::Sample) {
    sameLineIfFitsBefore(right, f * 8 + ImGui::CalcTextSize("temperature").x);
    ImGui::SetNextItemWidth(f * 8);
    ctx.repost |=
        ImGui::SliderFloat("temperature", &st.sampling.temperature, 0.05f, 3.0f, "%.2f", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
    recordItem(ctx.shared, "translation_temperature");
  } else if (mode == DecodeMode::Beam) {
    sameLineIfFitsBefore(right, f * 6 + ImGui::CalcTextSize("beam width").x);
    ImGui::SetNextItemWidth(f * 6);
    if (ImGui::SliderInt("beam width", &beamWidth_, 1, 8, "%d", ImGuiSliderFlags_AlwaysClamp)) {
      st.beamWidth = beamWidth_;
      ctx.repost = true;
    }
    recordItem(ctx.shared, "translation_beam_width");
  }
  // Step and Translate need the snapshot of what is on screen, not finished, with room left.
  std::string why;
  if (!s || !isCurrent(*s, st) || ctx.repost) why = "computing...";
  else if (!s->error.empty()) why = "nothing to decode until the source is fixed";
  else if (finished(*s, c)) why = "finished: the model wrote the end token. Clear target to decode again.";
  else if ((int)s->ids.size() >= c.n_positions) why = "the target fills the context";
  else if (mode == DecodeMode::Beam && (!s->beam || s->request.beamWidth != st.beamWidth)) why = "computing the beam...";
  drawDecodeControls(ctx, why.empty(), why, right);
  drawTargetTokens(ctx);
  if (modeOf(st) == DecodeMode::Beam) drawBeam(ctx);
}

void TranslationPanel::drawDecodeControls(PanelContext& ctx, bool canDecode, const std::string& why, float right) {
  const ModelConfig& c = ctx.session.config();
  const bool beam = modeOf(ctx.state) == DecodeMode::Beam;
  const GenerationProgress progress = ctx.session.generationProgress();
  const bool generating = awaitingGeneration_ || progress.asked > 0;
  auto generate = [&](int tokens) {
    ctx.generateTokens = tokens;
    ctx.repost = true;
    awaitingGeneration_ = true;
  };
  ImGui::BeginDisabled(!canDecode || generating);
  if (ImGui::Button("Step")) beam ? takeFromBeam(ctx, 1) : generate(1);
  recordItem(ctx.shared, "translation_step");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("write one more target token");
  ImGui::SameLine();
  // The session stops at the end token, so asking for a whole context is "until the end".
  if (ImGui::Button("Translate")) beam ? takeFromBeam(ctx, SIZE_MAX) : generate(c.n_positions);
  recordItem(ctx.shared, "translation_translate");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("write target tokens until the model writes the end token");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(generating || ctx.state.prompt.empty());
  if (ImGui::Button("Clear target")) clearTarget(ctx);
  recordItem(ctx.shared, "translation_clear");
  ImGui::EndDisabled();
  if (generating) {
    ImGui::SameLine();
    if (ImGui::Button("Stop")) ctx.session.stopGeneration();
    recordItem(ctx.shared, "translation_stop");
    char overlay[64];
    std::snprintf(overlay, sizeof overlay, "decoding: %d tokens", progress.done);
    sameLineIfFitsBefore(right, ImGui::GetFontSize() * 10);
    ImGui::ProgressBar(progress.asked > 0 ? (float)progress.done / progress.asked : 0.0f, ImVec2(-FLT_MIN, 0), overlay);
  } else if (!why.empty()) {
    sameLineIfFitsBefore(right, ImGui::CalcTextSize(why.c_str()).x);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", why.c_str());
    ImGui::PopStyleColor();
  }
}

void TranslationPanel::drawTargetTokens(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  const ModelConfig& c = ctx.session.config();
  if (!s || s->ids.empty()) return;
  const float f = ImGui::GetFontSize();
  const size_t first = firstTarget(*s, c);
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(f * 0.2f, f * 0.25f));
  ImGui::BeginGroup();
  for (size_t i = 0; i < s->ids.size() && i < s->tokenText.size(); ++i) {
    const bool start = i + 1 == first;
    const std::string label = axisLabel(s->tokenText[i], 12);
    const float probability = i >= 1 && i - 1 < s->targetProbabilities.size() ? s->targetProbabilities[i - 1] : -1.0f;
    if (i > 0 && ImGui::GetItemRectMax().x + f * 0.2f + std::max(ImGui::CalcTextSize(label.c_str()).x, f * 2) + f * 0.7f <= right) ImGui::SameLine();
    ImGui::PushID(static_cast<int>(i));
    const int row = static_cast<int>(i) - 1;  // the decoder step that wrote it
    const bool hovered = probabilityChip(label, start ? -1.0f : probability, row >= 0 && row == outlinedRow_, start);
    recordItem(ctx.shared, "translation_target_token_" + std::to_string(i));
    if (hovered) {
      if (start) {
        ImGui::SetTooltip("the decoder start token: every target begins with it");
      } else {
        nextOutlinedRow_ = row;
        ImGui::SetTooltip(
            "target token %zu '%s' (id %d)%s\nthe model gave it p = %.4f after the tokens before it\nwritten at decoder step %d: its "
            "row in the maps is outlined",
            i - first, s->tokenText[i].c_str(), s->ids[i], s->ids[i] == c.eos_token_id ? ", the end token" : "", probability, row);
      }
    }
    ImGui::PopID();
  }
  if (s->ids.size() == first) {
    ImGui::SameLine();
    ImGui::TextDisabled("(empty: Step writes one token, Translate writes until the end token)");
  }
  ImGui::EndGroup();
  ImGui::PopStyleVar();
  recordItem(ctx.shared, "translation_target_tokens");
  const std::string text = targetText(*s, c);
  if (!text.empty()) {
    ImGui::TextUnformatted("Translation:");
    ImGui::SameLine();
    ImGui::TextUnformatted(text.c_str());
    recordItem(ctx.shared, "translation_target_text");
    if (finished(*s, c)) {
      ImGui::SameLine();
      ImGui::TextDisabled("(finished: the end token was written)");
    }
  }
}

void TranslationPanel::drawBeam(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s || !s->error.empty()) return;
  if (!s->beam || s->request.beamWidth != ctx.state.beamWidth || !isCurrent(*s, ctx.state)) {
    ImGui::TextDisabled("computing the beam...");
    return;
  }
  const BeamResult& beam = *s->beam;
  if (finished(*s, ctx.session.config())) return;  // a beam after the end token is no translation
  if (beam.bestTokens.empty()) {
    ImGui::TextDisabled("beam search: no room left in the context");
    return;
  }
  ImGui::Text("Beam search, width %d: best continuation '%s', log p = %.3f (p = %.3f)", s->request.beamWidth,
              axisLabel(decodeIds(ctx.session, beam.bestTokens), 40).c_str(), beam.bestLogProb, std::exp(beam.bestLogProb));
  recordItem(ctx.shared, "translation_beam_best");
  if (beam.finalBeams.size() > 1 && beam.finalLogProbs.size() > 1)
    ImGui::TextDisabled("runner-up: '%s', log p = %.3f", axisLabel(decodeIds(ctx.session, beam.finalBeams[1]), 24).c_str(), beam.finalLogProbs[1]);
}

void TranslationPanel::takeFromBeam(PanelContext& ctx, size_t tokens) {
  const Snapshot* s = ctx.snapshot;
  if (!s || !s->beam) return;
  const std::vector<int>& best = s->beam->bestTokens;
  const std::vector<int> taken(best.begin(), best.begin() + static_cast<long>(std::min(tokens, best.size())));
  AppState& st = ctx.state;
  // Keep the tokens as ids beside the text (as a Step does), so nothing is re-tokenized.
  if (st.generatedIds.empty()) st.generatedFrom = st.prompt;
  st.generatedIds.insert(st.generatedIds.end(), taken.begin(), taken.end());
  st.prompt += decodeIds(ctx.session, taken);
  ctx.repost = true;
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeTranslationPanel() { return std::make_unique<TranslationPanel>(); }

}  // namespace tscope::gui

// TranslationPanel's lower half: the selection (decoder layer and head, encoder layer and head,
// mean over heads, lines), the decoder's cross- and self-attention (one row per decoder step in
// both), the encoder's self-attention beside them, the diagram of the two stacks, and the facts
// the GUI tests read. The maps come from model/nn/trace_views.h; a target row hovered anywhere is
// outlined in every map the next frame.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/translation/panel_translation.h"
#include "app/gui/panels/translation/translation_views.h"
#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/encoder_decoder_diagram.h"
#include "app/gui/widgets/layout.h"
#include "model/core/error.h"
#include "model/nn/trace_views.h"

namespace tscope::gui {

namespace {

std::string headName(bool average, int head) { return average ? "mean over heads" : "head " + std::to_string(head); }

// A map's title and its one-line explanation (greyed), wrapped at `width` from where they start.
void mapTitle(const std::string& title, const char* explanation, float width) {
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  ImGui::TextWrapped("%s", title.c_str());
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", explanation);
  ImGui::PopStyleColor();
  ImGui::PopTextWrapPos();
}

// "^→2": the token a decoder step reads and the one it writes ("?" for the last step: not written yet).
std::vector<std::string> stepLabels(const std::vector<std::string>& tokens) {
  std::vector<std::string> labels;
  for (size_t t = 0; t < tokens.size(); ++t)
    labels.push_back(axisLabel(tokens[t], 4) + "\u2192" + (t + 1 < tokens.size() ? axisLabel(tokens[t + 1], 4) : std::string("?")));
  return labels;
}

// The look the three maps share: square cells of at most `maxCell` pixels that fit `avail`, row
// labels (a hovered label picks its row), the outlined target row, the hovered cell in white.
TokenHeatmapStyle mapStyle(const std::vector<std::string>& rowLabels, const std::vector<std::string>& colLabels, int outlinedRow, SharedView& shared,
                           const char* region) {
  return {.rowLabels = &rowLabels,
          .labelWidth = TokenHeatmap::labelWidthFor(rowLabels, ImGui::GetFontSize() * 6),
          .colLabels = &colLabels,
          .selectedRow = outlinedRow,
          .selectedColor = kOutline,
          .hoverColor = IM_COL32(255, 255, 255, 255),
          .rowLabelHover = true,
          .shared = &shared,
          .region = region};
}

ImVec2 squareCells(const TokenHeatmap& map, const TokenHeatmapStyle& style, ImVec2 avail, float maxCell) {
  const float cell = TokenHeatmap::squareCell(avail, map.rows(), map.cols(), style.labelWidth, maxCell);
  return ImVec2(cell, cell);
}

}  // namespace

void TranslationPanel::drawMapControls(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const float f = ImGui::GetFontSize();
  layerHeadSliders(&ctx.shared, {.layerLabel = "decoder layer", .region = "translation", .widthEms = 6, .headDisabled = st.averageHeads}, st.layer,
                   c.n_layer, st.head, c.n_head);
  sameLineIfFits("encoder layer", f * 6);
  ImGui::SetNextItemWidth(f * 6);
  ImGui::SliderInt("encoder layer", &ctx.state.encoderLayer, 0, c.n_encoder_layer - 1);
  recordItem(ctx.shared, "translation_encoder_layer");
  sameLineIfFits("encoder head", f * 6);
  ImGui::SetNextItemWidth(f * 6);
  ImGui::BeginDisabled(st.averageHeads);
  ImGui::SliderInt("encoder head", &ctx.state.encoderHead, 0, c.n_head - 1);
  ImGui::EndDisabled();
  recordItem(ctx.shared, "translation_encoder_head");
  sameLineIfFits("mean over heads (A)", ImGui::GetFrameHeight());
  ImGui::Checkbox("mean over heads (A)", &st.averageHeads);
  recordItem(ctx.shared, "translation_average");
  sameLineIfFits("cross-attention as lines (L)", ImGui::GetFrameHeight());
  ImGui::Checkbox("cross-attention as lines (L)", &st.linesView);
  recordItem(ctx.shared, "translation_lines");
}

void TranslationPanel::rebuildMaps(PanelContext& ctx) {
  const Snapshot& s = *ctx.snapshot;
  const AppState& st = ctx.state;
  TranslationMaps& m = maps_;
  if (m.builtFor == s.id && m.layer == st.layer && m.head == st.head && m.average == st.averageHeads && m.encoderLayer == ctx.state.encoderLayer &&
      m.encoderHead == ctx.state.encoderHead)
    return;
  m.builtFor = s.id;
  m.layer = st.layer;
  m.head = st.head;
  m.average = st.averageHeads;
  m.encoderLayer = ctx.state.encoderLayer;
  m.encoderHead = ctx.state.encoderHead;
  m.problem.clear();
  m.cross.clear();
  rowLabels_ = stepLabels(s.tokenText);
  sourceLabels_.clear();
  for (const std::string& token : s.sourceText) sourceLabels_.push_back(axisLabel(token, 4));
  targetLabels_.clear();
  for (const std::string& token : s.tokenText) targetLabels_.push_back(axisLabel(token, 4));
  const Trace& trace = s.trace;
  try {
    const std::optional<int> captured = trace.capturedIndex(st.layer);
    if (!captured) throw Error("decoder layer " + std::to_string(st.layer) + " was not captured (" + trace.note + ")");
    const int layerIndex = *captured;
    m.cross = crossAttentionShown(trace, layerIndex, st.head, st.averageHeads);
    m.crossMap.setData(ctx.renderer, m.cross.data(), trace.T, trace.S, 0.0f, 1.0f, Colormap::Perceptual);
    const std::vector<float> decoder = attentionShown(s.attention, ctx.session.config(), layerIndex, st.head, st.averageHeads, false);
    m.decoderMap.setData(ctx.renderer, decoder.data(), s.attention.rows(), s.attention.rows(), 0.0f, 1.0f, Colormap::Perceptual);
    if (!s.encoder) throw Error("no encoder maps in this snapshot");
    const std::vector<float> encoder = encoderAttentionShown(*s.encoder, ctx.state.encoderLayer, ctx.state.encoderHead, st.averageHeads);
    m.encoderMap.setData(ctx.renderer, encoder.data(), s.encoder->S, s.encoder->S, 0.0f, 1.0f, Colormap::Perceptual);
  } catch (const std::exception& e) {
    m.problem = e.what();
  }
}

void TranslationPanel::drawMaps(PanelContext& ctx) {
  rebuildMaps(ctx);
  const float f = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The decoder's two attentions share a column (their rows are the same steps); the encoder's
  // self-attention and the diagram get a column each, or share one as two tabs when narrower.
  auto decoderColumn = [&](float width) {
    ImGui::BeginChild("translation_decoder_column", ImVec2(width, avail.y), true);
    const ImVec2 column = ImGui::GetContentRegionAvail();
    if (column.x > column.y * 2) {  // a short wide column (a small window): the two side by side
      const float crossWidth = column.x * 0.66f;
      ImGui::BeginGroup();
      drawCrossAttention(ctx, ImVec2(crossWidth, column.y));
      ImGui::EndGroup();
      ImGui::SameLine(crossWidth + spacing * 2);
      ImGui::BeginGroup();
      drawDecoderSelfAttention(ctx, ImVec2(column.x - crossWidth - spacing * 2, column.y));
      ImGui::EndGroup();
    } else {
      drawCrossAttention(ctx, ImVec2(column.x, column.y * 0.62f));
      ImGui::Spacing();
      drawDecoderSelfAttention(ctx, ImGui::GetContentRegionAvail());
    }
    ImGui::EndChild();
    ImGui::SameLine();
  };
  const bool tall = avail.y > f * 16;  // else every part at its own height, the panel scrolling
  if (tall && avail.x > f * 85) {
    const float diagramWidth = std::clamp(avail.x * 0.26f, f * 15, f * 28);
    const float encoderWidth = std::clamp(avail.x * 0.24f, f * 14, f * 30);
    decoderColumn(avail.x - diagramWidth - encoderWidth - 2 * spacing);
    ImGui::BeginChild("translation_encoder_column", ImVec2(encoderWidth, avail.y), true);
    drawEncoderSelfAttention(ctx, ImGui::GetContentRegionAvail());
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("translation_diagram_column", ImVec2(0, avail.y), true);
    drawDiagram(ctx, ImGui::GetContentRegionAvail());
    ImGui::EndChild();
  } else if (tall && avail.x > f * 50) {
    decoderColumn(avail.x * 0.6f);
    ImGui::BeginChild("translation_side_column", ImVec2(0, avail.y), true);
    if (ImGui::BeginTabBar("translation_side_tabs")) {
      const bool encoder = ImGui::BeginTabItem("Encoder self-attention", nullptr, subTabFlags(ctx, "translation_tab_encoder"));
      recordItem(ctx.shared, "translation_tab_encoder");
      if (encoder) {
        drawEncoderSelfAttention(ctx, ImGui::GetContentRegionAvail());
        ImGui::EndTabItem();
      }
      const bool stacks = ImGui::BeginTabItem("The two stacks", nullptr, subTabFlags(ctx, "translation_tab_diagram"));
      recordItem(ctx.shared, "translation_tab_diagram");
      if (stacks) {
        drawDiagram(ctx, ImGui::GetContentRegionAvail());
        ImGui::EndTabItem();
      }
      ImGui::EndTabBar();
    }
    ImGui::EndChild();
  } else {  // narrow or short (large text): one after another, the panel scrolls
    const float width = avail.x;
    drawCrossAttention(ctx, ImVec2(width, f * 18));
    ImGui::Separator();
    drawDecoderSelfAttention(ctx, ImVec2(width, f * 18));
    ImGui::Separator();
    drawEncoderSelfAttention(ctx, ImVec2(width, f * 24));
    ImGui::Separator();
    drawDiagram(ctx, ImVec2(width, 0));
  }
}

void TranslationPanel::drawCrossAttention(PanelContext& ctx, ImVec2 size) {
  const Snapshot& s = *ctx.snapshot;
  const AppState& st = ctx.state;
  const float f = ImGui::GetFontSize();
  const ImVec2 start = ImGui::GetCursorScreenPos();
  mapTitle("Cross-attention: decoder layer " + std::to_string(st.layer) + ", " + headName(st.averageHeads, st.head),
           "rows: decoder steps (reads \u2192 writes); columns: where each looked in the source; a row sums to 1", size.x);
  if (!maps_.problem.empty()) {
    ImGui::TextDisabled("%s", maps_.problem.c_str());
    return;
  }
  const int T = maps_.crossMap.rows(), S = maps_.crossMap.cols();
  const float used = ImGui::GetCursorScreenPos().y - start.y;
  const ImVec2 area(size.x, std::max(f * 6, size.y - used));
  ctx.shared.exportable = {"cross_attention_l" + std::to_string(st.layer) + (st.averageHeads ? std::string("_mean") : "_h" + std::to_string(st.head)),
                           maps_.cross, T, S};
  if (st.linesView) {
    ScreenRect rect;
    const int row = drawAlignmentLines(maps_.cross, T, S, rowLabels_, sourceLabels_, area, outlinedRow_, &rect);
    ctx.shared.regions["translation_cross_lines"] = rect;
    if (row >= 0) {
      nextOutlinedRow_ = row;
      ImGui::SetTooltip("decoder step %d: reads '%s', writes '%s'", row, tokenAt(s.tokenText, row).c_str(),
                        row + 1 < (int)s.tokenText.size() ? s.tokenText[row + 1].c_str() : "(next)");
    }
    return;
  }
  const float barHeight = ImGui::GetTextLineHeightWithSpacing() * 2.2f;
  TokenHeatmapStyle style = mapStyle(rowLabels_, sourceLabels_, outlinedRow_, ctx.shared, "translation_cross_heatmap");
  style.scale = ScalePlace::Below;
  style.scaleCaption = "attention weight";
  style.scaleWidth = f * 12;
  style.readout = [&](int row, int col) {
    const std::string writes = row + 1 < (int)s.tokenText.size() ? "'" + s.tokenText[row + 1] + "'" : "(the next token)";
    char text[320];
    if (col >= 0)
      std::snprintf(text, sizeof text, "decoder step %d: reads '%s', writes %s\nsource token %d '%s': weight %.4f", row,
                    tokenAt(s.tokenText, row).c_str(), writes.c_str(), col, tokenAt(s.sourceText, col).c_str(), maps_.crossMap.value(row, col));
    else std::snprintf(text, sizeof text, "decoder step %d: reads '%s', writes %s", row, tokenAt(s.tokenText, row).c_str(), writes.c_str());
    return std::string(text);
  };
  const TokenHeatmapHit hit =
      maps_.crossMap.draw(ctx.renderer, squareCells(maps_.crossMap, style, ImVec2(area.x, area.y - barHeight), f * 2.2f), style);
  if (hit.row >= 0) nextOutlinedRow_ = hit.row;
}

void TranslationPanel::drawEncoderSelfAttention(PanelContext& ctx, ImVec2 size) {
  const Snapshot& s = *ctx.snapshot;
  const ImVec2 start = ImGui::GetCursorScreenPos();
  mapTitle("Encoder self-attention: layer " + std::to_string(ctx.state.encoderLayer) + ", " + headName(ctx.state.averageHeads, ctx.state.encoderHead),
           "bidirectional: each source token sees all of them", size.x);
  if (!maps_.problem.empty()) return;
  const float used = ImGui::GetCursorScreenPos().y - start.y;
  TokenHeatmapStyle style = mapStyle(sourceLabels_, sourceLabels_, -1, ctx.shared, "translation_encoder_map");
  style.rowLabelHover = false;
  style.readout = [&](int row, int col) {
    char text[256];
    std::snprintf(text, sizeof text, "source %d '%s' attends to source %d '%s': %.4f", row, tokenAt(s.sourceText, row).c_str(), col,
                  tokenAt(s.sourceText, col).c_str(), maps_.encoderMap.value(row, col));
    return std::string(text);
  };
  maps_.encoderMap.draw(ctx.renderer, squareCells(maps_.encoderMap, style, ImVec2(size.x, size.y - used), ImGui::GetFontSize() * 1.4f), style);
}

void TranslationPanel::drawDecoderSelfAttention(PanelContext& ctx, ImVec2 size) {
  const Snapshot& s = *ctx.snapshot;
  const AppState& st = ctx.state;
  const ImVec2 start = ImGui::GetCursorScreenPos();
  mapTitle("Decoder self-attention: layer " + std::to_string(st.layer) + ", " + headName(st.averageHeads, st.head),
           "masked: a step sees only the target so far (grey)", size.x);
  if (!maps_.problem.empty()) return;
  const float f = ImGui::GetFontSize(), used = ImGui::GetCursorScreenPos().y - start.y;
  // The next-token readout goes beside the map when the column is wide, else under it (room kept).
  const float readoutWidth = f * 13, readoutHeight = ImGui::GetTextLineHeightWithSpacing() * 7.5f;
  const bool beside = size.x > readoutWidth + f * 8;
  const ImVec2 room(beside ? size.x - readoutWidth - f * 1.5f : size.x, size.y - used - (beside ? 0.0f : readoutHeight));
  TokenHeatmapStyle style = mapStyle(rowLabels_, targetLabels_, outlinedRow_, ctx.shared, "translation_decoder_map");
  style.readout = [&](int row, int col) {
    if (col < 0) return std::string();
    const float v = maps_.decoderMap.value(row, col);
    char text[256];
    if (std::isnan(v)) std::snprintf(text, sizeof text, "masked: step %d cannot see the later target token %d", row, col);
    else
      std::snprintf(text, sizeof text, "step %d '%s' attends to target token %d '%s': %.4f", row, tokenAt(s.tokenText, row).c_str(), col,
                    tokenAt(s.tokenText, col).c_str(), v);
    return std::string(text);
  };
  const TokenHeatmapHit hit = maps_.decoderMap.draw(ctx.renderer, squareCells(maps_.decoderMap, style, room, f * 1.4f), style);
  if (beside) ImGui::SameLine(0, f * 1.5f);
  drawNextTokens(ctx, beside ? std::max(readoutWidth, size.x - (hit.plotMax.x - start.x) - f * 1.5f) : size.x);
  if (hit.row >= 0) nextOutlinedRow_ = hit.row;
}

void TranslationPanel::drawNextTokens(PanelContext& ctx, float width) {
  const Snapshot& s = *ctx.snapshot;
  ImGui::BeginGroup();
  if (finished(s, ctx.session.config())) {
    ImGui::Text("The last step wrote the end token");
    ImGui::TextDisabled("the target is finished: what would follow is no translation");
    ImGui::EndGroup();
    return;
  }
  ImGui::Text("The last step's next token");
  ImGui::TextDisabled("the model's probabilities after '%s'", axisLabel(tokenAt(s.tokenText, (int)s.tokenText.size() - 1), 12).c_str());
  const std::vector<int> top = topTokenIds(s.stages.raw, 5);
  const float scale = top.empty() ? 1.0f : s.stages.raw[top.front()];
  for (int id : top) {
    char label[64];
    std::snprintf(label, sizeof label, "%s  %.3f", tokenText(ctx.session, id), s.stages.raw[id]);
    drawBar(s.stages.raw[id], scale, std::min(width, ImGui::GetFontSize() * 16), BarStyle::Normal, label);
  }
  ImGui::EndGroup();
  recordItem(ctx.shared, "translation_next_tokens");
}

void TranslationPanel::drawDiagram(PanelContext& ctx, ImVec2 size) {
  ImGui::TextUnformatted("The two stacks");
  ImGui::SameLine();
  ImGui::TextDisabled("(click a layer to show it)");
  const ImVec2 room(size.x, size.y > 0 ? ImGui::GetContentRegionAvail().y : 0.0f);
  const EncoderDecoderDiagram diagram = drawEncoderDecoderDiagram(ctx.session.config(), room, {ctx.state.encoderLayer, ctx.state.layer});
  recordItem(ctx.shared, "translation_diagram");
  for (size_t l = 0; l < diagram.encoderFrames.size(); ++l) {
    const ImVec4& r = diagram.encoderFrames[l];
    ctx.shared.regions["translation_diagram_encoder_" + std::to_string(l)] = {r.x, r.y, r.z, r.w};
  }
  for (size_t l = 0; l < diagram.decoderFrames.size(); ++l) {
    const ImVec4& r = diagram.decoderFrames[l];
    ctx.shared.regions["translation_diagram_decoder_" + std::to_string(l)] = {r.x, r.y, r.z, r.w};
  }
  if (diagram.clicked.encoder >= 0) ctx.state.encoderLayer = diagram.clicked.encoder;
  if (diagram.clicked.decoder >= 0) ctx.state.layer = diagram.clicked.decoder;
}

void TranslationPanel::recordFacts(PanelContext& ctx) {
  const AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const Snapshot* s = ctx.snapshot;
  nlohmann::json& facts = ctx.shared.facts["translation"];
  facts["encoder_decoder"] = true;
  facts["mode"] = modeName(modeOf(st));
  facts["temperature"] = st.sampling.temperature;
  facts["beam_width"] = st.beamWidth;
  facts["layer"] = st.layer;
  facts["head"] = st.head;
  facts["average"] = st.averageHeads;
  facts["encoder_layer"] = ctx.state.encoderLayer;
  facts["encoder_head"] = ctx.state.encoderHead;
  facts["lines"] = st.linesView;
  facts["outlined_row"] = outlinedRow_;
  facts["maps_problem"] = maps_.problem;
  if (!s) return;
  facts["current"] = isCurrent(*s, st);
  facts["error"] = s->error;
  facts["source_tokens"] = s->sourceIds.size();
  facts["dropped_source_tokens"] = s->droppedSourceTokens;
  facts["target"] = targetText(*s, c);
  facts["target_tokens"] = s->ids.size() - std::min(s->ids.size(), firstTarget(*s, c));
  facts["finished"] = finished(*s, c);
  facts["probabilities"] = s->targetProbabilities;
  if (s->beam && !s->beam->bestTokens.empty() && !finished(*s, c)) {
    facts["beam_best"] = decodeIds(ctx.session, s->beam->bestTokens);
    facts["beam_log_prob"] = s->beam->bestLogProb;
  }
}

}  // namespace tscope::gui

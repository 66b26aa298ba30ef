// InsidePanel: the flow of one head (panel_inside.h). The numbers come from model/nn/inside_views.h
// (headStages, blockRows); this file only lays them out. Rows of the key table are one text line
// each, so every stage of key j sits on the same line and one hover highlights it in all of them.
#include "app/gui/panels/panel_inside.h"

#include <memory>

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/layout.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kHighlight = IM_COL32(255, 60, 60, 255);

void stageTitle(const char* title, const char* explanation) {
  ImGui::Spacing();
  ImGui::TextUnformatted(title);
  if (explanation && *explanation) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", explanation);
  }
}

// One vector stage: the strip and a tooltip naming the hovered element and its exact value.
void vectorStage(const VectorStrip& strip, const char* title, const char* explanation, const char* element, float width) {
  stageTitle(title, explanation);
  if (strip.empty()) {
    ImGui::TextDisabled("(not captured)");
    return;
  }
  const int col = strip.draw(ImVec2(width, ImGui::GetFontSize() * 1.2f));
  if (col >= 0) ImGui::SetTooltip("%s[%d] = %.7g", element, col, strip.value(0, col));
}

}  // namespace

std::string interventionsLine(const AppState& state) {
  if (state.interventions.empty()) return "";
  std::string line = std::to_string(state.interventions.size()) + (state.interventions.size() == 1 ? " intervention" : " interventions") +
                     " active (every panel shows the ablated model):";
  for (AblationKind kind : {AblationKind::Zero, AblationKind::Mean, AblationKind::Patch}) {
    std::vector<InterventionSpec> ofKind;
    for (const InterventionSpec& spec : state.interventions)
      if (spec.kind == kind) ofKind.push_back(spec);
    if (!ofKind.empty()) line += std::string(" ") + ablationKindName(kind) + " " + formatInterventions(ofKind) + ";";
  }
  line.pop_back();
  return line;
}

void VectorStrip::set(HeatmapRenderer& renderer, std::vector<float> values, int rows, int cols) {
  values_ = std::move(values);
  cols_ = cols;
  if (values_.empty()) return;
  float bound = 1e-6f;
  for (float v : values_)
    if (std::isfinite(v)) bound = std::max(bound, std::abs(v));
  map_.setData(renderer, values_.data(), rows, cols, -bound, bound, Colormap::Diverging);
}

int VectorStrip::draw(ImVec2 size, int* hoveredRow) const {
  int row = -1, col = -1;
  if (!map_.draw(size, &row, &col)) return -1;
  if (hoveredRow) *hoveredRow = row;
  return col;
}

void InsidePanel::rebuild(PanelContext& ctx, const Key& key) {
  key_ = key;
  error_.clear();
  stages_.reset();
  rows_ = {};
  const Trace& trace = ctx.snapshot->trace;
  try {
    stages_ = headStages(trace, ctx.session.config(), key.layer, key.head, key.query, ctx.snapshot->request.whatIfs);
    rows_ = blockRows(trace, ctx.session.weights(), key.layer, key.query);
  } catch (const std::exception& e) {
    error_ = e.what();
    if (!stages_) return;
  }
  HeatmapRenderer& r = ctx.renderer;
  const HeadStages& s = *stages_;
  const int C = trace.C;
  x_.set(r, rows_.x, 1, C);
  q_.set(r, {s.q.begin(), s.q.end()}, 1, s.D);
  keys_.set(r, {s.k.begin(), s.k.end()}, s.keys, s.D);
  values_.set(r, {s.v.begin(), s.v.end()}, s.keys, s.D);
  output_.set(r, s.output, 1, s.D);
  headMix_.set(r, rows_.headMix, 1, trace.A);
  attnOut_.set(r, rows_.attnOut, 1, C);
  crossOut_.set(r, rows_.crossOut, 1, C);
  residMid_.set(r, rows_.residMid, 1, C);
  mlpOut_.set(r, rows_.mlpOut, 1, C);
  residOut_.set(r, rows_.residOut, 1, C);
}

void InsidePanel::drawControls(PanelContext& ctx, int tokens) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  const float f = ImGui::GetFontSize();
  layerHeadSliders(&ctx.shared, {.headLabel = "head (Left/Right)", .region = "inside", .widthEms = 7}, st.layer, c.n_layer, st.head, c.n_head);
  int query = st.token < 0 ? tokens - 1 : std::min(st.token, tokens - 1);
  sameLineIfFits("query token (Up/Down)", f * 12);
  ImGui::SetNextItemWidth(f * 12);
  const std::string label = query >= 0 && ctx.snapshot ? tokenLabel(ctx.snapshot->tokenText[query], 12) : "";
  if (ImGui::SliderInt("query token (Up/Down)", &query, 0, std::max(0, tokens - 1), ("%d " + label).c_str())) st.token = query;
  recordItem(ctx.shared, "inside_query");
}

void InsidePanel::draw(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  const int tokens = s ? (int)s->ids.size() : 0;
  drawControls(ctx, tokens);
  if (!ctx.state.interventions.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
    ImGui::TextWrapped("%s", interventionsLine(ctx.state).c_str());
    ImGui::PopStyleColor();
    recordItem(ctx.shared, "interventions_banner");
  }
  const float width = ImGui::GetContentRegionAvail().x;
  const float flowWidth = std::max(ImGui::GetFontSize() * 20, width * 0.6f);
  ImGui::BeginChild("inside_flow", ImVec2(flowWidth, 0), true);
  if (!s || tokens == 0) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
  } else {
    const int query = ctx.state.token < 0 ? tokens - 1 : std::min(ctx.state.token, tokens - 1);
    const Key key{s->id, ctx.state.layer, ctx.state.head, query};
    if (s->trace.rowIndex(query) < 0 && !(key == key_)) {
      // The trace keeps only the query row the request asked for; a new query is being computed.
      ImGui::TextDisabled("computing query %d...", query);
    } else {
      if (!(key == key_)) rebuild(ctx, key);
      drawFlow(ctx);
    }
  }
  ImGui::EndChild();
  const ImVec2 flowMin = ImGui::GetItemRectMin(), flowMax = ImGui::GetItemRectMax();
  ctx.shared.regions["inside_flow"] = {flowMin.x, flowMin.y, flowMax.x, flowMax.y};
  ImGui::SameLine();
  ImGui::BeginChild("inside_side", ImVec2(0, 0), true);
  const float sideWidth = ImGui::GetContentRegionAvail().x;
  if (ImGui::CollapsingHeader("Interventions", ImGuiTreeNodeFlags_DefaultOpen)) drawInterventions(ctx);
  if (ImGui::CollapsingHeader("Direct logit attribution", ImGuiTreeNodeFlags_DefaultOpen)) drawAttribution(ctx);
  if (ImGui::CollapsingHeader("Attention as kernel regression", ImGuiTreeNodeFlags_DefaultOpen)) kernel_.draw(ctx.shared, sideWidth);
  ImGui::EndChild();
  recordItem(ctx.shared, "inside_side");
  hoveredKey_ = nextHoveredKey_;
  hoveredDim_ = nextHoveredDim_;
  nextHoveredKey_ = nextHoveredDim_ = -1;
  nlohmann::json& facts = ctx.shared.facts["inside"];
  facts["layer"] = key_.layer;
  facts["head"] = key_.head;
  facts["query"] = key_.query;
  facts["hovered_key"] = hoveredKey_;
  facts["error"] = error_;
  facts["interventions"] = interventionsLine(ctx.state);
  if (stages_) {
    double sum = 0;
    for (float w : stages_->weights) sum += w;
    facts["visible_keys"] = stages_->visibleKeys();
    facts["weights_sum"] = sum;
  }
}

void InsidePanel::drawFlow(PanelContext& ctx) {
  if (!stages_) {
    ImGui::TextWrapped("%s", error_.empty() ? "computing..." : ("waiting for this layer's internals: " + error_).c_str());
    return;
  }
  const HeadStages& s = *stages_;
  const ModelConfig& c = ctx.session.config();
  const Trace& trace = ctx.snapshot->trace;
  const int li = trace.internalIndex(key_.layer);
  const float width = ImGui::GetContentRegionAvail().x;
  const std::string& token = ctx.snapshot->tokenText[key_.query];
  char title[160];
  std::snprintf(title, sizeof title, "Layer %d, head %d, query %d %s", key_.layer, key_.head, key_.query, tokenLabel(token, 20).c_str());
  ImGui::TextUnformatted(title);
  if (c.isEncoderDecoder()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped(
        "Encoder-decoder model: this is the decoder's masked self-attention. After it the cross-attention (the "
        "Translation tab's maps) also writes to the residual stream, before the MLP.");
    ImGui::PopStyleColor();
    recordItem(ctx.shared, "inside_encoder_decoder_note");
  }
  if (!error_.empty()) {
    ImGui::TextDisabled("%s", error_.c_str());
  }
  if (!rows_.note.empty()) ImGui::TextDisabled("%s", rows_.note.c_str());
  vectorStage(x_, key_.layer == 0 ? "x = token embedding + position" : "x = the residual stream entering this layer", "(C values; blue < 0 < red)",
              "x", width);
  const bool rms = c.norm == NormKind::RmsNorm;
  const size_t stat = ((size_t)li * 2 + 0) * trace.R() + trace.rowIndex(key_.query);
  stageTitle(!c.hasNorm() ? "no norm (norm: none): q, k, v read x itself" : rms ? "RMSNorm (ln_1)" : "LayerNorm (ln_1)", "");
  if (c.hasNorm() && stat < trace.normRstd.size())
    ImGui::Text(rms ? "1 / rms = %.5f  (then times the gain)" : "mean %.5f, 1 / std %.5f  (then times the gain, plus the bias)",
                rms ? trace.normRstd[stat] : trace.normMean[stat], trace.normRstd[stat]);
  vectorStage(q_, c.hasNorm() ? "q = norm(x) W_Q" : "q = x W_Q",
              c.position_encoding == PositionEncoding::Rope ? "(D values, RoPE applied)" : "(D values)", "q", width * 0.5f);
  if (hoveredDim_ >= 0) {  // the element of q that multiplies the hovered cell of k_j
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    const float cell = (max.x - min.x) / s.D;
    ImGui::GetWindowDrawList()->AddRect(ImVec2(min.x + hoveredDim_ * cell, min.y), ImVec2(min.x + (hoveredDim_ + 1) * cell, max.y), kHighlight, 0, 0,
                                        2);
  }
  drawKeyTable(ctx);
  vectorStage(output_, "head output = sum_j softmax_j v_j", "(the weighted sum of the values)", "output", width * 0.5f);
  vectorStage(headMix_, "all heads concatenated", "(this head's D columns outlined)", "heads", width);
  {
    const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
    const float cell = (max.x - min.x) / trace.A;
    ImGui::GetWindowDrawList()->AddRect(ImVec2(min.x + key_.head * s.D * cell, min.y - 1), ImVec2(min.x + (key_.head + 1) * s.D * cell, max.y + 1),
                                        kHighlight, 0, 0, 2);
  }
  vectorStage(attnOut_, "x W_O + b_O = the attention sublayer's output", "", "attn_out", width);
  const char* replaced = "no residual connection (residual: false): the sublayer's output above replaces the stream";
  if (!c.residual) ImGui::TextDisabled("%s", replaced);
  if (c.isEncoderDecoder()) {
    vectorStage(crossOut_, "cross-attention output (ln_x, queries from here, keys and values from the encoder, its W_O)",
                "(the Translation tab shows its maps)", "cross_out", width);
    if (c.residual) vectorStage(residMid_, "residual add: x + attention + cross-attention", "", "resid_mid", width);
  } else if (c.residual) {
    vectorStage(residMid_, "residual add: x + attention", "", "resid_mid", width);
  }
  if (!c.hasFeedForward()) {
    ImGui::TextDisabled("attention-only model: no MLP");
    return;
  }
  drawMlp(ctx);
  vectorStage(mlpOut_, "MLP output", c.residual ? "(before the residual add)" : "", "mlp_out", width);
  if (!c.residual) {
    ImGui::TextDisabled("%s", replaced);
    return;
  }
  vectorStage(residOut_, c.isEncoderDecoder() ? "residual add: x + attention + cross-attention + MLP" : "residual add: x + attention + MLP",
              "(the next layer's input)", "resid_out", width);
}

void InsidePanel::drawKeyTable(PanelContext& ctx) {
  const HeadStages& s = *stages_;
  const ModelConfig& c = ctx.session.config();
  const Snapshot& snap = *ctx.snapshot;
  const float f = ImGui::GetFontSize(), width = ImGui::GetContentRegionAvail().x;
  const float rowH = ImGui::GetTextLineHeight() + 2, labelW = f * 6, numberW = f * 4.6f, barW = f * 5;
  const float cell = std::clamp((width - labelW - 3 * numberW - barW - f * 2) / (2.0f * s.D), 1.5f, 10.0f);
  const float stripW = cell * s.D;
  const bool alibi = c.position_encoding == PositionEncoding::Alibi;
  // Softmax bars are drawn against the largest weight when that is under a half (a long prompt
  // spreads the weights thin: 4096 keys at ~0.0002 would be bars of no width); the title says so.
  float largest = 0.0f;
  for (int j = 0; j < s.keys; ++j)
    if (!s.masked[j]) largest = std::max(largest, s.weights[j]);
  const float barScale = largest > 0.0f && largest < 0.5f ? 1.0f / largest : 1.0f;
  char barNote[64] = "";
  if (barScale != 1.0f) std::snprintf(barNote, sizeof barNote, "(softmax*: bars against the largest weight, %.2g)", largest);
  stageTitle("every key j: k_j, q·k_j, / sqrt(D), the mask, softmax; and v_j", barNote);
  // Column left edges: token, k_j, q·k, scaled, masked score, softmax bar, v_j.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  float x[7];
  x[0] = origin.x;
  x[1] = x[0] + labelW;
  x[2] = x[1] + stripW + f * 0.4f;
  x[3] = x[2] + numberW;
  x[4] = x[3] + numberW;
  x[5] = x[4] + numberW;
  x[6] = x[5] + barW + f * 0.4f;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const char* headers[7] = {"key j", "k_j", "q·k_j", alibi ? "/sqrt(D)+bias" : "/sqrt(D)", "masked", barScale != 1.0f ? "softmax*" : "softmax",
                            "v_j"};
  for (int i = 0; i < 7; ++i) draw->AddText(ImVec2(x[i], origin.y), dim, headers[i]);
  const float y0 = origin.y + rowH;
  // The k_j and v_j strips: one texture each, one row per key.
  int row = -1;
  ImGui::SetCursorScreenPos(ImVec2(x[1], y0));
  if (int col = keys_.draw(ImVec2(stripW, rowH * s.keys), &row); col >= 0) {
    nextHoveredKey_ = row;
    nextHoveredDim_ = col;
    ImGui::SetTooltip("k_%d[%d] = %.7g\n(times q[%d] = %.7g in q·k_%d)", row, col, keys_.value(row, col), col, s.q[col], row);
  }
  ImGui::SetCursorScreenPos(ImVec2(x[6], y0));
  if (int col = values_.draw(ImVec2(stripW, rowH * s.keys), &row); col >= 0) {
    nextHoveredKey_ = row;
    nextHoveredDim_ = col;
    ImGui::SetTooltip("v_%d[%d] = %.7g\n(weighted by softmax %.5f)", row, col, values_.value(row, col), s.weights[row]);
  }
  const ImVec2 mouse = ImGui::GetMousePos();
  const bool inTable = ImGui::IsWindowHovered() && mouse.x >= x[0] && mouse.x < x[6] && mouse.y >= y0 && mouse.y < y0 + rowH * s.keys;
  if (inTable && nextHoveredKey_ < 0) nextHoveredKey_ = std::clamp((int)((mouse.y - y0) / rowH), 0, s.keys - 1);
  for (int j = 0; j < s.keys; ++j) {
    const float y = y0 + j * rowH;
    const bool masked = s.masked[j];
    const ImU32 ink = masked ? dim : text;
    draw->AddText(ImVec2(x[0], y), j == s.position ? IM_COL32(255, 200, 80, 255) : ink,
                  tokenLabel(snap.tokenText[std::min<size_t>(j, snap.tokenText.size() - 1)], 7).c_str());
    char number[32];
    std::snprintf(number, sizeof number, "%.3f", s.dots[j]);
    draw->AddText(ImVec2(x[2], y), ink, number);
    std::snprintf(number, sizeof number, "%.3f", s.scaled[j]);
    draw->AddText(ImVec2(x[3], y), ink, number);
    if (masked) draw->AddText(ImVec2(x[4], y), dim, "-inf");
    else {
      std::snprintf(number, sizeof number, "%.3f", s.scores[j]);
      draw->AddText(ImVec2(x[4], y), ink, number);
    }
    if (masked) draw->AddRectFilled(ImVec2(x[5], y + 2), ImVec2(x[5] + barW - f * 0.4f, y + rowH - 2), IM_COL32(128, 128, 128, 60));
    else
      draw->AddRectFilled(ImVec2(x[5], y + 2), ImVec2(x[5] + (barW - f * 0.4f) * s.weights[j] * barScale, y + rowH - 2),
                          perceptualColor(s.weights[j] * barScale));
  }
  if (hoveredKey_ >= 0 && hoveredKey_ < s.keys) {
    const float y = y0 + hoveredKey_ * rowH;
    draw->AddRect(ImVec2(x[0] - 2, y), ImVec2(x[6] + stripW + 2, y + rowH), kHighlight, 0, 0, 2);
    if (hoveredDim_ >= 0) {
      const float left = hoveredDim_ * cell;
      draw->AddRect(ImVec2(x[1] + left, y), ImVec2(x[1] + left + cell, y + rowH), IM_COL32(255, 255, 255, 255));
      draw->AddRect(ImVec2(x[6] + left, y), ImVec2(x[6] + left + cell, y + rowH), IM_COL32(255, 255, 255, 255));
    }
  }
  if (inTable && (mouse.x < x[1] || (mouse.x >= x[2] && mouse.x < x[6]))) {
    const int j = nextHoveredKey_;
    ImGui::SetTooltip("key %d %s%s\nq·k_j = %.7g\n/ sqrt(%d)%s = %.7g\n%s\nsoftmax weight = %.7g", j,
                      tokenLabel(snap.tokenText[std::min<size_t>(j, snap.tokenText.size() - 1)], 30).c_str(),
                      s.masked[j] ? "  (masked: the query cannot see it)" : "", s.dots[j], s.D, alibi ? " + ALiBi bias" : "", s.scaled[j],
                      s.masked[j] ? "score -inf" : "score (as softmax sees it) as above", s.weights[j]);
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, y0 + rowH * s.keys));
  ImGui::Dummy(ImVec2(width, 0));
  ctx.shared.regions["inside_keys"] = {x[0], y0, x[6] + stripW, y0 + rowH * s.keys};
  ImGui::TextDisabled(
      "softmax weights sum to %.6f over %d visible keys; they are the Attention panel's row %d",
      [&] {
        double sum = 0;
        for (float w : s.weights) sum += w;
        return sum;
      }(),
      s.visibleKeys(), s.query);
}

void InsidePanel::drawMlp(PanelContext& ctx) {
  const Trace& trace = ctx.snapshot->trace;
  const ModelConfig& c = ctx.session.config();
  const int li = trace.internalIndex(key_.layer);
  const bool rms = c.norm == NormKind::RmsNorm;
  const size_t stat = ((size_t)li * 2 + 1) * trace.R() + trace.rowIndex(key_.query);
  stageTitle(!c.hasNorm() ? "no norm (norm: none): the MLP reads the stream itself" : rms ? "RMSNorm (ln_2)" : "LayerNorm (ln_2)", "");
  if (c.hasNorm() && c.isEncoderDecoder())  // the captured statistics are of the residual before the cross-attention (ln_x's input)
    ImGui::TextDisabled("(its input comes after the cross-attention: statistics not captured)");
  else if (c.hasNorm() && stat < trace.normRstd.size())
    ImGui::Text(rms ? "1 / rms = %.5f" : "mean %.5f, 1 / std %.5f", rms ? trace.normRstd[stat] : trace.normMean[stat], trace.normRstd[stat]);
  const size_t F = trace.F, row = ((size_t)li * trace.R() + trace.rowIndex(key_.query)) * F;
  const bool swiglu = c.activation == Activation::SwiGlu;
  stageTitle("MLP: the most active neurons", swiglu ? "(SwiGLU: silu(gate) * up)" : "(by |activation|)");
  if (F == 0 || trace.mlpPost.size() < row + F) {
    ImGui::TextDisabled(c.isMoe() ? "mixture of experts: the Experts panel shows the routing" : "(not captured)");
    return;
  }
  const std::span<const float> post(trace.mlpPost.data() + row, F);
  const std::vector<int> top = topByMagnitude(post, 8);
  const float scale = std::abs(post[top.front()]);
  const float barWidth = ImGui::GetContentRegionAvail().x;
  BarTable figure{
      "mlp_neurons", "MLP: the most active neurons, layer " + std::to_string(key_.layer) + ", query " + std::to_string(key_.query), {}, {}};
  figure.columns.push_back({"|activation|", scale, {}});
  for (int n : top) {
    char label[96];
    const float pre = trace.mlpPre.size() >= row + F ? trace.mlpPre[row + n] : NAN;
    if (swiglu && trace.mlpGate.size() >= row + F)
      std::snprintf(label, sizeof label, "neuron %d: up %.3f, gate %.3f -> %.4f", n, pre, trace.mlpGate[row + n], post[n]);
    else std::snprintf(label, sizeof label, "neuron %d: %.3f -> %.4f", n, pre, post[n]);
    if (drawBar(std::abs(post[n]), scale, barWidth, post[n] < 0 ? BarStyle::Rest : BarStyle::Normal, label))
      ImGui::SetTooltip("neuron %d of %zu\nbefore the nonlinearity %.7g\nafter %.7g%s", n, F, pre, post[n],
                        post[n] < 0 ? " (negative: grey-blue bar)" : "");
    figure.rowLabels.push_back("neuron " + std::to_string(n));
    figure.columns[0].bars.push_back({std::abs(post[n]), label, barColor(post[n] < 0 ? BarStyle::Rest : BarStyle::Normal)});
  }
  addBarTableFigure(std::move(figure));
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeInsidePanel() { return std::make_unique<InsidePanel>(); }

}  // namespace tscope::gui

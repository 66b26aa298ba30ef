// The Fill-in-the-blank panel (see panel_fill.h). The numbers are the snapshot's: Session::fillStage
// runs fill_mask.h's fillFromLogits on every [MASK] (what `tscope-cli fill` prints), the map is
// attentionShown of the trace; the panel only edits the prompt and lays them out.
#include "app/gui/panels/panel_fill.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/panels/panels.h"
#include "model/generate/fill_mask.h"
#include "model/nn/trace_views.h"
#include "model/tokenize/unicode_text.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kMaskColor = IM_COL32(240, 140, 40, 255);
// What the panel offers when the open model predicts the next token instead.
constexpr const char* kBlankPrompt = "The President of the United [MASK] came back to the White House and [MASK] that the election would be held";

std::string shippedBert() { return (std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets/models/brown-bert").string(); }
// The causal model the toggle reads the same sentence with: brown-bert's size and BPE, with a mask.
std::string shippedGpt() { return (std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets/models/brown-small").string(); }

void drawNotAMaskedModel(PanelContext& ctx) {
  const std::string problem = fillProblem(ctx.session.config(), ctx.session.maskedTokens());
  ImGui::TextWrapped("%s.", problem.c_str());
  ImGui::TextWrapped(
      "A masked language model (BERT's family, encoder-only) is trained to fill in hidden words from both sides of them, so its "
      "attention has no causal mask; a GPT-style model only ever continues a text to the right.");
  ctx.shared.facts["fill"] = {{"masked_lm", false}, {"problem", problem}};
  ctx.shared.exportNote = problem;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(shippedBert()) / "config.json", ec)) return;
  if (ImGui::Button("Open brown-bert with a blank")) {
    ctx.openModel = shippedBert();
    ctx.openPrompt = kBlankPrompt;
  }
  recordItem(ctx.shared, "fill_open_bert");
}

}  // namespace

void FillPanel::setPrompt(PanelContext& ctx, const std::vector<int>& ids) {
  ctx.state.prompt = promptFromTokens(*ctx.session.tokenizer(), ctx.session.maskedTokens(), ids);
  ctx.state.generatedIds.clear();
  ctx.repost = true;
}

void FillPanel::drawSentence(PanelContext& ctx, const Snapshot& s) {
  const MaskedLmTokens& specials = ctx.session.maskedTokens();
  const bool current = s.request.prompt == ctx.state.prompt;  // clicks edit the text the snapshot shows
  if (hiddenIn_ != ctx.state.prompt) hidden_.clear();
  ImGui::TextWrapped("Click a word to hide it behind [MASK], click a blank to bring its word back. Typing [MASK] in the prompt works too.");
  const int T = static_cast<int>(s.ids.size());
  ImGui::BeginDisabled(!current);
  for (int t = 0; t < T; ++t) {
    const bool special = specials.isSpecial(s.ids[t]) && s.ids[t] != specials.mask;
    const bool masked = s.ids[t] == specials.mask;
    // The token as written (a leading space shows as the gap before it), cut when very long.
    const std::string text = s.tokenText[t].size() > 24 ? tokenLabel(s.tokenText[t], 18) : s.tokenText[t];
    const std::string label = (masked ? std::string("[MASK]") : text) + "##fill" + std::to_string(t);
    if (t > 0) sameLineIfFits(ImGui::CalcTextSize(label.c_str(), nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2);
    if (special) {  // [CLS] and [SEP] frame the text; they cannot be hidden
      ImGui::TextDisabled("%s", s.tokenText[t].c_str());
      continue;
    }
    if (masked) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::ColorConvertU32ToFloat4(kMaskColor));
    const bool clicked = ImGui::Button(label.c_str());
    if (masked) ImGui::PopStyleColor();
    recordItem(ctx.shared, "fill_token_" + std::to_string(t));
    if (!clicked) continue;
    std::vector<int> ids = s.ids;
    if (masked) {
      const auto kept = hidden_.find(t);
      const auto fill = std::find_if(s.maskFills.begin(), s.maskFills.end(), [&](const MaskFill& f) { return f.position == t; });
      if (kept != hidden_.end()) ids[t] = kept->second;
      else if (fill != s.maskFills.end() && !fill->top.empty()) ids[t] = fill->top.front().id;
      else continue;
      hidden_.erase(t);
    } else {
      hidden_[t] = ids[t];
      ids[t] = specials.mask;
    }
    setPrompt(ctx, ids);
    hiddenIn_ = ctx.state.prompt;
  }
  ImGui::EndDisabled();
  drawSegments(ctx, s);
}

// BERT's token types: a [SEP] typed between two sentences starts segment B (a sentence pair).
void FillPanel::drawSegments(PanelContext& ctx, const Snapshot& s) {
  const ModelConfig& c = ctx.session.config();
  if (!c.hasTokenTypes()) return;
  const std::vector<int> types = tokenTypes(c, s.ids.data(), s.ids.size());
  ctx.shared.facts["fill_segments"] = types;
  const int segments = types.empty() ? 0 : types.back() + 1;
  if (c.sep_token_id < 0) ImGui::TextDisabled("Token types: this model's [SEP] is unknown, so every token is segment A.");
  else if (segments <= 1) ImGui::TextDisabled("Token types: one segment (A). Type [SEP] between two sentences to make a pair: B after it.");
  else {
    const auto firstB = std::find(types.begin(), types.end(), 1) - types.begin();
    ImGui::TextDisabled(
        "Token types: %d segments. A is tokens 0-%d, B starts at token %d (after the first [SEP]); each adds its row of the "
        "token type table to the embedding.",
        segments, static_cast<int>(firstB) - 1, static_cast<int>(firstB));
  }
}

void FillPanel::drawFills(PanelContext& ctx, const Snapshot& s) {
  nlohmann::json masks = nlohmann::json::array();
  std::vector<float> table;
  const int K = Snapshot::kFillCandidates;
  if (s.maskFills.empty()) ImGui::TextDisabled("No blank yet: click a word above, or type [MASK] in the prompt.");
  const float font = ImGui::GetFontSize(), width = std::min(ImGui::GetContentRegionAvail().x, font * 24);
  for (size_t k = 0; k < s.maskFills.size(); ++k) {
    const MaskFill& fill = s.maskFills[k];
    ImGui::Spacing();
    ImGui::Text("Blank %zu (token %d): what the model would put there", k + 1, fill.position);
    nlohmann::json top = nlohmann::json::array();
    BarTable bars;
    bars.name = "fill_blank_" + std::to_string(k + 1);
    bars.title = "Blank " + std::to_string(k + 1) + ": what fills it";
    bars.columns.resize(1);
    bars.columns[0].header = "probability";
    bars.columns[0].scaleMax = fill.top.empty() ? 1.0f : static_cast<float>(fill.top.front().p);
    for (size_t i = 0; i < fill.top.size(); ++i) {
      const FillCandidate& c = fill.top[i];
      const std::string token = ctx.session.tokenizer()->tokenText(c.id);
      top.push_back({{"token", token}, {"id", c.id}, {"p", c.p}});
      table.push_back(static_cast<float>(c.p));
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.1f%%", 100 * c.p);
      bars.rowLabels.push_back(tokenLabel(token, 18));
      BarTable::Bar bar;
      bar.value = static_cast<float>(c.p);
      bar.label = percent;
      bar.colour = barColor(i == 0 ? BarStyle::Highlighted : BarStyle::Normal);
      bars.columns[0].bars.push_back(bar);
      ImGui::PushID(static_cast<int>(k * 1000 + i));
      if (ImGui::SmallButton("put in")) {
        std::vector<int> ids = s.ids;
        ids[fill.position] = c.id;
        hidden_.erase(fill.position);
        setPrompt(ctx, ids);
        hiddenIn_ = ctx.state.prompt;
      }
      recordItem(ctx.shared, "fill_choice_" + std::to_string(k) + "_" + std::to_string(i));
      ImGui::PopID();
      ImGui::SameLine();
      char value[64];
      std::snprintf(value, sizeof value, "%s  %.1f%%", tokenLabel(token, 18).c_str(), 100 * c.p);
      drawBar(static_cast<float>(c.p), static_cast<float>(fill.top.front().p), width, i == 0 ? BarStyle::Highlighted : BarStyle::Normal, value);
    }
    for (int i = static_cast<int>(fill.top.size()); i < K; ++i) table.push_back(0);
    masks.push_back({{"position", fill.position}, {"top", top}});
    addBarTableFigure(std::move(bars));
  }
  ctx.shared.facts["fill"] = {{"masked_lm", true}, {"masks", masks}, {"tokens", s.tokenText}};
  if (!s.maskFills.empty()) ctx.shared.exportable = {"fill_probabilities", table, static_cast<int>(s.maskFills.size()), K};
  else ctx.shared.exportNote = "there is no blank to export: click a word to hide it";
}

void FillPanel::drawAttention(PanelContext& ctx, const Snapshot& s) {
  const ModelConfig& c = ctx.session.config();
  ImGui::Spacing();
  ImGui::TextWrapped("Attention of one head: every token looks at every other, left and right (no causal mask).");
  layerHeadSliders(&ctx.shared, {.region = "fill"}, ctx.state.layer, c.n_layer, ctx.state.head, c.n_head);
  ImGui::SameLine();
  ImGui::Checkbox("grey what a causal model could not see", &causalView_);
  recordItem(ctx.shared, "fill_causal_view");
  ImGui::SameLine();
  ImGui::Checkbox("beside it: brown-small (GPT-style)", &throughGpt_);
  recordItem(ctx.shared, "fill_through_gpt");
  if (throughGpt_ && ImGui::BeginTable("fill_maps", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableNextColumn();
    drawBertMap(ctx, s);
    ImGui::TableNextColumn();
    drawThroughGpt(ctx);
    ImGui::EndTable();
    return;
  }
  drawBertMap(ctx, s);
}

void FillMap::update(PanelContext& ctx, const Snapshot& s, const Snapshot::LayerMaps& maps, const ModelConfig& c, int layer, int head) {
  if (builtFor == s.id && builtLayer == layer && builtHead == head) return;
  const int T = s.trace.T;
  shown = attentionShown(*maps.rows, c, maps.index, head, false, false);
  map.setData(ctx.renderer, shown.data(), T, T, 0.0f, 1.0f, Colormap::Perceptual);
  labels.clear();
  for (int t = 0; t < T; ++t) labels.push_back(tokenLabel(s.tokenText[t], 12));
  builtFor = s.id;
  builtLayer = layer;
  builtHead = head;
}

TokenHeatmapHit FillMap::draw(PanelContext& ctx, const char* region, int selectedRow, std::function<std::string(int, int)> readout) {
  const int T = static_cast<int>(labels.size());
  const float labelWidth = TokenHeatmap::labelWidthFor(labels, ImGui::GetFontSize() * 8);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float cell =
      TokenHeatmap::squareCell(ImVec2(avail.x, std::max(avail.y, ImGui::GetFontSize() * 12)), T, T, labelWidth, ImGui::GetFontSize() * 2);
  TokenHeatmapStyle style{.rowLabels = &labels,
                          .labelWidth = labelWidth,
                          .colLabels = &labels,
                          .colIndicesWhenNarrow = true,
                          .selectedRow = selectedRow,
                          .shared = &ctx.shared,
                          .region = region,
                          .scale = ScalePlace::Right};
  style.readout = [&](int row, int col) { return col < 0 ? std::string() : readout(row, col); };
  return map.draw(ctx.renderer, ImVec2(cell, cell), style);
}

void FillMap::greyFuture(const TokenHeatmapHit& hit, int T) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int r = 0; r + 1 < T; ++r) draw->AddRectFilled(hit.cellMin(r, r + 1), hit.cellMax(r, T - 1), IM_COL32(40, 40, 40, 200));
}

std::string FillMap::looksAt(int row, int col) const {
  char p[32];
  std::snprintf(p, sizeof p, "%.3f", shown[(size_t)row * labels.size() + col]);
  return labels[row] + " looks at " + labels[col] + ": " + p;
}

void FillPanel::drawBertMap(PanelContext& ctx, const Snapshot& s) {
  const ModelConfig& c = ctx.session.config();
  const std::optional<Snapshot::LayerMaps> maps = s.maps(ctx.state.layer);
  if (!maps) {
    ImGui::TextDisabled("%s", s.mapsMissing(ctx.state.layer).c_str());
    return;
  }
  const int T = s.trace.T;
  bert_.update(ctx, s, *maps, c, ctx.state.layer, ctx.state.head);
  const TokenHeatmapHit hit = bert_.draw(
      ctx, "fill_attention", 0,  // [CLS]: what the sentence's first token gathers (BERT's classifiers read it)
      [&](int row, int col) { return bert_.looksAt(row, col) + (causalView_ && col > row ? "\n(a causal model could not see this key)" : ""); });
  if (causalView_) FillMap::greyFuture(hit, T);
  ImGui::TextDisabled("Outlined row: [CLS], the token in front of every input, which gathers the whole sentence.");
}

void FillPanel::drawThroughGpt(PanelContext& ctx) {
  nlohmann::json& facts = ctx.shared.facts["fill"]["gpt"];
  gpt_.want(shippedGpt(), ctx.session.backendChoice());
  Session* gpt = gpt_.session();
  facts = {{"loading", gpt_.loading()}, {"problem", gpt_.problem()}};
  if (!gpt) {
    ImGui::TextDisabled("%s", !gpt_.problem().empty() ? gpt_.problem().c_str() : "loading brown-small...");
    return;
  }
  // The same words for a model with no [MASK]: each blank becomes "_".
  AppState side = ctx.state;
  static_cast<ForwardInputs&>(side) = ForwardInputs{};
  side.prompt = ctx.state.prompt;
  unicode::replaceAll(side.prompt, "[MASK]", "_");
  static_cast<SessionScratch&>(side) = SessionScratch{};
  const ModelConfig& c = gpt->config();
  side.layer = std::clamp(side.layer, 0, c.n_layer - 1);
  const int head = std::clamp(ctx.state.head, 0, c.n_head - 1);
  gpt_.post(requestFor(side, c));
  const std::shared_ptr<const Snapshot> s = gpt_.latest();
  if (!s || s->ids.empty() || !s->error.empty() || s->request.prompt != side.prompt) {
    ImGui::TextDisabled("%s", s && !s->error.empty() ? s->error.c_str() : "computing...");
    return;
  }
  const std::optional<Snapshot::LayerMaps> maps = s->maps(side.layer);
  if (!maps) {
    ImGui::TextDisabled("%s", s->mapsMissing(side.layer).c_str());
    return;
  }
  const int T = s->trace.T;
  gptMap_.update(ctx, *s, *maps, c, side.layer, head);
  ImGui::TextWrapped("brown-small, layer %d head %d: a causal model, each token sees only those before it", side.layer, head);
  const std::vector<std::string>& labels = gptMap_.labels;
  const TokenHeatmapHit hit = gptMap_.draw(ctx, "fill_gpt_attention", -1, [&](int row, int col) {
    return col > row ? labels[row] + " cannot see " + labels[col] + ": it comes later (causal mask)" : gptMap_.looksAt(row, col);
  });
  FillMap::greyFuture(hit, T);
  double future = 0;  // the weight on later keys: 0 under the causal mask (masked cells are NaN, drawn as masked)
  for (int r = 0; r < T; ++r)
    for (int k = r + 1; k < T; ++k)
      if (std::isfinite(gptMap_.shown[(size_t)r * T + k])) future += gptMap_.shown[(size_t)r * T + k];
  facts["tokens"] = T;
  facts["snapshot"] = s->id;
  facts["prompt"] = s->request.prompt;
  facts["layer"] = side.layer;
  facts["head"] = head;
  facts["future_weight"] = future;
  facts["last_row"] = std::vector<float>(gptMap_.shown.end() - T, gptMap_.shown.end());
}

void FillPanel::draw(PanelContext& ctx) {
  if (!ctx.session.config().masked_lm || !ctx.session.maskedTokens().complete()) {
    drawNotAMaskedModel(ctx);
    return;
  }
  const Snapshot* s = ctx.snapshot;
  if (!s || s->ids.empty()) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
    if (s && !s->error.empty()) ctx.shared.facts["fill"] = {{"masked_lm", true}, {"error", s->error}};
    return;
  }
  drawSentence(ctx, *s);
  drawFills(ctx, *s);
  drawAttention(ctx, *s);
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeFillPanel() { return std::make_unique<FillPanel>(); }

}  // namespace tscope::gui

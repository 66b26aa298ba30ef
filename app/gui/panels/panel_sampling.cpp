// Next-token panel: the distribution over the next token at each stage of the sampling pipeline
// (softmax, temperature, top-k, top-p) as aligned bar charts under live knobs; Step and Generate N
// (the session runs the engine's generation on its worker: the tokens tscope-cli generate draws,
// with progress and Stop); beam search drawn as a tree; and the KV cache: its size and, on
// request, measured decode speed with and without it.
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/beam_tree.h"
#include "model/theory/cost.h"
#include "app/gui/panels/panel_sampling.h"

#include <memory>
#include "model/nn/trace_views.h"

namespace tscope::gui {

namespace {

constexpr int kTopTokens = 12;
constexpr int kStages = 4;

const std::vector<float>& stageProbs(const LogitStages& stages, int stage) {
  switch (stage) {
    case 0: return stages.raw;
    case 1: return stages.afterTemperature;
    case 2: return stages.afterTopK;
    default: return stages.afterTopP;
  }
}

// True when the snapshot was computed for exactly the prompt and knobs now on screen.
bool isCurrent(const Snapshot& s, const AppState& st) {
  const SamplingParams &a = s.request.sampling, &b = st.sampling;
  return s.error.empty() && !s.stages.raw.empty() && s.request.prompt == st.prompt && a.temperature == b.temperature && a.topK == b.topK &&
         a.topP == b.topP;
}

void rebuild(SamplingView& view, const Snapshot& s) {
  view.topIds = topTokenIds(s.stages.raw, kTopTokens);
  view.keptCounts.resize(kStages);
  for (int stage = 0; stage < kStages; ++stage) view.keptCounts[stage] = tokensKept(stageProbs(s.stages, stage));
  view.builtFor = s.id;
}

// Asks the session to generate `count` tokens from the prompt on screen (session_generate.cpp).
void requestGeneration(PanelContext& ctx, SamplingView& view, int count) {
  ctx.generateTokens = count;
  ctx.repost = true;
  view.awaitingGeneration = true;
}

// Width of a slider or input of `itemWidth` with its label on the right.
float knobWidth(float itemWidth, const char* label) { return itemWidth + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x; }

void drawKnobs(PanelContext& ctx, SamplingView& view) {
  SamplingParams& p = ctx.state.sampling;
  const float width = ImGui::GetFontSize() * 9;
  ImGui::SetNextItemWidth(width);
  ctx.repost |= ImGui::SliderFloat("temperature", &p.temperature, 0.05f, 3.0f, "%.2f", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Divides the logits: below 1 sharpens the distribution, above 1 flattens it.");
  sameLineIfFits(knobWidth(width, "top-k"));
  ImGui::SetNextItemWidth(width);
  ctx.repost |= ImGui::SliderInt("top-k", &p.topK, 0, 100, p.topK == 0 ? "off" : "%d", ImGuiSliderFlags_AlwaysClamp);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep only the k most probable tokens (0 = off).");
  sameLineIfFits(knobWidth(width, "top-p"));
  ImGui::SetNextItemWidth(width);
  ctx.repost |= ImGui::SliderFloat("top-p", &p.topP, 0.05f, 1.0f, p.topP >= 1.0f ? "off (1.00)" : "%.2f", ImGuiSliderFlags_AlwaysClamp);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep the smallest set of most probable tokens whose probabilities add up to p (1 = off).");
  sameLineIfFits(knobWidth(width * 0.7f, "seed"));
  ImGui::SetNextItemWidth(width * 0.7f);
  // A new seed (or any knob) starts a new random stream at the next Step.
  if (ImGui::InputScalar("seed", ImGuiDataType_U64, &p.seed)) ctx.repost = true;
  sameLineIfFits(knobWidth(ImGui::GetFrameHeight(), "greedy (argmax)"));
  ctx.repost |= ImGui::Checkbox("greedy (argmax)", &p.greedy);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Always take the most probable token: the knobs no longer change the choice.");
  sameLineIfFits(knobWidth(ImGui::GetFrameHeight(), "same scale for every stage"));
  ImGui::Checkbox("same scale for every stage", &view.sharedScale);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("On: bar lengths compare across stages. Off: each stage is scaled to its own largest bar.");
}

void drawTokenTooltip(const Snapshot& s, int id, const Tokenizer* tokenizer) {
  ImGui::BeginTooltip();
  ImGui::Text("token %s, id %d", tokenLabel(tokenizer ? tokenizer->tokenText(id) : "", 40).c_str(), id);
  const std::vector<float>& logits = s.trace.logits;
  const size_t V = s.stages.raw.size();
  if (V > 0 && logits.size() >= V) ImGui::Text("logit %.3f", logits[logits.size() - V + id]);
  const char* names[kStages] = {"softmax(logits)", "after temperature", "after top-k", "after top-p (final)"};
  if (ImGui::BeginTable("stages", 2)) {
    for (int stage = 0; stage < kStages; ++stage) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(names[stage]);
      ImGui::TableNextColumn();
      ImGui::Text("%.6f", stageProbs(s.stages, stage)[id]);
    }
    ImGui::EndTable();
  }
  ImGui::EndTooltip();
}

void drawStageTable(PanelContext& ctx, const SamplingView& view, const Snapshot& s) {
  const SamplingParams& p = s.request.sampling;
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  const int V = static_cast<int>(s.stages.raw.size());
  // One probability scale for every stage (renormalisation shows as longer bars), or one each.
  std::array<float, kStages> scaleMax{};
  for (int stage = 0; stage < kStages; ++stage)
    for (int id : view.topIds) scaleMax[stage] = std::max(scaleMax[stage], stageProbs(s.stages, stage)[id]);
  if (view.sharedScale) scaleMax.fill(*std::max_element(scaleMax.begin(), scaleMax.end()));
  char headers[kStages][64];
  std::snprintf(headers[0], sizeof headers[0], "1. softmax(logits)");
  std::snprintf(headers[1], sizeof headers[1], "2. temperature %.2f", p.temperature);
  if (p.topK > 0) std::snprintf(headers[2], sizeof headers[2], "3. top-k %d", p.topK);
  else std::snprintf(headers[2], sizeof headers[2], "3. top-k off");
  if (p.topP < 1.0f) std::snprintf(headers[3], sizeof headers[3], "4. top-p %.2f: final", p.topP);
  else std::snprintf(headers[3], sizeof headers[3], "4. top-p off: final");
  const char* explanations[kStages] = {
      "The model's own distribution: softmax of the raw logits.", "softmax(logits / temperature): below 1 sharpens, above 1 flattens.",
      "Only the k most probable tokens keep their probability; the rest get 0 and the kept ones are renormalised.",
      "The smallest set of most probable tokens whose probabilities reach p, renormalised: the distribution tokens are drawn from."};
  const ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchSame;
  if (!ImGui::BeginTable("stages", kStages + 1, flags)) return;
  ImGui::TableSetupColumn("next token", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 9);
  for (int stage = 0; stage < kStages; ++stage) ImGui::TableSetupColumn(headers[stage]);
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  for (int column = 0; column <= kStages; ++column) {
    ImGui::TableSetColumnIndex(column);
    ImGui::TableHeader(ImGui::TableGetColumnName(column));
    if (column > 0 && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", explanations[column - 1]);
  }
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("tokens kept");
  for (int stage = 0; stage < kStages; ++stage) {
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%d of %d", view.keptCounts[stage], V);
  }
  std::array<float, kStages> shownMass{};
  int hoveredId = -1;
  // The same bars as a vector figure (Export SVG).
  BarTable figure{"next_token_stages", "Next token after the prompt: the sampling stages", {}, {}};
  for (int stage = 0; stage < kStages; ++stage) figure.columns.push_back({headers[stage], scaleMax[stage], {}});
  for (size_t row = 0; row < view.topIds.size(); ++row) {
    const int id = view.topIds[row];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    figure.rowLabels.push_back(tokenLabel(tokenizer ? tokenizer->tokenText(id) : "?"));
    ImGui::TextUnformatted(figure.rowLabels.back().c_str());
    if (ImGui::IsItemHovered()) hoveredId = id;
    for (int stage = 0; stage < kStages; ++stage) {
      ImGui::TableNextColumn();
      const float prob = stageProbs(s.stages, stage)[id];
      shownMass[stage] += prob;
      char label[32];
      std::snprintf(label, sizeof label, prob > 0 ? (prob >= 0.001f ? "%.3f" : "%.1e") : "filtered", prob);
      const BarStyle style = prob <= 0 ? BarStyle::Filtered : BarStyle::Normal;
      if (drawBar(prob, scaleMax[stage], ImGui::GetContentRegionAvail().x, style, label)) hoveredId = id;
      figure.columns[static_cast<size_t>(stage)].bars.push_back({prob, label, barColor(style), style == BarStyle::Filtered});
    }
  }
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("other %d tokens", V - (int)view.topIds.size());
  figure.rowLabels.push_back("other " + std::to_string(V - (int)view.topIds.size()) + " tokens");
  for (int stage = 0; stage < kStages; ++stage) {
    ImGui::TableNextColumn();
    const float rest = std::max(0.0f, 1.0f - shownMass[stage]);
    char label[48];
    std::snprintf(label, sizeof label, "%.3f in all", rest);
    drawBar(rest, std::max(scaleMax[stage], rest), ImGui::GetContentRegionAvail().x, BarStyle::Rest, label);
    figure.columns[static_cast<size_t>(stage)].bars.push_back({rest, label, barColor(BarStyle::Rest), false, std::max(scaleMax[stage], rest)});
  }
  ImGui::EndTable();
  addBarTableFigure(std::move(figure));
  if (hoveredId >= 0) drawTokenTooltip(s, hoveredId, tokenizer);
}

void drawGenerateControls(PanelContext& ctx, SamplingView& view, bool canStep, bool contextFull) {
  const AppState& st = ctx.state;
  const GenerationProgress progress = ctx.session.generationProgress();
  if (view.awaitingGeneration && !ctx.session.busy()) view.awaitingGeneration = false;
  const bool generating = view.awaitingGeneration || progress.asked > 0;
  ImGui::BeginDisabled(!canStep || generating);
  if (ImGui::Button("Step")) requestGeneration(ctx, view, 1);
  recordItem(ctx.shared, "step");
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(
        "Draw the next token and append it. Steps continue one random stream: k Steps give the tokens of\n"
        "tscope-cli generate --prompt P --seed S --max-new k with the same knobs.");
  ImGui::SameLine();
  char generateLabel[32];
  std::snprintf(generateLabel, sizeof generateLabel, "Generate %d", view.generateCount);
  if (ImGui::Button(generateLabel)) requestGeneration(ctx, view, view.generateCount);
  recordItem(ctx.shared, "generate");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  ImGui::SliderInt("tokens", &view.generateCount, 1, 64, "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::SameLine();
  ImGui::BeginDisabled(!generating);
  if (ImGui::Button("Stop")) ctx.session.stopGeneration();
  recordItem(ctx.shared, "stop");
  ImGui::EndDisabled();
  if (generating) {
    char overlay[64];
    std::snprintf(overlay, sizeof overlay, "generating: %d of %d tokens", progress.done, progress.asked);
    sameLineIfFits(ImGui::GetFontSize() * 16);
    ImGui::ProgressBar(progress.asked > 0 ? (float)progress.done / progress.asked : 0.0f, ImVec2(-FLT_MIN, 0),
                       progress.asked > 0 ? overlay : "starting...");
    return;
  }
  char status[200];
  const Tokenizer* tokenizer = ctx.session.tokenizer();
  if (contextFull) {
    std::snprintf(status, sizeof status, "the context (%d tokens) is full: shorten the prompt to generate", ctx.session.config().n_positions);
  } else if (view.lastToken >= 0 && tokenizer && view.lastToken < tokenizer->vocabSize()) {
    const std::string token = tokenLabel(tokenizer->tokenText(view.lastToken), 24);
    char prob[32] = "";
    if (std::isfinite(view.lastTokenProb))
      std::snprintf(prob, sizeof prob, view.lastTokenProb >= 0.001f ? "p = %.3f" : "p = %.1e", view.lastTokenProb);
    if (view.lastWasGreedy) std::snprintf(status, sizeof status, "last: %s, the most probable token (%s)", token.c_str(), prob);
    else
      std::snprintf(status, sizeof status, "last: %s (%s), token %d of seed %llu's stream", token.c_str(), prob, view.streamTokens,
                    (unsigned long long)view.streamSeed);
  } else {
    std::snprintf(status, sizeof status, "%s",
                  st.sampling.greedy ? "Step appends the most probable token to the prompt"
                                     : "Step draws a token from the final distribution and appends it to the prompt");
  }
  sameLineIfFits(std::min(ImGui::CalcTextSize(status).x, ImGui::GetFontSize() * 16));
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(view.lastToken >= 0 || contextFull ? ImGuiCol_Text : ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", status);
  ImGui::PopStyleColor();
  if (!view.lastStop.empty() && !contextFull) ImGui::TextDisabled("%s", view.lastStop.c_str());
}

void drawBeamSection(PanelContext& ctx, const Snapshot* s, ImVec2 size) {
  AppState& st = ctx.state;
  ImGui::BeginChild("beam", size);
  const float sliderWidth = ImGui::GetFontSize() * 6;
  ImGui::TextUnformatted("Beam search");
  sameLineIfFits(knobWidth(sliderWidth, "width"));
  ImGui::SetNextItemWidth(sliderWidth);
  ctx.repost |= ImGui::SliderInt("width", &st.beamWidth, 0, 8, st.beamWidth == 0 ? "off" : "%d", ImGuiSliderFlags_AlwaysClamp);
  sameLineIfFits(knobWidth(sliderWidth, "steps"));
  ImGui::SetNextItemWidth(sliderWidth);
  ctx.repost |= ImGui::SliderInt("steps", &st.beamSteps, 1, 12, "%d", ImGuiSliderFlags_AlwaysClamp);
  if (st.beamWidth == 0) {
    ImGui::TextWrapped(
        "Beam search keeps the \"width\" most probable sequences at every step instead of one token at a "
        "time. Set a width to draw the tree of every hypothesis it expanded.");
  } else if (!s || !s->beam || s->request.beamWidth != st.beamWidth || s->request.beamSteps != st.beamSteps) {
    ImGui::TextDisabled(s && !s->error.empty() ? "no beam: the forward failed" : "computing the beam...");
  } else if (const Tokenizer* tokenizer = ctx.session.tokenizer()) {
    const BeamResult& beam = *s->beam;
    ImGui::TextColored(ImVec4(0.95f, 0.55f, 0.15f, 1.0f), "best");
    ImGui::SameLine();
    std::string best;
    for (int id : beam.bestTokens) best += tokenizer->tokenText(id);
    ImGui::TextWrapped("%s  (log p = %.2f)", tokenLabel(best, 60).c_str(), beam.bestLogProb);
    ImGui::TextColored(ImVec4(0.24f, 0.51f, 0.88f, 1.0f), "kept");
    ImGui::SameLine();
    ImGui::TextDisabled("pruned");
    const char* legend = "labels: token and cumulative log-probability; hover a node for details";
    sameLineIfFits(ImGui::CalcTextSize(legend).x);
    ImGui::TextDisabled("%s", legend);
    drawBeamTree(beam, *tokenizer, ImVec2(0, 0));
  }
  ImGui::EndChild();
}

void drawKvCacheSection(PanelContext& ctx, const Snapshot* s, ImVec2 size) {
  const ModelConfig& c = ctx.session.config();
  ImGui::BeginChild("kv cache", size);
  ImGui::TextUnformatted("KV cache");
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped(
      "Every layer keeps the keys and values of the tokens so far, so a new token attends to them "
      "without recomputing the prompt.");
  ImGui::PopStyleColor();
  const int64_t perToken = kvCacheBytesPerToken(c, 4);
  const int T = s ? static_cast<int>(s->ids.size()) : 0;
  ImGui::Text("entries: %d layers x %d tokens = %d, each a key and a value of %d heads x %d dims", c.n_layer, T, c.n_layer * T, c.kvHeads(),
              c.headDim());
  ImGui::Text("per token: 2 x %d x %d x %d x 4 bytes = %s", c.n_layer, c.kvHeads(), c.headDim(), formatBytes((double)perToken).c_str());
  if (s)
    ImGui::Text("after the prompt: %s;  the full %d-token context: %s", formatBytes((double)s->kvCacheBytes).c_str(), c.n_positions,
                formatBytes((double)perToken * c.n_positions).c_str());
  char overlay[64];
  std::snprintf(overlay, sizeof overlay, "%d / %d tokens of context", T, c.n_positions);
  ImGui::ProgressBar(c.n_positions > 0 ? (float)T / c.n_positions : 0.0f, ImVec2(-1, 0), overlay);
  if (ImGui::Checkbox("measure decode speed", &ctx.state.measureKvCache)) ctx.repost = true;
  recordItem(ctx.shared, "measure_decode");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "Decode up to 16 tokens after the prompt through the cache, then the same tokens again rerunning the whole sequence "
        "(as many as fit in 2 s).");
  if (ctx.state.measureKvCache) {
    if (!s || !s->kvTiming || !s->request.measureKvCache) {
      ImGui::TextDisabled("measuring...");
    } else if (s->kvTiming->tokens < 1 || s->kvTiming->withoutCacheTokens < 1) {
      ImGui::TextWrapped("Nothing to time: decoding needs room for two tokens after the prompt (%d of %d context positions used).", T, c.n_positions);
    } else {
      const KvCacheTiming& t = *s->kvTiming;
      ctx.shared.facts["decode_timing"] = {{"tokens", t.tokens},
                                           {"without_cache_tokens", t.withoutCacheTokens},
                                           {"with_cache_ms", t.withCacheMsPerToken},
                                           {"without_cache_ms", t.withoutCacheMsPerToken}};
      const float slowest = (float)std::max(t.withCacheMsPerToken, t.withoutCacheMsPerToken);
      const float labelWidth = ImGui::CalcTextSize("without cache ").x;
      char label[48];
      ImGui::TextUnformatted("with cache");
      ImGui::SameLine(labelWidth);
      std::snprintf(label, sizeof label, "%.2f ms/token", t.withCacheMsPerToken);
      drawBar((float)t.withCacheMsPerToken, slowest, ImGui::GetContentRegionAvail().x, BarStyle::Normal, label);
      ImGui::TextUnformatted("without cache");
      ImGui::SameLine(labelWidth);
      std::snprintf(label, sizeof label, "%.2f ms/token", t.withoutCacheMsPerToken);
      drawBar((float)t.withoutCacheMsPerToken, slowest, ImGui::GetContentRegionAvail().x, BarStyle::Rest, label);
      if (figureSinkOpen()) {
        char with[48];
        std::snprintf(with, sizeof with, "%.2f ms/token", t.withCacheMsPerToken);
        BarTable figure{"kv_cache_timing", "Decoding with and without the KV cache", {"with cache", "without cache"}, {}};
        figure.columns.push_back(
            {"ms per new token",
             slowest,
             {{(float)t.withCacheMsPerToken, with, barColor(BarStyle::Normal)}, {(float)t.withoutCacheMsPerToken, label, barColor(BarStyle::Rest)}}});
        addBarTableFigure(std::move(figure));
      }
      ImGui::TextDisabled("over %d new tokens (%d rerun without it): %.1fx faster with the cache", t.tokens, t.withoutCacheTokens,
                          t.withCacheMsPerToken > 0 ? t.withoutCacheMsPerToken / t.withCacheMsPerToken : 0.0);
    }
  }
  ImGui::EndChild();
}

}  // namespace

std::string SamplingPanel::takeGeneratedText(AppState& state, const Snapshot& s) {
  SamplingView& view = view_;
  if (!s.generation || view.takenGeneration == s.id) return "";
  view.takenGeneration = s.id;
  const GenerationReport& g = *s.generation;
  if (g.superseded || state.prompt != g.promptBefore) {  // the prompt on screen moved on: it stays
    view.lastToken = -1;
    view.lastStop.clear();
    return "";
  }
  view.lastStop = g.stopReason;
  if (!g.newIds.empty()) {
    state.prompt = s.request.prompt;
    state.generatedFrom = s.request.generatedFrom;
    state.generatedIds = s.request.generatedIds;
    view.lastToken = g.newIds.back();
    view.lastTokenProb = g.lastProbability;
    view.lastWasGreedy = g.greedy;
    view.streamTokens = g.streamTokens;
    view.streamSeed = s.request.sampling.seed;
  }
  return g.stopReason;
}

void SamplingPanel::draw(PanelContext& ctx) {
  SamplingView& view = view_;
  const Snapshot* s = ctx.snapshot;
  if (const std::string problem = continuationProblem(ctx.session.config()); !problem.empty()) {
    ImGui::TextWrapped("There is no next token here: %s.", problem.c_str());
    ctx.shared.facts["next_token_missing"] = problem;
    ctx.shared.exportNote = problem;
    return;
  }
  drawKnobs(ctx, view);
  if (!s || s->stages.raw.empty()) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
    return;
  }
  if (view.builtFor != s->id) rebuild(view, *s);
  const bool current = isCurrent(*s, ctx.state);
  const bool contextFull = (int)s->ids.size() >= ctx.session.config().n_positions;
  const bool canStep = current && !contextFull && ctx.session.tokenizer() && !ctx.repost;
  if (ctx.session.config().isImage())  // the same pipeline over the classes read at [CLS]: nothing to generate
    ImGui::TextDisabled("An image model: the distribution is its classes at [CLS]; it generates no tokens (the Vision tab draws the picture).");
  else drawGenerateControls(ctx, view, canStep, contextFull);
  ImGui::Spacing();
  ImGui::Text(ctx.session.config().isImage() ? "The classes of the picture: the %zu most probable at each stage of the pipeline"
                                             : "Next token after the prompt: the %zu most probable tokens at each stage of the pipeline",
              view.topIds.size());
  const char* hint = "(filtered tokens get 0; hover a column title or a bar for details)";
  sameLineIfFits(ImGui::CalcTextSize(hint).x);
  ImGui::TextDisabled("%s", hint);
  drawStageTable(ctx, view, *s);
  ImGui::Spacing();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float minHeight = ImGui::GetTextLineHeightWithSpacing() * 12;
  const float height = std::max(avail.y, minHeight);
  const float kvWidth = std::max(ImGui::GetFontSize() * 26, avail.x * 0.36f);
  drawBeamSection(ctx, s, ImVec2(avail.x - kvWidth - ImGui::GetStyle().ItemSpacing.x, height));
  ImGui::SameLine();
  drawKvCacheSection(ctx, s, ImVec2(0, height));
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeSamplingPanel() { return std::make_unique<SamplingPanel>(); }

}  // namespace tscope::gui

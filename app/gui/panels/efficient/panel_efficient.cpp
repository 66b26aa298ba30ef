// EfficientPanel: the controls every section shares (variant, its knob, layer or every layer,
// head) and the live section: exact attention and the variant's effective map side by side on the
// real q, k, v of (layer, head), the per-row error, and the next token before and after (KL, top 5).
// The maps come from attentionVariantReference (plain loops), rebuilt only when their inputs change.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/gui/panels/efficient/panel_efficient.h"

#include <memory>
#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/layout.h"
#include "app/gui/widgets/plot.h"
#include "model/core/error.h"

namespace tscope::gui {

namespace {

constexpr const char* kLiveChannel = "efficient live";  // the live section's maps (tasks.h)

// The variant's name and every knob, as one line (the live section's cache key).
std::string knobsText(const AttentionVariantParams& p) {
  char text[160];
  std::snprintf(text, sizeof text, "%s tile %d window %d buckets %d rounds %d chunk %d k %d %s m %d seed %llu", attentionVariantName(p.variant),
                p.tile, p.window, p.buckets, p.rounds, p.chunk, p.projected, linformerProjectionName(p.linformerProjection), p.features,
                (unsigned long long)p.seed);
  return text;
}

// A knob on a slider, recorded for the GUI tests; true when it moved.
bool knobSlider(PanelContext& ctx, const char* label, const char* region, int* value, int lo, int hi, bool logarithmic = false) {
  sameLineIfFits(label, ImGui::GetFontSize() * 6);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  const bool moved = ImGui::SliderInt(label, value, lo, hi, "%d", logarithmic ? ImGuiSliderFlags_Logarithmic : 0);
  recordItem(ctx.shared, region);
  return moved;
}

}  // namespace

void EfficientPanel::drawControls(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  AttentionVariantParams& p = st.attentionVariant;
  bool changed = false;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::BeginCombo("variant", attentionVariantName(p.variant))) {
    for (AttentionVariant variant : allAttentionVariants()) {
      if (ImGui::Selectable(attentionVariantName(variant), variant == p.variant)) {
        p.variant = variant;
        changed = true;
      }
      recordItem(ctx.shared, std::string("efficient_variant_") + attentionVariantName(variant));
    }
    ImGui::EndCombo();
  } else {
    recordItem(ctx.shared, "efficient_variant");
  }
  const int n = std::max(2, tokens_);
  switch (p.variant) {
    case AttentionVariant::Exact: break;
    case AttentionVariant::Flash: changed |= knobSlider(ctx, "tile Br = Bc", "efficient_knob", &p.tile, 1, 256, true); break;
    case AttentionVariant::Window: changed |= knobSlider(ctx, "window w", "efficient_knob", &p.window, 1, std::max(n, 64), true); break;
    case AttentionVariant::Lsh:
      changed |= knobSlider(ctx, "buckets b", "efficient_knob", &p.buckets, 1, 64);
      changed |= knobSlider(ctx, "rounds r", "efficient_knob2", &p.rounds, 1, 8);
      changed |= knobSlider(ctx, "chunk", "efficient_knob3", &p.chunk, 1, 256, true);
      break;
    case AttentionVariant::Linformer:
      changed |= knobSlider(ctx, "projected k", "efficient_knob", &p.projected, 1, 512, true);
      for (LinformerProjection projection : {LinformerProjection::Pool, LinformerProjection::Gaussian}) {
        const char* label = linformerProjectionName(projection);
        sameLineIfFits(label, ImGui::GetFrameHeight());
        if (ImGui::RadioButton(label, p.linformerProjection == projection)) {
          p.linformerProjection = projection;
          changed = true;
        }
        recordItem(ctx.shared, std::string("efficient_projection_") + label);
      }
      break;
    case AttentionVariant::Linear: break;
    case AttentionVariant::Performer: changed |= knobSlider(ctx, "features m", "efficient_knob", &p.features, 1, 1024, true); break;
  }
  sameLineIfFits("layer", ImGui::GetFontSize() * 6);
  // Another layer or head needs no repost here: the App posts when the panel's needs change.
  layerHeadSliders(&ctx.shared, {.region = "efficient", .widthEms = 6}, st.layer, c.n_layer, st.head, c.n_head);
  sameLineIfFits("variant in every layer", ImGui::GetFrameHeight());
  changed |= ImGui::Checkbox("variant in every layer", &st.variantAllLayers);
  recordItem(ctx.shared, "efficient_all_layers");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("the next token below runs with the variant in place of exact attention in every layer (else in the chosen layer only)");
  if (changed) ctx.repost = true;
  const std::string problem = attentionVariantProblem(p, n);
  if (!problem.empty()) ImGui::TextColored(ImVec4(0.9f, 0.3f, 0.2f, 1), "%s", problem.c_str());
}

void EfficientPanel::draw(PanelContext& ctx) {
  drawControls(ctx);
  nlohmann::json& facts = ctx.shared.facts["efficient"];
  facts["variant"] = attentionVariantName(ctx.state.attentionVariant.variant);
  facts["projection"] = linformerProjectionName(ctx.state.attentionVariant.linformerProjection);
  facts["layer"] = ctx.state.layer;
  facts["head"] = ctx.state.head;
  if (!ImGui::BeginTabBar("efficient_sections")) return;
  const struct {
    const char* title;
    const char* region;
    void (EfficientPanel::*draw)(PanelContext&);
  } sections[] = {{"On the live model", "efficient_tab_live", &EfficientPanel::drawLive},
                  {"FlashAttention step by step", "efficient_tab_flash", &EfficientPanel::drawFlash},
                  {"Cost, measured", "efficient_tab_cost", &EfficientPanel::drawCost}};
  for (const auto& section : sections) {
    const bool open = ImGui::BeginTabItem(section.title, nullptr, subTabFlags(ctx, section.region));
    recordItem(ctx.shared, section.region);
    if (!open) continue;
    facts["section"] = section.region;
    (this->*section.draw)(ctx);
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void EfficientPanel::runLive(const LiveJob& job, TaskScope<LiveResult>& scope) {
  auto result = std::make_shared<LiveResult>();
  result->key = job.key;
  result->tokens = job.head.n;
  result->problem = job.problem;
  if (result->problem.empty() && job.head.n > kMaxReferenceTokens)
    result->problem = "the prompt has " + std::to_string(job.head.n) +
                      " tokens: the plain-loop maps are drawn up to n = " + std::to_string(kMaxReferenceTokens) +
                      " (shorten the prompt; the cost section measures longer ones)";
  if (result->problem.empty()) {
    try {
      const size_t n = job.head.n;
      result->exactMap.assign(n * n, 0.0f);
      std::vector<float> exactOut(n * job.head.d);
      exactHeadAttention(job.head, exactOut.data(), result->exactMap.data());
      result->variant = attentionVariantReference(job.head, job.params);
      result->error = compareWithExact(job.head, *result->variant);
    } catch (const std::exception& e) {
      result->variant.reset();
      result->problem = e.what();
    }
  }
  if (!scope.cancelled()) scope.publish(std::move(result));  // else a newer job is next
}

void EfficientPanel::postLive(PanelContext& ctx, const LiveKey& key) {
  postedLive_ = key;
  LiveJob job{key, ctx.session.latest(), {}, ctx.state.attentionVariant, ""};
  try {
    if (!job.snapshot || job.snapshot->id != key.snapshot) throw Error("the snapshot moved on");
    job.head = traceHeadQkv(job.snapshot->trace, ctx.session.config(), key.layer, key.head);
  } catch (const std::exception& e) {
    job.problem = e.what();
  }
  ctx.tasks.channel<LiveResult>(kLiveChannel).post([job = std::move(job)](TaskScope<LiveResult>& scope) { runLive(job, scope); });
}

void EfficientPanel::takeLive(PanelContext& ctx) {
  std::shared_ptr<const LiveResult> newest = ctx.tasks.channel<LiveResult>(kLiveChannel).latest();
  // A result for another model (the channel outlives a model switch) is not this panel's.
  if (!newest || newest == live_ || newest->key.session != postedLive_.session) return;
  live_ = std::move(newest);
  tokens_ = live_->tokens;
  if (!live_->variant) return;
  const int n = live_->tokens;
  exactHeat_.setData(ctx.renderer, live_->exactMap.data(), n, n, 0.0f, 1.0f, Colormap::Perceptual);
  variantHeat_.setData(ctx.renderer, live_->variant->map.data(), n, n, 0.0f, 1.0f, Colormap::Perceptual);
  if (live_->variant->projectedRows > 0)
    projectedHeat_.setData(ctx.renderer, live_->variant->projectedMap.data(), n, live_->variant->projectedRows, 0.0f, 1.0f, Colormap::Perceptual);
}

void EfficientPanel::drawLive(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  if (!s || s->trace.internalIndex(ctx.state.layer) < 0) {
    ImGui::TextDisabled("%s", s && !s->error.empty() ? s->error.c_str() : "computing the layer's q, k, v...");
    return;
  }
  const LiveKey key{ctx.session.serial(), s->id, ctx.state.layer, ctx.state.head, knobsText(ctx.state.attentionVariant)};
  if (!(key == postedLive_)) postLive(ctx, key);
  takeLive(ctx);
  if (!live_) {
    ImGui::TextDisabled("computing the maps...");
    return;
  }
  nlohmann::json& facts = ctx.shared.facts["efficient"];
  facts["tokens"] = tokens_;
  facts["live_current"] = live_->key == key;
  if (!live_->variant) {
    ImGui::TextWrapped("%s", live_->problem.c_str());
    recordItem(ctx.shared, "efficient_live_note");
    return;
  }
  const ModelConfig& c = ctx.session.config();
  if (c.hasVariantAttention())
    ImGui::TextDisabled(
        "this model was built with %s attention: \"exact\" here is plain softmax(q k^T / sqrt(d)) of its q and k, "
        "not what the model computes",
        attentionVariantName(c.attention_variant.variant));
  else if (c.position_encoding == PositionEncoding::Alibi || c.slidingWindow() > 0)
    ImGui::TextDisabled("this model adds %s to its scores: the maps here are plain softmax(q k^T / sqrt(d)) of its q and k",
                        c.slidingWindow() > 0 ? "a window of its own" : "ALiBi's bias");
  facts["mean_row_error"] = live_->error.meanRowError;
  facts["out_rel_error"] = live_->error.outRelError;
  if (ImGui::BeginTable("efficient_live", 2, ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("maps", ImGuiTableColumnFlags_WidthStretch, 0.62f);
    ImGui::TableSetupColumn("effects", ImGuiTableColumnFlags_WidthStretch, 0.38f);
    ImGui::TableNextColumn();
    const float errorHeight = std::max(ImGui::GetFontSize() * 9, ImGui::GetContentRegionAvail().y * 0.28f);
    drawMaps(ctx, errorHeight + ImGui::GetStyle().ItemSpacing.y);
    drawRowError(ctx, errorHeight);
    ImGui::TableNextColumn();
    drawNextToken(ctx);
    ImGui::Separator();
    drawExtras(ctx);
    ImGui::EndTable();
  }
}

void EfficientPanel::drawMaps(PanelContext& ctx, float reservedBelow) {
  const char* name = attentionVariantName(ctx.state.attentionVariant.variant);
  FigureSpec left{&exactHeat_, {"exact softmax(q k^T / sqrt(d))", "query", "key", 0, 0}, &exactBar_, 0, 1, Colormap::Perceptual, "probability"};
  FigureSpec right{
      &variantHeat_, {std::string(name) + ": the effective map A (out = A v)", "query", "key", 0, 0}, &variantBar_, 0, 1, Colormap::Perceptual,
      "weight"};
  const FigureHover hover = drawFigurePair(ctx.renderer, left, right, reservedBelow);
  for (int i = 0; i < 2; ++i) {
    const ImVec2 o = hover.plotOrigin[i];
    ctx.shared.regions[i ? "efficient_variant_map" : "efficient_exact_map"] = {o.x, o.y, o.x + hover.plotSide, o.y + hover.plotSide};
  }
  // Both maps on screen, as one (2, T, T) array: [0] exact, [1] the variant's effective map.
  std::vector<float> both = live_->exactMap;
  both.insert(both.end(), live_->variant->map.begin(), live_->variant->map.end());
  ctx.shared.exportable = {
      std::string("efficient_exact_and_") + name + "_l" + std::to_string(ctx.state.layer) + "_h" + std::to_string(ctx.state.head),
      std::move(both),
      2 * tokens_,
      tokens_,
      {2, tokens_, tokens_}};
  if (hover.figure >= 0) {
    const size_t cell = (size_t)hover.row * tokens_ + hover.col;
    const Snapshot* s = ctx.snapshot;
    const auto text = [&](int t) { return t < (int)s->tokenText.size() ? s->tokenText[t].c_str() : ""; };
    ImGui::SetTooltip("query %d '%s' -> key %d '%s'\nexact %.4f\n%s %.4f\nrow %d error (L1) %.4f", hover.row, text(hover.row), hover.col,
                      text(hover.col), live_->exactMap[cell], name, live_->variant->map[cell], hover.row, live_->error.rowError[hover.row]);
  }
}

void EfficientPanel::drawRowError(PanelContext& ctx, float height) {
  std::vector<double> rows, errors;
  double top = 0.05;
  for (int t = 0; t < tokens_; ++t) {
    rows.push_back(t);
    errors.push_back(live_->error.rowError[t]);
    top = std::max(top, 1.1 * live_->error.rowError[t]);
  }
  Plot plot("efficient_row_error", ImVec2(-1, height));
  char title[160];
  std::snprintf(title, sizeof title, "per-row error: L1 distance of each query's row from exact (0 .. 2); mean %.4f, output rel. error %.2e",
                live_->error.meanRowError, live_->error.outRelError);
  plot.setTitle(title);
  plot.setAxes(0, std::max(1, tokens_ - 1), false, 0, top, false, "query row", "L1 error");
  plot.setLegend(LegendPlacement::Hidden);
  plot.line("row error", rows, errors, IM_COL32(230, 120, 40, 255));
  plot.hline(live_->error.meanRowError, "mean", ImGui::GetColorU32(ImGuiCol_TextDisabled));
  plot.draw();
  recordItem(ctx.shared, "efficient_row_error");
}

void EfficientPanel::drawNextToken(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  const int V = ctx.session.config().vocab_size;
  const char* name = attentionVariantName(ctx.state.attentionVariant.variant);
  const std::string where = ctx.state.variantAllLayers ? "every layer" : "layer " + std::to_string(ctx.state.layer);
  ImGui::TextWrapped("The next token with %s in place of exact attention in %s:", name, where.c_str());
  const std::span<const float> exact = lastRow(s->trace.logits, V);
  if (s->variantLogits.size() != exact.size() || exact.empty()) {
    const char* waiting = ctx.session.busy() ? "computing..." : "not computed by the session (no variant run in this build yet)";
    ImGui::TextDisabled("%s", s->variantNote.empty() ? waiting : s->variantNote.c_str());
    recordItem(ctx.shared, "efficient_next_token");
    return;
  }
  const DistributionShift shift = distributionShift(exact, s->variantLogits, 5);
  nlohmann::json& facts = ctx.shared.facts["efficient"];
  facts["kl"] = shift.kl;
  facts["next_token_exact"] = shift.before.front().id;
  facts["next_token_variant"] = shift.after.front().id;
  // The snapshot may still be of the previous choice while the new one runs.
  const Request& ran = s->request;
  const bool current = ran.attentionVariant && knobsText(*ran.attentionVariant) == knobsText(ctx.state.attentionVariant) &&
                       ran.variantLayer == (ctx.state.variantAllLayers ? -1 : ctx.state.layer);
  ImGui::Text("KL(exact || %s) = %.4g nats%s", name, shift.kl, current ? "" : "  (of the previous choice; recomputing...)");
  facts["kl_current"] = current;
  if (ImGui::BeginTable("efficient_top5", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableSetupColumn("exact");
    ImGui::TableSetupColumn(name);
    ImGui::TableHeadersRow();
    const float width = ImGui::GetContentRegionAvail().x / 2 - ImGui::GetFontSize();
    for (size_t i = 0; i < std::max(shift.before.size(), shift.after.size()); ++i)
      for (const auto* list : {&shift.before, &shift.after}) {
        ImGui::TableNextColumn();
        if (i >= list->size()) continue;
        char label[64];
        std::snprintf(label, sizeof label, "%s %.3f", tokenText(ctx.session, (*list)[i].id), (*list)[i].probability);
        drawBar((*list)[i].probability, 1.0f, width, list == &shift.after ? BarStyle::Highlighted : BarStyle::Normal, label);
      }
    ImGui::EndTable();
  }
  recordItem(ctx.shared, "efficient_next_token");
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeEfficientPanel() { return std::make_unique<EfficientPanel>(); }

}  // namespace tscope::gui

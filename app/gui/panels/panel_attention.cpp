// AttentionPanel: the (layer, head) heatmap (probabilities or pre-softmax scores, one head or the
// mean over heads, both from model/nn/trace_views.h), the mask in grey, hover read-out, the lines
// view, and the grid of every layer x head as thumbnails (click one to open it).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/layout.h"
#include "app/gui/panels/panel_attention.h"

#include <memory>
#include "model/nn/trace_views.h"

namespace tscope::gui {

namespace {

void drawLinesView(const Snapshot& s, const std::vector<float>& m, ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const int T = s.trace.T, Tk = s.trace.Tk;
  const float rowHeight = std::max(ImGui::GetTextLineHeight(), size.y / std::max(T, Tk));
  const float left = origin.x + size.x * 0.30f, right = origin.x + size.x * 0.70f;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  for (int j = 0; j < Tk; ++j) {
    const std::string& label = s.tokenText[std::min<size_t>(j, s.tokenText.size() - 1)];
    draw->AddText(ImVec2(right + 8, origin.y + (j + 0.5f) * rowHeight - ImGui::GetTextLineHeight() / 2), text, label.c_str());
  }
  for (int t = 0; t < T; ++t) {
    const std::string& label = s.tokenText[t];
    const float width = ImGui::CalcTextSize(label.c_str()).x;
    draw->AddText(ImVec2(left - 8 - width, origin.y + (t + 0.5f) * rowHeight - ImGui::GetTextLineHeight() / 2), text, label.c_str());
    for (int j = 0; j < Tk; ++j) {
      const float w = m[(size_t)t * Tk + j];
      if (!(w > 0.01f)) continue;
      const float y0 = origin.y + (t + 0.5f) * rowHeight, y1 = origin.y + (j + 0.5f) * rowHeight;
      draw->AddLine(ImVec2(left, y0), ImVec2(right, y1), IM_COL32(60, 140, 255, (int)(40 + 215 * w)), 1.0f + 5.0f * w);
    }
  }
  ImGui::Dummy(ImVec2(size.x, rowHeight * std::max(T, Tk)));
}

// Thumbnails need no more texels than pixels: max-pool long prompts down to at most 128 x 128
// (max keeps the sharp peaks a teacher looks for; a cell is masked only if all it covers is).
std::vector<float> poolForThumbnail(const std::vector<float>& m, int rows, int cols, int& outRows, int& outCols) {
  const int factor = std::max(1, (std::max(rows, cols) + 127) / 128);
  outRows = (rows + factor - 1) / factor;
  outCols = (cols + factor - 1) / factor;
  if (factor == 1) return m;
  std::vector<float> pooled((size_t)outRows * outCols, std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const float v = m[(size_t)r * cols + c];
      float& cell = pooled[(size_t)(r / factor) * outCols + c / factor];
      if (!std::isnan(v) && (std::isnan(cell) || v > cell)) cell = v;
    }
  return pooled;
}

// Every layer x head: the layers whose maps the snapshot holds as thumbnails (click one to open
// it), the others as one line saying why (click it to compute that layer).
void drawGrid(PanelContext& ctx, AttentionView& view, const Snapshot& s) {
  const Trace& trace = s.trace;
  const int L = trace.L, H = trace.H, Lc = (int)trace.layers.size();
  if (!view.thumbnailsBuilt) {
    view.thumbnails.resize((size_t)Lc * H);
    for (int l = 0; l < Lc; ++l)
      for (int h = 0; h < H; ++h) {
        int rows = 0, cols = 0;
        const auto m = poolForThumbnail(attentionShown(s.attention, configAsRun(ctx.session.config(), s.request.whatIfs), l, h, false, false),
                                        trace.T, trace.Tk, rows, cols);
        view.thumbnails[(size_t)l * H + h].setData(ctx.renderer, m.data(), rows, cols, 0.0f, 1.0f, Colormap::Perceptual);
      }
    view.thumbnailsBuilt = true;
  }
  if (Lc > 0) {
    const int T = trace.T, Tk = trace.Tk;
    std::string held = std::to_string(trace.layers.front()) + (Lc > 1 ? "-" + std::to_string(trace.layers.back()) : "");
    if (Lc > 1 && trace.layers.back() - trace.layers.front() + 1 != Lc) held = "held";  // not one range: the name says which in the tooltip
    ctx.shared.exportable = {"attention_grid_layer_head_query_key_l" + held,
                             {},
                             Lc * H * T,
                             Tk,
                             {Lc, H, T, Tk},
                             [maps = s.attention, config = configAsRun(ctx.session.config(), s.request.whatIfs), Lc, H] {
                               std::vector<float> all;
                               for (int l = 0; l < Lc; ++l)
                                 for (int h = 0; h < H; ++h) {
                                   const std::vector<float> m = attentionShown(maps, config, l, h, false, false);
                                   all.insert(all.end(), m.begin(), m.end());
                                 }
                               return all;
                             }};
    // Export SVG: every held layer x head at full resolution (the thumbnails are pooled), one figure.
    addFigure("attention_grid", [maps = s.attention, config = configAsRun(ctx.session.config(), s.request.whatIfs), layers = trace.layers, H,
                                 T = trace.T, Tk = trace.Tk] {
      std::vector<HeatmapFigure> panels;
      for (size_t l = 0; l < layers.size(); ++l)
        for (int h = 0; h < H; ++h)
          panels.push_back({"layer " + std::to_string(layers[l]) + " head " + std::to_string(h),
                            attentionShown(maps, config, static_cast<int>(l), h, false, false),
                            T,
                            Tk,
                            0.0f,
                            1.0f,
                            Colormap::Perceptual,
                            {},
                            {}});
      return heatmapGridSvg("Attention, every held layer x head (rows: queries, columns: keys)", panels, H);
    });
  } else {
    ctx.shared.exportNote = "no layer's maps are held at this length (" + trace.note + ")";
  }
  if (trace.truncated) ImGui::TextDisabled("%s; click a layer's line to compute its maps", trace.note.c_str());
  const float available = ImGui::GetContentRegionAvail().x;
  const float rowsAvailable = ImGui::GetContentRegionAvail().y / (L + 0.5f) - ImGui::GetStyle().ItemSpacing.y;
  const float cell = std::clamp(std::min(available / (H + 1.0f) - ImGui::GetStyle().ItemSpacing.x, rowsAvailable), 24.0f, 240.0f);
  if (ImGui::BeginTable("grid", H + 1, ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableNextColumn();
    for (int h = 0; h < H; ++h) {
      ImGui::TableNextColumn();
      ImGui::Text("head %d", h);
    }
    for (int layer = 0; layer < L; ++layer) {
      ImGui::TableNextColumn();
      ImGui::Text("layer %d", layer);
      const std::optional<int> l = trace.capturedIndex(layer);
      if (!l) {
        ImGui::TableNextColumn();
        ImGui::PushID(1000000 + layer);
        if (ImGui::Selectable("maps not held (memory cap): open this layer to compute them", false, ImGuiSelectableFlags_SpanAllColumns)) {
          ctx.state.layer = layer;
          ctx.state.showGrid = false;
        }
        recordItem(ctx.shared, "attention_grid_missing_" + std::to_string(layer));
        ImGui::PopID();
        ImGui::TableNextRow();
        continue;
      }
      for (int h = 0; h < H; ++h) {
        ImGui::TableNextColumn();
        ImGui::PushID(*l * H + h);
        const bool selected = ctx.state.layer == layer && ctx.state.head == h;
        const ImVec2 corner = ImGui::GetCursorScreenPos();
        int row, col;
        view.thumbnails[(size_t)*l * H + h].draw(ImVec2(cell, cell), &row, &col);
        if (ImGui::IsItemClicked()) {
          ctx.state.layer = layer;
          ctx.state.head = h;
          ctx.state.showGrid = false;
        }
        if (selected) ImGui::GetWindowDrawList()->AddRect(corner, ImVec2(corner.x + cell, corner.y + cell), IM_COL32(255, 80, 80, 255), 0, 0, 3.0f);
        ImGui::PopID();
      }
    }
    ImGui::EndTable();
  }
}

// The map memory cap (a preference): how many layers' maps it holds at this length.
void drawMemoryCap(PanelContext& ctx, const Snapshot* s) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::SliderInt("map memory (MiB)", &ctx.state.mapMemoryMiB, AppState::kMinMapMemoryMiB, AppState::kMaxMapMemoryMiB, "%d",
                       ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp))
    ctx.repost = true;
  recordItem(ctx.shared, "attention_map_memory");
  if (!s || s->ids.empty()) return;
  const Trace& t = s->trace;
  const size_t one = layerMapBytes(t.H, t.T, t.Tk);
  ImGui::SameLine();
  if (t.truncated) ImGui::TextDisabled("%s; one layer takes %s", t.note.c_str(), formatBytes(one).c_str());
  else ImGui::TextDisabled("maps of all %d layers held: %s at %d tokens", t.L, formatBytes(one * t.L).c_str(), t.T);
  recordItem(ctx.shared, "attention_map_memory_note");
}

}  // namespace

void AttentionPanel::draw(PanelContext& ctx) {
  AppState& st = ctx.state;
  const ModelConfig& c = ctx.session.config();
  layerHeadSliders(&ctx.shared, {.headDisabled = st.averageHeads}, st.layer, c.n_layer, st.head, c.n_head);
  sameLineIfFits("mean over heads (A)", ImGui::GetFrameHeight());
  ImGui::Checkbox("mean over heads (A)", &st.averageHeads);
  sameLineIfFits("pre-softmax scores (S)", ImGui::GetFrameHeight());
  ImGui::Checkbox("pre-softmax scores (S)", &st.showScores);
  sameLineIfFits("lines (L)", ImGui::GetFrameHeight());
  ImGui::Checkbox("lines (L)", &st.linesView);
  sameLineIfFits("all heads (G)", ImGui::GetFrameHeight());
  ImGui::Checkbox("all heads (G)", &st.showGrid);
  const Snapshot* s = ctx.snapshot;
  drawMemoryCap(ctx, s);
  if (!s || s->ids.empty()) {
    ImGui::TextDisabled(s && !s->error.empty() ? "%s" : "computing...", s ? s->error.c_str() : "");
    ctx.shared.exportNote = s && !s->error.empty() ? s->error : "the model is still computing";
    return;
  }
  const Trace& trace = s->trace;
  AttentionView& view = view_;
  if (view.builtFor != s->id) view.thumbnailsBuilt = false;
  if (st.showGrid) {
    drawGrid(ctx, view, *s);
    return;
  }
  const std::optional<Snapshot::LayerMaps> maps = s->maps(st.layer);
  if (!maps) {
    // Never another layer's map under this layer's name: the App asks for this one (or says why it cannot).
    const std::string why = s->mapsMissing(st.layer);
    ImGui::TextWrapped("Layer %d: %s.", st.layer, why.c_str());
    recordItem(ctx.shared, "attention_missing");
    ctx.shared.exportNote = why;
    ctx.shared.facts["attention_missing"] = why;
    return;
  }
  if (view.builtFor != s->id || view.layer != st.layer || view.head != st.head || view.average != st.averageHeads || view.scores != st.showScores) {
    view.shown = attentionShown(*maps->rows, configAsRun(c, s->request.whatIfs), maps->index, st.head, st.averageHeads, st.showScores);
    const auto& m = view.shown;
    view.lo = 0;
    view.hi = 1;
    if (st.showScores) std::tie(view.lo, view.hi) = finiteRange(m);
    view.main.setData(ctx.renderer, m.data(), trace.T, trace.Tk, view.lo, view.hi, st.showScores ? Colormap::Diverging : Colormap::Perceptual);
    view.rowLabels.assign(s->tokenText.begin(), s->tokenText.begin() + std::min<size_t>(trace.T, s->tokenText.size()));
    view.colLabels.clear();
    for (int j = 0; j < trace.Tk; ++j) view.colLabels.push_back(s->tokenText[std::min<size_t>(j, s->tokenText.size() - 1)]);
    view.builtFor = s->id;
    view.layer = st.layer;
    view.head = st.head;
    view.average = st.averageHeads;
    view.scores = st.showScores;
  }
  const auto& m = view.shown;
  ctx.shared.exportable = {"attention_l" + std::to_string(st.layer) + (st.averageHeads ? "_mean" : "_h" + std::to_string(st.head)) +
                               (st.showScores ? "_scores" : "_probs"),
                           m, trace.T, trace.Tk};
  ctx.shared.facts["attention_shown"] = {{"layer", st.layer},           {"head", st.averageHeads ? -1 : st.head},
                                         {"scores", st.showScores},     {"lines", st.linesView},
                                         {"held_layers", trace.layers}, {"focus_layer", s->focusLayer}};
  // A model built with an attention variant: its maps are the variant's effective map (out = A v).
  const std::string what = st.showScores             ? " (q.k / sqrt(d), before softmax)"
                           : c.hasVariantAttention() ? std::string(" (this model's ") + attentionVariantName(c.attention_variant.variant) +
                                                           " attention: the weights A with out = A v; grey = masked)"
                                                     : " (softmax probabilities; grey = masked)";
  ImGui::TextWrapped("Layer %d, %s: each row is a query token, each column the key it attends to%s", st.layer,
                     st.averageHeads ? "mean over heads" : ("head " + std::to_string(st.head)).c_str(), what.c_str());
  if (c.isEncoderDecoder()) {
    ImGui::TextDisabled(
        "Encoder-decoder model: the decoder's masked self-attention over the target; the Translation tab shows the "
        "encoder's and the cross-attention.");
    recordItem(ctx.shared, "attention_encoder_decoder_note");
  }
  if (c.kvHeads() < c.n_head && !st.averageHeads) {  // grouped-query (or multi-query) attention
    const KvGroup g = kvGroupOf(c, std::clamp(st.head, 0, c.n_head - 1));
    ImGui::TextWrapped(
        "Grouped-query attention: %d query heads share %d key/value heads. Head %d reads key/value head %d with heads "
        "%d..%d: they attend over the same keys and values, only their queries differ.",
        c.n_head, c.kvHeads(), st.head, g.kvHead, g.firstHead, g.lastHead);
    recordItem(ctx.shared, "attention_kv_group");
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (st.linesView) {
    const ImVec2 origin = ImGui::GetCursorScreenPos(), size(avail.x, avail.y - ImGui::GetTextLineHeightWithSpacing());
    drawLinesView(*s, m, size);
    ctx.shared.regions["attention_lines"] = {origin.x, origin.y, origin.x + size.x, origin.y + size.y};
    return;
  }
  // Square cells, token labels on both axes, the colour scale beside.
  const float labelWidth = ImGui::GetFontSize() * 7;
  const float scaleWidth = ImGui::GetFontSize() * 4.5f;
  const float side = std::max(64.0f, std::min(avail.x - labelWidth - scaleWidth, avail.y - ImGui::GetTextLineHeightWithSpacing()));
  const float bound = std::max(std::abs(view.lo), std::abs(view.hi));  // the diverging map is centred on 0
  TokenHeatmapStyle style{.rowLabels = &view.rowLabels,
                          .labelWidth = labelWidth,
                          .colLabels = &view.colLabels,
                          .selectedRow = st.token < trace.T ? st.token : -1,
                          .shared = &ctx.shared,
                          .region = "attention_heatmap",
                          .scale = ScalePlace::Right,
                          .scaleLo = st.showScores ? -bound : view.lo,
                          .scaleHi = st.showScores ? bound : view.hi,
                          .scaleColormap = st.showScores ? Colormap::Diverging : Colormap::Perceptual};
  style.readout = [&](int row, int col) {
    const float v = view.main.value(row, col);
    char line[64];
    std::snprintf(line, sizeof line, st.showScores ? "score %.4f" : "probability %.4f", v);
    return "query " + std::to_string(row) + " '" + view.rowLabels[row] + "' -> key " + std::to_string(col) + " '" + view.colLabels[col] + "'\n" +
           (std::isnan(v) || std::isinf(v) ? std::string("masked: a token cannot attend to later tokens") : std::string(line));
  };
  const TokenHeatmapHit hit = view.main.draw(ctx.renderer, ImVec2(side / trace.Tk, side / trace.T), style);
  if (hit.clicked) st.token = hit.row;
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeAttentionPanel() { return std::make_unique<AttentionPanel>(); }

}  // namespace tscope::gui

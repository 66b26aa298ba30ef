// FlashAttention step by step (flash_steps.h) on the live head's real q, k, v for the selected
// query: which key/value tile is loaded (the grid of query x key tiles), the running max m, sum l
// and estimate O / l of the query's row after each tile against the exact row, and the slow-memory
// bytes of the naive and the tiled algorithm for this n and d (attentionMemoryTraffic).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/efficient/panel_efficient.h"
#include "app/gui/widgets/layout.h"
#include "app/gui/widgets/plot.h"
#include "model/theory/attention_cost.h"

namespace tscope::gui {

namespace {

// ||a - b|| / ||b|| over d values.
double relativeError(const std::vector<float>& a, const float* b, int d) {
  double diff = 0, norm = 0;
  for (int i = 0; i < d; ++i) diff += (a[i] - b[i]) * (double)(a[i] - b[i]), norm += (double)b[i] * b[i];
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace

void EfficientPanel::drawTileGrid(PanelContext& ctx, const FlashSteps& steps, int n, bool causal) {
  const int tiles = (n + steps.tileRows - 1) / steps.tileRows;
  const float side = std::max(ImGui::GetFontSize() * 8, std::min(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y * 0.55f));
  const float cell = side / tiles;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const FlashTileState& now = steps.steps[flashStep_];
  for (int qi = 0; qi < tiles; ++qi)
    for (int kj = 0; kj < tiles; ++kj) {
      const bool future = causal && kj * steps.tileRows > std::min(n, (qi + 1) * steps.tileRows) - 1;  // every key after every query
      ImU32 colour = future ? IM_COL32(90, 90, 90, 120) : IM_COL32(60, 90, 140, 110);
      if (qi == steps.queryTile && !future) {
        if (kj < now.keyTile) colour = IM_COL32(60, 150, 255, 255);        // folded in
        else if (kj == now.keyTile) colour = IM_COL32(255, 150, 30, 255);  // loaded now
        else colour = IM_COL32(40, 70, 120, 255);                          // still to come
      }
      const ImVec2 a(origin.x + kj * cell, origin.y + qi * cell), b(origin.x + (kj + 1) * cell, origin.y + (qi + 1) * cell);
      draw->AddRectFilled(a, b, colour);
      if (cell >= 5) draw->AddRect(a, b, IM_COL32(0, 0, 0, 160));
    }
  ImGui::Dummy(ImVec2(side, side));
  recordItem(ctx.shared, "efficient_flash_grid");
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const int qi = std::clamp((int)((mouse.y - origin.y) / cell), 0, tiles - 1), kj = std::clamp((int)((mouse.x - origin.x) / cell), 0, tiles - 1);
    ImGui::SetTooltip("query tile %d (rows %d..%d), key/value tile %d (rows %d..%d)", qi, qi * steps.tileRows,
                      std::min(n, (qi + 1) * steps.tileRows) - 1, kj, kj * steps.tileRows, std::min(n, (kj + 1) * steps.tileRows) - 1);
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("rows: query tiles; columns: key/value tiles. Orange: loaded now; blue: folded in; grey: skipped (causal)");
  ImGui::PopStyleColor();
}

void EfficientPanel::drawFlash(PanelContext& ctx) {
  const Snapshot* s = ctx.snapshot;
  AppState& st = ctx.state;
  if (!s || s->trace.internalIndex(st.layer) < 0) {
    ImGui::TextDisabled("%s", s && !s->error.empty() ? s->error.c_str() : "computing the layer's q, k, v...");
    return;
  }
  HeadQkv head;
  try {
    head = traceHeadQkv(s->trace, ctx.session.config(), st.layer, st.head);
  } catch (const std::exception& e) {
    ImGui::TextWrapped("%s", e.what());
    return;
  }
  tokens_ = head.n;
  const int query = st.token < 0 ? head.n - 1 : std::min(st.token, head.n - 1);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::SliderInt("tile Br = Bc##flash", &st.attentionVariant.tile, 1, 256, "%d", ImGuiSliderFlags_Logarithmic))
    ctx.repost = st.attentionVariant.variant == AttentionVariant::Flash;  // the variant's next token uses the tile too
  recordItem(ctx.shared, "efficient_flash_tile");
  sameLineIfFits("query row (Up/Down)", ImGui::GetFontSize() * 8);
  int row = query;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::SliderInt("query row (Up/Down)", &row, 0, head.n - 1)) st.token = row;
  recordItem(ctx.shared, "efficient_flash_query");
  const FlashKey key{s->id, st.layer, st.head, query, std::max(1, st.attentionVariant.tile)};
  if (!(key == flashKey_)) {
    const bool sameRow = key.layer == flashKey_.layer && key.head == flashKey_.head && key.query == flashKey_.query && key.tile == flashKey_.tile;
    flashKey_ = key;
    flash_.reset();
    flashError_.clear();
    if (!sameRow) flashStep_ = 0;  // a new snapshot of the same prompt keeps the step
    try {
      flash_ = flashSteps(head, query, key.tile);
    } catch (const std::exception& e) {
      flashError_ = e.what();
    }
  }
  if (!flash_ || flash_->steps.empty()) {
    ImGui::TextWrapped("%s", flashError_.empty() ? "no tiles" : flashError_.c_str());
    return;
  }
  const FlashSteps& steps = *flash_;
  const int last = (int)steps.steps.size() - 1;
  if (ImGui::Button("Back")) flashStep_ = std::max(0, flashStep_ - 1);
  recordItem(ctx.shared, "efficient_flash_back");
  ImGui::SameLine();
  if (ImGui::Button("Step")) flashStep_ = std::min(last, flashStep_ + 1);
  recordItem(ctx.shared, "efficient_flash_step");
  ImGui::SameLine();
  if (ImGui::Button("Reset")) flashStep_ = 0;
  recordItem(ctx.shared, "efficient_flash_reset");
  sameLineIfFits("tile loaded", ImGui::GetFontSize() * 10);
  flashStep_ = std::clamp(flashStep_, 0, last);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  ImGui::SliderInt("tile loaded", &flashStep_, 0, last);
  recordItem(ctx.shared, "efficient_flash_slider");
  const FlashTileState& now = steps.steps[flashStep_];
  const int r = query - steps.queryBegin;
  const std::vector<float> estimate = steps.estimate(flashStep_, r, head.d);
  const float* exact = steps.exact.data() + (size_t)r * head.d;
  const double error = relativeError(estimate, exact, head.d);
  nlohmann::json& facts = ctx.shared.facts["efficient"];
  facts["flash_step"] = flashStep_;
  facts["flash_steps"] = last + 1;
  facts["flash_error"] = std::isfinite(error) ? error : -1.0;
  facts["query"] = query;

  if (!ImGui::BeginTable("efficient_flash", 2, ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("grid", ImGuiTableColumnFlags_WidthStretch, 0.4f);
  ImGui::TableSetupColumn("numbers", ImGuiTableColumnFlags_WidthStretch, 0.6f);
  ImGui::TableNextColumn();
  ImGui::TextWrapped("Query tile %d (rows %d..%d) stays on chip; key/value tile %d (rows %d..%d) %s.", steps.queryTile, steps.queryBegin,
                     steps.queryEnd - 1, now.keyTile, now.keyBegin, now.keyEnd - 1,
                     now.skipped ? "is skipped: every key is in the future of every query" : "is loaded and folded in");
  drawTileGrid(ctx, steps, head.n, head.causal);
  const MemoryTraffic traffic = attentionMemoryTraffic(head.n, head.d, steps.tileRows, head.causal);
  ImGui::Text("slow-memory bytes of this head (n %d, d %d, fp32):", head.n, head.d);
  const float width = ImGui::GetContentRegionAvail().x;
  const double most = std::max<double>(1, std::max(traffic.naiveBytes, traffic.tiledBytes));
  drawBar((float)(traffic.naiveBytes / most), 1.0f, width, BarStyle::Normal, ("naive " + formatBytes((double)traffic.naiveBytes)).c_str());
  drawBar((float)(traffic.tiledBytes / most), 1.0f, width, BarStyle::Highlighted, ("tiled " + formatBytes((double)traffic.tiledBytes)).c_str());
  if (traffic.tiledBytes < traffic.naiveBytes) ImGui::Text("%.1fx fewer bytes moved", traffic.naiveBytes / std::max(1.0, (double)traffic.tiledBytes));
  else ImGui::TextWrapped("tiles this small (or n this short) move more: K and V are read once per query tile");
  facts["naive_bytes"] = traffic.naiveBytes;
  facts["tiled_bytes"] = traffic.tiledBytes;

  ImGui::TableNextColumn();
  ImGui::Text("query %d: m = %.4f   l = %.4f   ||O/l - exact|| / ||exact|| = %.2e", query, now.m[r], now.l[r], error);
  ImGui::TextDisabled("m' = max(m, max s); l' = l e^(m - m') + sum e^(s - m'); O' = O e^(m - m') + sum e^(s - m') v");
  const float plotHeight = std::max(ImGui::GetFontSize() * 9, (ImGui::GetContentRegionAvail().y - ImGui::GetFontSize() * 2) * 0.5f);
  {
    std::vector<double> dims, est, ex;
    double lo = 0, hi = 0;
    for (int i = 0; i < head.d; ++i) {
      dims.push_back(i);
      est.push_back(estimate[i]);
      ex.push_back(exact[i]);
      lo = std::min({lo, (double)exact[i], std::isfinite(estimate[i]) ? (double)estimate[i] : 0.0});
      hi = std::max({hi, (double)exact[i], std::isfinite(estimate[i]) ? (double)estimate[i] : 0.0});
    }
    Plot plot("efficient_flash_output", ImVec2(-1, plotHeight));
    plot.setTitle("the query's output: estimate O / l after this tile against the exact row");
    plot.setAxes(0, std::max(1, head.d - 1), false, lo - 0.05 * (hi - lo + 1e-6), hi + 0.05 * (hi - lo + 1e-6), false, "dimension", "value");
    plot.setLegend(LegendPlacement::Above);
    plot.line("exact", dims, ex, ImGui::GetColorU32(ImGuiCol_TextDisabled), 3.0f);
    plot.line("O / l", dims, est, IM_COL32(255, 150, 30, 255), 2.0f);
    plot.draw();
    recordItem(ctx.shared, "efficient_flash_output");
  }
  std::vector<double> xs, errors;
  for (int step = 0; step <= last; ++step) {
    xs.push_back(step);
    errors.push_back(step <= flashStep_ ? relativeError(steps.estimate(step, r, head.d), exact, head.d) : NAN);
  }
  Plot convergence("efficient_flash_convergence", ImVec2(-1, plotHeight));
  convergence.setTitle("relative error of O / l after each tile (converges to rounding at the last one)");
  convergence.setAxes(0, std::max(1, last), false, 1e-8, 10, true, "key/value tile", "error");
  convergence.setLegend(LegendPlacement::Hidden);
  convergence.line("error", xs, errors, IM_COL32(60, 150, 255, 255), 2.5f);
  convergence.vline(flashStep_, "now", IM_COL32(255, 150, 30, 255));
  convergence.draw();
  ImGui::EndTable();
}

}  // namespace tscope::gui

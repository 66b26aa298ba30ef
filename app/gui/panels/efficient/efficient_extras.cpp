// What each variant adds beside the maps of the Efficient-attention panel: Reformer's LSH buckets
// (the tokens coloured by the bucket of their key, then in the sorted-and-chunked order a query
// attends within), Linformer's projected (n x k) matrix P, and the sliding window's receptive field
// growing layer by layer. The token rows are drawn with ImDrawList, one box per token.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/gui/panels/efficient/panel_efficient.h"
#include "app/gui/widgets/plot.h"

namespace tscope::gui {

namespace {

ImU32 bucketColour(int bucket, int buckets) {
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB((float)bucket / std::max(1, buckets), 0.65f, 0.9f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1));
}

// One row of token boxes: token order[i] in box i, coloured by its bucket, a thick line after every
// `chunk` boxes (0: none). Returns the hovered box's token, or -1.
int drawTokenRow(const Snapshot& s, const int* order, const int* bucketOf, int n, int buckets, int chunk) {
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, height = ImGui::GetTextLineHeight() * 1.5f;
  const float box = width / n;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  int hovered = -1;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int i = 0; i < n; ++i) {
    const int token = order[i];
    const ImVec2 a(origin.x + i * box, origin.y), b(origin.x + (i + 1) * box, origin.y + height);
    const ImU32 colour = bucketColour(bucketOf[token], buckets);
    draw->AddRectFilled(a, b, colour);
    if (box >= 4) draw->AddRect(a, b, IM_COL32(0, 0, 0, 90));
    const std::string& text = token < (int)s.tokenText.size() ? s.tokenText[token] : std::string();
    if (ImGui::CalcTextSize(text.c_str()).x + 4 <= box) draw->AddText(ImVec2(a.x + 2, a.y + height * 0.17f), textColorOn(colour), text.c_str());
    if (chunk > 0 && i > 0 && i % chunk == 0) draw->AddLine(ImVec2(a.x, a.y - 3), ImVec2(a.x, b.y + 3), ImGui::GetColorU32(ImGuiCol_Text), 3.0f);
    if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y) hovered = token;
  }
  ImGui::Dummy(ImVec2(width, height));
  return hovered;
}

}  // namespace

void EfficientPanel::drawExtras(PanelContext& ctx) {
  const AttentionVariantParams& p = ctx.state.attentionVariant;
  switch (p.variant) {
    case AttentionVariant::Exact:
    case AttentionVariant::Flash:
      ImGui::TextWrapped(
          "%s is exact: the two maps agree (row errors are rounding). FlashAttention reaches the same output tile by tile "
          "without ever holding the n x n map: see the next tab.",
          attentionVariantName(p.variant));
      break;
    case AttentionVariant::Lsh: drawLshBuckets(ctx); break;
    case AttentionVariant::Linformer: {
      ImGui::TextWrapped(
          "Linformer projects the n keys and values along the sequence to k rows (K' = E K, V' = F V), here with fixed "
          "projections: %s; each query then attends over k projected keys. P below is that (n x k) softmax; the map above is P F.",
          p.linformerProjection == LinformerProjection::Pool ? "pool (each row the mean of a segment of tokens)"
                                                             : "gaussian (random N(0, 1/k) entries)");
      if (projectedHeat_.empty()) break;
      FigureSpec spec{
          &projectedHeat_, {"P = softmax(q (E K)^T / sqrt(d))", "query", "projected row", 0, 0}, &projectedBar_, 0, 1, Colormap::Perceptual,
          "probability"};
      FigureHover hover;
      const float side =
          std::min(ImGui::GetContentRegionAvail().x * 0.8f, std::max(ImGui::GetFontSize() * 10, ImGui::GetContentRegionAvail().y * 0.5f));
      drawFigure(ctx.renderer, spec, side, 0, &hover);
      ctx.shared.regions["efficient_projected_map"] = {hover.plotOrigin[0].x, hover.plotOrigin[0].y, hover.plotOrigin[0].x + hover.plotSide,
                                                       hover.plotOrigin[0].y + hover.plotSide};
      if (hover.figure >= 0) ImGui::SetTooltip("query %d, projected row %d: %.4f", hover.row, hover.col, projectedHeat_.value(hover.row, hover.col));
      break;
    }
    case AttentionVariant::Window: {
      const int layers = ctx.session.config().n_layer, query = tokens_ - 1;
      const std::vector<int> seen = windowReceptiveField(p.window, layers, query);
      ImGui::TextWrapped(
          "A window of w = %d keys per layer: stacked, layer l reaches l (w - 1) + 1 tokens back, so the last token (position "
          "%d) sees %d of its %d tokens after %d layers.",
          p.window, query, seen.back(), query + 1, layers);
      std::vector<double> xs, ys;
      for (int l = 1; l <= layers; ++l) xs.push_back(l), ys.push_back(seen[l - 1]);
      Plot plot("efficient_receptive_field", ImVec2(-1, std::max(ImGui::GetFontSize() * 10, ImGui::GetContentRegionAvail().y * 0.5f)));
      plot.setTitle("receptive field of the last token");
      plot.setAxes(1, std::max(2, layers), false, 0, (query + 1) * 1.1, false, "layer", "tokens seen");
      plot.setLegend(LegendPlacement::Hidden);
      plot.line("tokens seen", xs, ys, IM_COL32(80, 170, 255, 255), 3.0f);
      plot.hline(query + 1, "the whole prompt", ImGui::GetColorU32(ImGuiCol_TextDisabled));
      plot.draw();
      recordItem(ctx.shared, "efficient_receptive_field");
      break;
    }
    case AttentionVariant::Linear:
      ImGui::TextWrapped(
          "Linear attention replaces exp(q.k) by phi(q).phi(k) with phi = elu + 1 and computes phi(Q) (phi(K)^T V): a (d x d) "
          "sum instead of the (n x n) map, O(n d^2). The map above is what that sum amounts to; its rows are flatter than "
          "softmax's, which is the error on the left.");
      break;
    case AttentionVariant::Performer:
      ImGui::TextWrapped(
          "Performer approximates exp(q.k / sqrt(d)) by m positive random features (FAVOR+): unbiased, and closer to exact "
          "as m grows (drag the slider and watch the mean row error fall).");
      break;
  }
}

void EfficientPanel::drawLshBuckets(PanelContext& ctx) {
  const AttentionVariantParams& p = ctx.state.attentionVariant;
  const int n = tokens_;
  const int rounds = n > 0 ? (int)(live_->variant->buckets.size() / n) : 0;
  ImGui::TextWrapped(
      "Reformer hashes each key with h(x) = argmax(x.r_1 .. x.r_b) over b = %d random directions, sorts the tokens by "
      "bucket, cuts the order into chunks of %d and lets a query attend within its chunk and the one before (its own "
      "bucket's keys); %d round(s) of hashing take the union.",
      p.buckets, p.chunk, rounds);
  if (rounds <= 0 || live_->variant->sortedOrder.size() != live_->variant->buckets.size()) return;
  lshRound_ = std::clamp(lshRound_, 0, rounds - 1);
  if (rounds > 1) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    ImGui::SliderInt("hashing round", &lshRound_, 0, rounds - 1);
    recordItem(ctx.shared, "efficient_lsh_round");
  }
  const int* bucketOf = live_->variant->buckets.data() + (size_t)lshRound_ * n;
  const int* sorted = live_->variant->sortedOrder.data() + (size_t)lshRound_ * n;
  std::vector<int> inOrder(n);
  for (int t = 0; t < n; ++t) inOrder[t] = t;
  ImGui::TextUnformatted("tokens in prompt order, coloured by bucket:");
  int hovered = drawTokenRow(*ctx.snapshot, inOrder.data(), bucketOf, n, p.buckets, 0);
  recordItem(ctx.shared, "efficient_lsh_tokens");
  ImGui::TextUnformatted("sorted by bucket, cut into chunks:");
  const int hoveredSorted = drawTokenRow(*ctx.snapshot, sorted, bucketOf, n, p.buckets, p.chunk);
  recordItem(ctx.shared, "efficient_lsh_sorted");
  if (hoveredSorted >= 0) hovered = hoveredSorted;
  if (hovered >= 0) {
    const std::string& text = hovered < (int)ctx.snapshot->tokenText.size() ? ctx.snapshot->tokenText[hovered] : std::string();
    ImGui::SetTooltip("token %d '%s': bucket %d in round %d", hovered, text.c_str(), bucketOf[hovered], lshRound_);
  }
  std::vector<int> sizes(std::max(1, p.buckets), 0);
  for (int t = 0; t < n; ++t) ++sizes[std::clamp(bucketOf[t], 0, (int)sizes.size() - 1)];
  ctx.shared.facts["efficient"]["lsh_buckets_used"] = (int)std::count_if(sizes.begin(), sizes.end(), [](int c) { return c > 0; });
}

}  // namespace tscope::gui

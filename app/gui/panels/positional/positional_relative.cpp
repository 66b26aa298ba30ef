// The relative-position schemes of the Positional encodings panel: RoPE (Su et al. 2021,
// RoFormer) drawn as rotation angles plus the q.k-depends-on-offset matrix, and ALiBi (Press et
// al. 2022) drawn as one head's score bias with every head's slope listed. Matrices come from
// model/nn/positional.h; the only arithmetic here wraps angles into (-pi, pi] for display.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "app/gui/widgets/bar_chart.h"  // sameLineIfFits
#include "app/gui/widgets/figure.h"
#include "app/gui/widgets/plot.h"
#include "model/nn/positional.h"
#include "app/gui/panels/positional/positional_tabs.h"

namespace tscope::gui {

namespace {
// Bias against distance for every head, read from the last query row of alibiBias (the row that
// sees every earlier key); the selected head drawn thick.
void drawAlibiDistancePlot(const PositionalView& v, ImVec2 size) {
  const int H = static_cast<int>(v.alibiSlopes.size()), T = v.builtAlibiPositions;
  if (H == 0 || v.alibiAll.size() != static_cast<size_t>(H) * T * T) return;
  Plot plot("alibi_distance", size);
  plot.setTitle("Bias against distance, every head");
  plot.setAxes(0, T - 1, false, v.alibiAll.empty() ? -1 : -v.alibiSlopes[0] * (T - 1), 0, false, "distance i - j", "bias");
  plot.setLegend(LegendCorner::Hidden);
  for (int h = H - 1; h >= 0; --h) {
    std::vector<double> xs, ys;
    const float* lastRow = v.alibiAll.data() + (static_cast<size_t>(h) * T + (T - 1)) * T;
    for (int k = 0; k < T; ++k) {
      xs.push_back(k);
      ys.push_back(lastRow[T - 1 - k]);
    }
    const bool selected = h == v.alibiHead;
    plot.line("head " + std::to_string(h), xs, ys, selected ? IM_COL32(255, 170, 0, 255) : IM_COL32(90, 140, 230, 160), selected ? 3.0f : 1.5f,
              selected);
  }
  plot.draw();
}

}  // namespace

void drawRopeTab(PanelContext& ctx, PositionalView& v) {
  const ModelConfig& c = ctx.session.config();
  const bool own = c.position_encoding == PositionEncoding::Rope;
  if (own && c.hasRopeScaling())
    ImGui::TextWrapped(
        "This model rotates q and k in every head with head dimension D = %d and base %g, its slow pairs slowed by "
        "Llama 3's scaling (factor %g, original context %d, frequency factors %g and %g).",
        c.headDim(), c.position_base, c.rope_scaling_factor, c.rope_original_context, c.rope_low_freq_factor, c.rope_high_freq_factor);
  else if (own) ImGui::TextWrapped("This model rotates q and k in every head with head dimension D = %d and base %g.", c.headDim(), c.position_base);
  else
    ImGui::TextWrapped(
        "What this model would use: RoPE with its head dimension D = %d (d_model / heads) and base %g "
        "(the model itself uses %s).",
        c.headDim(), c.position_base, positionSchemeName(c.position_encoding));
  const float knobWidth = ImGui::GetFontSize() * 10;
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderFloat("base", &v.ropeBase, 10.0f, 1e6f, "%.0f", ImGuiSliderFlags_Logarithmic);
  sameLineIfFits(knobWidth + ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("head dim D (even)", &v.ropeHeadDim, 8, 256);
  sameLineIfFits(knobWidth + ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("positions shown##rope", &v.ropePositions, 8, 256);
  sameLineIfFits(ImGui::CalcTextSize("model's values").x + ImGui::GetFontSize());
  if (ImGui::Button("model's values")) {
    v.ropeBase = static_cast<float>(c.position_base);
    v.ropeHeadDim = c.headDim() % 2 == 0 ? c.headDim() : 64;
  }
  if (c.hasRopeScaling()) {
    sameLineIfFits(ImGui::CalcTextSize("Llama 3 scaling").x + ImGui::GetFontSize() * 2);
    ImGui::Checkbox("Llama 3 scaling", &v.ropeScaled);
  }
  const bool scaled = c.hasRopeScaling() && v.ropeScaled;
  v.ropeBase = std::clamp(v.ropeBase, 10.0f, 1e6f);
  v.ropeHeadDim = std::clamp(v.ropeHeadDim - v.ropeHeadDim % 2, 8, 256);
  v.ropePositions = std::clamp(v.ropePositions, 8, 256);
  if (v.builtRopeBase != v.ropeBase || v.builtRopeDim != v.ropeHeadDim || v.builtRopePositions != v.ropePositions ||
      v.builtRopeScaled != static_cast<int>(scaled)) {
    const int T = v.ropePositions, D = v.ropeHeadDim;
    const std::vector<double> frequencies = ropeInverseFrequencies(D, v.ropeBase, scaled ? ropeScalingOf(c) : RopeScaling{});
    v.ropeRawAngles = ropeAngles(T, frequencies);
    std::vector<float> wrapped(v.ropeRawAngles.size());
    for (size_t i = 0; i < wrapped.size(); ++i) wrapped[i] = static_cast<float>(std::remainder(v.ropeRawAngles[i], 2 * std::numbers::pi));
    v.ropeAngles.setData(ctx.renderer, wrapped.data(), T, D / 2, -std::numbers::pi_v<float>, std::numbers::pi_v<float>, Colormap::Diverging);
    // The same q = k = (1, ..., 1) placed at every position and rotated there.
    std::vector<float> rotated(static_cast<size_t>(T) * D, 1.0f);
    applyRope(rotated.data(), T, 1, D, D, 0, v.ropeBase, frequencies.data());
    const auto dots = rowSimilarity(rotated.data(), T, D);
    v.ropeDotMax = maxAbs(dots);
    v.ropeDot.setData(ctx.renderer, dots.data(), T, T, -v.ropeDotMax, v.ropeDotMax, Colormap::Diverging);
    v.builtRopeBase = v.ropeBase;
    v.builtRopeDim = v.ropeHeadDim;
    v.builtRopePositions = v.ropePositions;
    v.builtRopeScaled = static_cast<int>(scaled);
  }
  ImGui::TextWrapped(
      "Pair (2i, 2i+1) of q and k at position t is rotated by the angle t theta_i, theta_i = base^(-2i/D). "
      "Nothing is added to the residual stream.");
  if (scaled)
    ImGui::TextWrapped(
        "Llama 3 scaling: pairs whose wavelength 2 pi / theta_i is over %g positions turn %g times slower, those under "
        "%g keep theta_i, and the ones between blend the two, so a model trained on %d tokens reads longer contexts.",
        c.rope_original_context / c.rope_low_freq_factor, c.rope_scaling_factor, c.rope_original_context / c.rope_high_freq_factor,
        c.rope_original_context);
  FigureSpec left{&v.ropeAngles,
                  {"Rotation angle t theta_i (wrapped to +-pi)", "position t", "pair i", 0, 0},
                  &v.ropeBar,
                  -std::numbers::pi_v<float>,
                  std::numbers::pi_v<float>,
                  Colormap::Diverging,
                  "radians"};
  FigureSpec right{&v.ropeDot,    {"q(t) . k(t'): one vector rotated to t and t'", "query t", "key t'", 0, 0},
                   &v.ropeDotBar, -v.ropeDotMax,
                   v.ropeDotMax,  Colormap::Diverging,
                   "dot product"};
  const FigureHover hover = drawFigurePair(ctx.renderer, left, right, ImGui::GetTextLineHeightWithSpacing() * 2);
  publishFigures(ctx, hover, "rope", v.ropeAngles, 2);
  if (hover.figure == 0) {
    const int pairs = v.ropeHeadDim / 2;
    const float raw = v.ropeRawAngles[static_cast<size_t>(hover.row) * pairs + hover.col];
    ImGui::SetTooltip("position t = %d, pair i = %d (dimensions %d, %d)\nangle %.4f rad = %.3f turns (shown wrapped: %.3f rad)", hover.row, hover.col,
                      2 * hover.col, 2 * hover.col + 1, raw, raw / (2 * std::numbers::pi), v.ropeAngles.value(hover.row, hover.col));
  } else if (hover.figure == 1) {
    ImGui::SetTooltip("q(%d) . k(%d) = %.4f\noffset t' - t = %d: the same on the whole diagonal", hover.row, hover.col,
                      v.ropeDot.value(hover.row, hover.col), hover.col - hover.row);
    drawOffsetDiagonal(hover, v.ropeDot.rows());
  }
  ImGui::TextWrapped(
      "Rotating q by t theta and k by t' theta leaves their dot product depending only on (t' - t) theta: relative "
      "position enters the attention score directly, whatever the absolute positions are.");
}

void drawAlibiTab(PanelContext& ctx, PositionalView& v) {
  const ModelConfig& c = ctx.session.config();
  const int H = c.n_head;
  const bool own = c.position_encoding == PositionEncoding::Alibi;
  if (own) ImGui::TextWrapped("This model adds -m_h |i - j| to the attention score of query i and key j in head h (%d heads).", H);
  else
    ImGui::TextWrapped(
        "What this model would use: ALiBi with its %d heads (the model itself uses %s). "
        "score(i, j) = q_i . k_j / sqrt(D) - m_h |i - j|.",
        H, positionSchemeName(c.position_encoding));
  const float knobWidth = ImGui::GetFontSize() * 10;
  v.alibiHead = std::clamp(v.alibiHead, 0, H - 1);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("head h", &v.alibiHead, 0, H - 1);
  sameLineIfFits(knobWidth + ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("positions shown##alibi", &v.alibiPositions, 4, 128);
  sameLineIfFits(ImGui::CalcTextSize("causal (grey: masked)").x + ImGui::GetFontSize() * 2);
  ImGui::Checkbox("causal (grey: masked)", &v.alibiCausal);
  v.alibiHead = std::clamp(v.alibiHead, 0, H - 1);
  v.alibiPositions = std::clamp(v.alibiPositions, 4, 128);
  if (v.builtAlibiHead != v.alibiHead || v.builtAlibiPositions != v.alibiPositions || v.builtAlibiCausal != (int)v.alibiCausal ||
      v.alibiSlopes.size() != static_cast<size_t>(H)) {
    const int T = v.alibiPositions;
    const auto bias = alibiBias(H, T, v.alibiCausal);
    v.alibiAll = bias;
    const float* head = bias.data() + static_cast<size_t>(v.alibiHead) * T * T;
    const std::vector<float> headBias(head, head + static_cast<size_t>(T) * T);
    v.alibiMin = -maxAbs(headBias);
    v.alibi.setData(ctx.renderer, headBias.data(), T, T, v.alibiMin, 0.0f, Colormap::Diverging);
    v.alibiSlopes = alibiSlopes(H);
    v.builtAlibiHead = v.alibiHead;
    v.builtAlibiPositions = v.alibiPositions;
    v.builtAlibiCausal = v.alibiCausal;
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const FigureSpec spec{&v.alibi,
                        {"Bias added to head " + std::to_string(v.alibiHead) + "'s scores", "query i", "key j", 0, 0},
                        &v.alibiBar,
                        v.alibiMin,
                        0.0f,
                        Colormap::Diverging,
                        "added to the score"};
  const float tableWidth = ImGui::GetFontSize() * 18;
  const float line = ImGui::GetTextLineHeight();
  const float byWidth = avail.x - tableWidth * 1.3f - figureLeftMargin(spec.axes, v.alibi.rows()) - ImGui::GetFontSize() * 3;
  const float byHeight = avail.y - figureExtraHeight() - ImGui::GetTextLineHeightWithSpacing() * 5;
  const float side = std::max(line * 6, std::min(byWidth, std::max(byHeight, line * 16)));  // the panel scrolls when short
  FigureHover hover;
  drawFigure(ctx.renderer, spec, side, 0, &hover);
  publishFigures(ctx, hover, "alibi", v.alibi, 1);
  if (hover.figure == 0) {
    const float b = v.alibi.value(hover.row, hover.col);
    if (std::isinf(b)) ImGui::SetTooltip("query %d, key %d: masked (a causal model never looks ahead)", hover.row, hover.col);
    else ImGui::SetTooltip("query %d, key %d: distance %d, bias %.4f", hover.row, hover.col, std::abs(hover.row - hover.col), b);
  }
  ImGui::SameLine(0, ImGui::GetFontSize() * 2);
  ImGui::BeginGroup();
  ImGui::TextUnformatted("Slope m_h of every head (click to show)");
  if (ImGui::BeginTable("slopes", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY,
                        ImVec2(tableWidth, std::min(std::max(side * 0.5f, line * 8), ImGui::GetTextLineHeightWithSpacing() * (H + 1.4f))))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("head");
    ImGui::TableSetupColumn("slope m_h");
    ImGui::TableSetupColumn("as 2^x");
    ImGui::TableHeadersRow();
    for (int h = 0; h < H; ++h) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string label = std::to_string(h);
      if (ImGui::Selectable(label.c_str(), h == v.alibiHead, ImGuiSelectableFlags_SpanAllColumns)) v.alibiHead = h;
      ImGui::TableNextColumn();
      ImGui::Text("%.5f", v.alibiSlopes[h]);
      ImGui::TableNextColumn();
      ImGui::Text("2^%.2f", std::log2(v.alibiSlopes[h]));
    }
    ImGui::EndTable();
  }
  drawAlibiDistancePlot(v, ImVec2(tableWidth * 1.3f, std::max(line * 10, side * 0.5f)));
  ImGui::EndGroup();
  ImGui::TextWrapped(
      "No position vectors at all: steep heads (large m) attend locally, shallow heads far away. Slopes form a geometric "
      "sequence 2^(-8h/H) (Press et al. 2022); because the bias only depends on distance, ALiBi extrapolates to inputs "
      "longer than those seen in training.");
}

}  // namespace tscope::gui

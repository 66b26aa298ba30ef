// Scaling-laws panel, four tabs: "Published laws" (this file), "Your runs", "Emergence" (the
// scaling lab: scaling_runs.cpp, scaling_plots.cpp, scaling_emergence.cpp) and "Cost of training" (scaling_cost.cpp). Published laws:
// Chinchilla's iso-FLOP curves with the compute-optimal frontier through their minima and a budget slider (N_opt, D_opt, tokens per parameter),
// Kaplan's three power laws on log-log axes, the worked example "175B at 2.1 nats -> 500B", and every published constant editable. Every number comes
// from model/theory/scaling.h; this file only samples and lays out.
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/scaling/panel_scaling.h"
#include "model/theory/slide_tables.h"

#include <memory>
#include "app/gui/widgets/plot.h"

namespace tscope::gui {

namespace {

constexpr double kComputeMin = 1e18, kComputeMax = 1e26;  // FLOP: the slider and the iso-FLOP curves
constexpr double kParamsMin = 1e7, kParamsMax = 1e13;     // x range of the iso-FLOP plot
constexpr int kCurvePoints = 240;

// Iso-FLOP curve colours run purple (small budgets) to orange (large); darker on the light theme.
ImU32 budgetColour(double t, bool projector) {
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB(0.78f - 0.70f * (float)t, 0.75f, projector ? 0.72f : 0.95f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1));
}
ImU32 highlightColour(bool projector) { return projector ? IM_COL32(200, 20, 60, 255) : IM_COL32(255, 70, 100, 255); }

// The training runs marked on the plot, each with its colour and where its label goes.
struct MarkedRun {
  NamedRun run;
  ImU32 colour;
  LabelSide side;
};
std::vector<MarkedRun> markedRuns() {
  return {{gpt3Run(), IM_COL32(40, 150, 230, 255), LabelSide::AboveRight},
          {chinchillaRun(), IM_COL32(60, 180, 90, 255), LabelSide::AboveLeft},
          {llama2Run(), IM_COL32(200, 120, 40, 255), LabelSide::BelowRight}};
}

std::string flopsLabel(double flops) { return formatScientific(flops) + " FLOP"; }

// A caption and a number in a large font (for the back of a lecture hall).
void bigNumber(const char* caption, const std::string& value, ImU32 colour) {
  ImGui::TextDisabled("%s", caption);
  ImGui::SetWindowFontScale(1.75f);
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextUnformatted(value.c_str());
  ImGui::PopStyleColor();
  ImGui::SetWindowFontScale(1.0f);
}

// A positive number typed by the user; returns true when it changed (and stays positive).
bool positiveInput(const char* label, double* value, const char* format) {
  double edited = *value;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (!ImGui::InputDouble(label, &edited, 0, 0, format) || !(edited > 0) || !std::isfinite(edited)) return false;
  *value = edited;
  return true;
}

void yRange(const std::vector<double>& ys, double& lo, double& hi) {
  for (double y : ys)
    if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
}

// ---- Chinchilla ------------------------------------------------------------------------------

void drawIsoFlopPlot(PanelContext& ctx, const ScalingView& v, ImVec2 size, bool compact) {
  const bool projector = ctx.state.projector;
  const ChinchillaConstants& c = v.chinchilla;
  const ComputeOptimum chosen = chinchillaOptimum(c, v.computeFlops);
  const double lossLo = std::min(c.E, chinchillaOptimum(c, kComputeMax).loss) - 0.06, lossHi = chinchillaOptimum(c, kComputeMin).loss + 0.9;
  Plot plot("isoflop", size);
  if (!compact) plot.setTitle("Chinchilla: loss along iso-FLOP curves (Hoffmann et al. 2022)");
  plot.setAxes(kParamsMin, kParamsMax, true, lossLo, lossHi, false, "parameters N",
               compact ? "Chinchilla: loss L(N, D = C / 6N) along iso-FLOP curves (nats/token)" : "loss L(N, D = C / 6N)  (nats/token)");
  plot.setFormats(formatCount, formatGeneral);
  plot.setLegend(LegendPlacement::Above);
  for (int k = 18; k <= 26; ++k) {
    const double flops = std::pow(10.0, k);
    const Curve iso = chinchillaIsoFlopCurve(c, flops, kParamsMin, kParamsMax, kCurvePoints);
    plot.line("C = 1e" + std::to_string(k), iso.x, iso.y, budgetColour((k - 18) / 8.0, projector), 1.6f, false);
    const ComputeOptimum o = chinchillaOptimum(c, flops);
    plot.note(o.params, o.loss, "1e" + std::to_string(k), budgetColour((k - 18) / 8.0, projector));
  }
  const Curve frontier = chinchillaFrontierCurve(c, kComputeMin / 10, kComputeMax * 10, kCurvePoints);
  plot.line("compute-optimal frontier", frontier.x, frontier.y, ImGui::GetColorU32(ImGuiCol_Text), 2.5f);
  const Curve selected = chinchillaIsoFlopCurve(c, v.computeFlops, kParamsMin, kParamsMax, kCurvePoints);
  plot.line("budget C = " + flopsLabel(v.computeFlops), selected.x, selected.y, highlightColour(projector), 4.0f);
  plot.vline(chosen.params, "N_opt = " + formatCount(chosen.params), highlightColour(projector));
  plot.hline(c.E, "irreducible loss E = " + formatGeneral(c.E), ImGui::GetColorU32(ImGuiCol_TextDisabled));
  plot.line("iso-FLOP curves, 1e18 .. 1e26 FLOP", {}, {}, budgetColour(0.5, projector), 1.6f);
  for (const MarkedRun& m : markedRuns()) plot.point(m.run.name, m.run.params, chinchillaLoss(c, m.run.params, m.run.tokens), m.colour, m.side);
  plot.draw();
  recordItem(ctx.shared, "scaling_isoflop");
}

void drawChinchillaConstants(ScalingView& v) {
  const char* presets[] = {"Hoffmann et al. 2022 (published)", "Besiroglu et al. 2024 (refit)", "edited"};
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (ImGui::Combo("##preset", &v.chinchillaPreset, presets, 3)) {
    if (v.chinchillaPreset == 0) v.chinchilla = chinchillaHoffmann2022();
    if (v.chinchillaPreset == 1) v.chinchilla = chinchillaBesiroglu2024();
  }
  if (!ImGui::CollapsingHeader("Edit Chinchilla constants")) return;
  bool changed = false;
  ChinchillaConstants& c = v.chinchilla;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (ImGui::InputDouble("E (irreducible loss)", &c.E, 0, 0, "%.4g")) c.E = std::max(0.0, c.E), changed = true;
  changed |= positiveInput("A", &c.A, "%.5g");
  changed |= positiveInput("B", &c.B, "%.6g");
  changed |= positiveInput("alpha (N exponent)", &c.alpha, "%.4g");
  changed |= positiveInput("beta (D exponent)", &c.beta, "%.4g");
  if (changed) v.chinchillaPreset = 2;
}

void drawNamedRuns(const ScalingView& v) {
  ImGui::TextUnformatted("Named runs, C = 6ND");
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("runs", 5, flags)) return;
  for (const char* heading : {"", "N", "D", "C (FLOP)", "L(N, D)"}) ImGui::TableSetupColumn(heading);
  ImGui::TableHeadersRow();
  for (const MarkedRun& m : markedRuns()) {
    const NamedRun& run = m.run;
    ImGui::TableNextColumn();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(m.colour), "%s", run.name.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(run.params).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(run.tokens).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatScientific(run.flops()).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.3f", chinchillaLoss(v.chinchilla, run.params, run.tokens));
  }
  ImGui::EndTable();
}

// The budget slider with shortcuts to the two named runs' budgets.
void drawBudgetSlider(ScalingView& v) {
  ImGui::TextUnformatted("Compute budget C (training FLOP)");
  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::SliderScalar("##compute", ImGuiDataType_Double, &v.computeFlops, &kComputeMin, &kComputeMax, "%.2e FLOP",
                      ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
  if (ImGui::SmallButton("GPT-3 budget")) v.computeFlops = gpt3Run().flops();
  ImGui::SameLine();
  if (ImGui::SmallButton("Chinchilla budget")) v.computeFlops = chinchillaRun().flops();
}

// The compute-optimal allocation at the budget, in large type: four cells of the current table.
void drawOptimumCells(PanelContext& ctx, const ScalingView& v, bool shortCaptions) {
  const ComputeOptimum o = chinchillaOptimum(v.chinchilla, v.computeFlops);
  const ImU32 accent = highlightColour(ctx.state.projector), text = ImGui::GetColorU32(ImGuiCol_Text);
  char value[32];
  ImGui::TableNextColumn();
  bigNumber(shortCaptions ? "N_opt" : "parameters N_opt", formatCount(o.params), accent);
  ImGui::TableNextColumn();
  bigNumber(shortCaptions ? "D_opt" : "tokens D_opt", formatCount(o.tokens), text);
  ImGui::TableNextColumn();
  std::snprintf(value, sizeof value, "%.1f", o.tokensPerParam);
  bigNumber(shortCaptions ? "tokens/param" : "tokens per parameter", value, text);
  ImGui::TableNextColumn();
  std::snprintf(value, sizeof value, "%.3f", o.loss);
  bigNumber(shortCaptions ? "loss" : "loss (nats/token)", value, text);
}

void drawBudgetFacts(const ScalingView& v) {
  ImGui::TextDisabled("C = %s PF-days (1 PF-day = 8.64e19 FLOP)", formatScientific(flopsToPetaflopDays(v.computeFlops)).c_str());
  ImGui::Text("N_opt ~ C^%.3f,  D_opt ~ C^%.3f", chinchillaParamsExponent(v.chinchilla), 1 - chinchillaParamsExponent(v.chinchilla));
}

// Which constants L(N, D) uses, and what they say about Chinchilla's own budget.
void drawChinchillaFit(ScalingView& v) {
  ImGui::TextUnformatted("L(N, D) = E + A / N^alpha + B / D^beta");
  drawChinchillaConstants(v);
  const NamedRun run = chinchillaRun();
  const ComputeOptimum own = chinchillaOptimum(v.chinchilla, run.flops());
  ImGui::TextWrapped(
      "At Chinchilla's budget this fit gives N_opt = %s and %.0f tokens per parameter; Chinchilla was %s on %s "
      "(%.0f per parameter).%s",
      formatCount(own.params).c_str(), own.tokensPerParam, formatCount(run.params).c_str(), formatCount(run.tokens).c_str(), run.tokens / run.params,
      v.chinchillaPreset == 0 ? " The published constants are rounded; Besiroglu et al. 2024 refit the data and agree with 70B." : "");
}

// ---- Kaplan ----------------------------------------------------------------------------------

void drawKaplanPlot(PanelContext& ctx, const ScalingView& v, int which, ImVec2 size) {
  const KaplanConstants& k = v.kaplan;
  const bool projector = ctx.state.projector;
  const ImU32 lawColour = projector ? IM_COL32(30, 90, 200, 255) : IM_COL32(90, 160, 255, 255);
  Curve law;
  const char* id = "kaplan_n";
  double lo = INFINITY, hi = -INFINITY;
  if (which == 0) {  // wide enough to show the worked example's two sizes
    const double nLo = std::min({1e5, v.exampleParams / 3, v.exampleNewParams / 3});
    law = kaplanParamsCurve(k, nLo, std::max({1e13, v.exampleParams * 3, v.exampleNewParams * 3}), kCurvePoints);
  }
  if (which == 1) law = kaplanTokensCurve(k, 1e7, 1e13, kCurvePoints), id = "kaplan_d";
  if (which == 2) law = kaplanComputeCurve(k, 1e15, 1e27, kCurvePoints), id = "kaplan_c";
  Plot plot(id, size);
  yRange(law.y, lo, hi);
  char title[96];
  if (which == 0) {
    std::snprintf(title, sizeof title, "L(N) = (%s / N)^%.3g", formatScientific(k.paramsC).c_str(), k.alphaN);
    plot.setFormats(formatCount, formatGeneral);
    plot.line("Kaplan L(N)", law.x, law.y, lawColour, 3.0f);
    // The worked example: the same exponent through the measured point.
    std::vector<double> through;
    for (double n : law.x) through.push_back(scaleLossToParams(v.exampleLoss, v.exampleParams, n, k.alphaN));
    yRange(through, lo, hi);
    const double predicted = scaleLossToParams(v.exampleLoss, v.exampleParams, v.exampleNewParams, k.alphaN);
    plot.line("worked example", law.x, through, highlightColour(projector), 2.0f);
    char label[64];
    std::snprintf(label, sizeof label, "%s: %.2f", formatCount(v.exampleParams).c_str(), v.exampleLoss);
    plot.point(label, v.exampleParams, v.exampleLoss, highlightColour(projector), LabelSide::AboveLeft);
    std::snprintf(label, sizeof label, "%s: %.3f", formatCount(v.exampleNewParams).c_str(), predicted);
    plot.point(label, v.exampleNewParams, predicted, highlightColour(projector), LabelSide::BelowRight);
  } else if (which == 1) {
    std::snprintf(title, sizeof title, "L(D) = (%s / D)^%.3g", formatScientific(k.tokensC).c_str(), k.alphaD);
    plot.setFormats(formatCount, formatGeneral);
    plot.line("Kaplan L(D)", law.x, law.y, lawColour, 3.0f);
  } else {
    std::snprintf(title, sizeof title, "L(C) = (%s PF-days / C)^%.3g", formatScientific(k.computeCPfDays).c_str(), k.alphaC);
    plot.setFormats(formatScientific, formatGeneral);
    plot.line("Kaplan L(C_min)", law.x, law.y, lawColour, 3.0f);
    plot.vline(v.computeFlops, "C = " + formatScientific(v.computeFlops), highlightColour(projector));
  }
  const char* xLabels[] = {"non-embedding parameters N", "tokens D", "compute C (FLOP)"};
  plot.setTitle(title);
  plot.setAxes(law.x.front(), law.x.back(), true, lo * 0.95, hi * 1.05, true, xLabels[which], "loss (nats/token)");
  plot.setLegend(which == 0 ? LegendPlacement::BottomLeft : LegendPlacement::Hidden);
  plot.draw();
  recordItem(ctx.shared, id);
}

void drawKaplanConstants(ScalingView& v) {
  if (!ImGui::CollapsingHeader("Edit Kaplan constants")) return;
  KaplanConstants& k = v.kaplan;
  positiveInput("alpha_N", &k.alphaN, "%.4g");
  positiveInput("N_c (parameters)", &k.paramsC, "%.3g");
  positiveInput("alpha_D", &k.alphaD, "%.4g");
  positiveInput("D_c (tokens)", &k.tokensC, "%.3g");
  positiveInput("alpha_C", &k.alphaC, "%.4g");
  positiveInput("C_c (PF-days)", &k.computeCPfDays, "%.3g");
  if (ImGui::Button("Reset to Kaplan et al. 2020")) k = KaplanConstants{};
}

void drawWorkedExample(PanelContext& ctx, ScalingView& v) {
  ImGui::TextWrapped("Worked example: scale a measured loss to a new size");
  positiveInput("measured loss (nats)", &v.exampleLoss, "%.3g");
  positiveInput("at N (parameters)", &v.exampleParams, "%.4g");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", formatCount(v.exampleParams).c_str());
  positiveInput("new N (parameters)", &v.exampleNewParams, "%.4g");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", formatCount(v.exampleNewParams).c_str());
  const double predicted = scaleLossToParams(v.exampleLoss, v.exampleParams, v.exampleNewParams, v.kaplan.alphaN);
  ImGui::Text("L = %.3g x (%s / %s)^%.3g", v.exampleLoss, formatCount(v.exampleParams).c_str(), formatCount(v.exampleNewParams).c_str(),
              v.kaplan.alphaN);
  char value[32];
  std::snprintf(value, sizeof value, "%.4f nats", predicted);
  bigNumber("predicted loss", value, highlightColour(ctx.state.projector));
}

void drawKaplanNotes(ScalingView& v) {
  ImGui::TextWrapped(
      "Kaplan et al. 2020: L falls as a power law in each of N (non-embedding parameters), D (tokens, "
      "with early stopping) and C_min (compute) when the other two do not limit it.");
  drawKaplanConstants(v);
}

void drawKaplanPlots(PanelContext& ctx, ScalingView& v, float width, float height) {
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  if (width / 3 - spacing >= ImGui::GetFontSize() * 17) {  // three side by side
    const ImVec2 size(width / 3 - spacing * 2 / 3, height);
    for (int which = 0; which < 3; ++which) {
      if (which > 0) ImGui::SameLine();
      drawKaplanPlot(ctx, v, which, size);
    }
    return;
  }
  const char* names[] = {"L(N): parameters", "L(D): data", "L(C): compute"};
  for (int which = 0; which < 3; ++which) {
    if (which > 0) ImGui::SameLine();
    ImGui::RadioButton(names[which], &v.kaplanPlot, which);
  }
  drawKaplanPlot(ctx, v, v.kaplanPlot, ImVec2(width, height - ImGui::GetFrameHeightWithSpacing()));
}

// Two blocks side by side in a borderless table (the stacked layout's control rows).
template <class Left, class Right>
void twoColumns(const char* id, Left left, Right right) {
  if (!ImGui::BeginTable(id, 2, ImGuiTableFlags_SizingStretchSame)) return;
  ImGui::TableNextColumn();
  left();
  ImGui::TableNextColumn();
  right();
  ImGui::EndTable();
}

// The "Published laws" tab: the papers' laws with their constants editable.
void drawPublishedLaws(PanelContext& ctx, ScalingView& v) {
  const float font = ImGui::GetFontSize();
  const ImVec2 spacing = ImGui::GetStyle().ItemSpacing;
  if (ImGui::GetContentRegionAvail().x >= font * 60 && ImGui::GetContentRegionAvail().y >= font * 34) {
    ImGui::TextWrapped(
        "How loss (nats per token) falls with parameters N, training tokens D and compute C = 6ND. "
        "Hover a plot to read values; drag the budget to move along the compute-optimal frontier.");
    // Wide: plots on the left, their controls in a column on the right.
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float sideWidth = font * 22, plotWidth = avail.x - sideWidth - spacing.x;
    const float topHeight = std::max(font * 18, (avail.y - spacing.y) * 0.6f);
    const float bottomHeight = std::max(font * 14, avail.y - topHeight - spacing.y);
    drawIsoFlopPlot(ctx, v, ImVec2(plotWidth, topHeight), false);
    ImGui::SameLine();
    ImGui::BeginChild("chinchilla_side", ImVec2(sideWidth, topHeight));
    drawBudgetSlider(v);
    if (ImGui::BeginTable("optimum", 2)) {
      drawOptimumCells(ctx, v, false);
      ImGui::EndTable();
    }
    drawBudgetFacts(v);
    ImGui::Spacing();
    drawChinchillaFit(v);
    ImGui::Spacing();
    drawNamedRuns(v);
    ImGui::EndChild();
    ImGui::BeginGroup();
    drawKaplanPlots(ctx, v, plotWidth, bottomHeight);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginChild("kaplan_side", ImVec2(sideWidth, bottomHeight));
    drawWorkedExample(ctx, v);
    ImGui::Spacing();
    drawKaplanNotes(v);
    ImGui::EndChild();
    return;
  }
  // Narrow (large text): the budget and its optimum in one row above the full-width plot, the
  // rest below; the panel scrolls.
  if (ImGui::BeginTable("budget_row", 5, ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("budget", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    for (const char* name : {"n", "d", "ratio", "loss"}) ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableNextColumn();
    drawBudgetSlider(v);
    drawOptimumCells(ctx, v, true);
    ImGui::EndTable();
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  drawIsoFlopPlot(ctx, v, ImVec2(avail.x, std::max(font * 12, avail.y)), true);
  twoColumns(
      "chinchilla_controls",
      [&] {
        drawBudgetFacts(v);
        ImGui::Spacing();
        drawNamedRuns(v);
      },
      [&] { drawChinchillaFit(v); });
  ImGui::Separator();
  drawKaplanPlots(ctx, v, avail.x, std::max(font * 12, avail.y));
  twoColumns(
      "kaplan_controls", [&] { drawWorkedExample(ctx, v); }, [&] { drawKaplanNotes(v); });
}

}  // namespace

void ScalingPanel::draw(PanelContext& ctx) {
  if (!ImGui::BeginTabBar("scaling_views")) return;
  const bool published = ImGui::BeginTabItem("Published laws", nullptr, subTabFlags(ctx, "scaling_tab_published"));
  recordItem(ctx.shared, "scaling_tab_published");
  if (published) {
    drawPublishedLaws(ctx, view_);
    ImGui::EndTabItem();
  }
  const bool runs = ImGui::BeginTabItem("Your runs", nullptr, subTabFlags(ctx, "scaling_tab_runs"));
  recordItem(ctx.shared, "scaling_tab_runs");
  if (runs) {
    drawScalingRuns(ctx, runs_);
    ImGui::EndTabItem();
  }
  const bool emergence = ImGui::BeginTabItem("Emergence", nullptr, subTabFlags(ctx, "scaling_tab_emergence"));
  recordItem(ctx.shared, "scaling_tab_emergence");
  if (emergence) {
    drawScalingEmergence(ctx, runs_);
    ImGui::EndTabItem();
  }
  const bool cost = ImGui::BeginTabItem("Cost of training", nullptr, subTabFlags(ctx, "scaling_tab_cost"));
  recordItem(ctx.shared, "scaling_tab_cost");
  if (cost) {
    drawTrainingCost(ctx, view_);
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeScalingPanel() { return std::make_unique<ScalingPanel>(); }

}  // namespace tscope::gui

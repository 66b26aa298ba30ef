// The cost section of the Efficient-attention panel: every variant's fast path timed on random q, k,
// v of n = 256 .. 4096 (or 8192) tokens on a task channel (measureCost), plotted on log
// axes with fitted slopes beside the lecture's big-O (complexityTable), the lecture's table with our
// measured numbers in it, and the worked example (n 4096, d 512, 16 heads) from attention_cost.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string_view>

#include "app/gui/panels/efficient/panel_efficient.h"
#include "app/gui/widgets/layout.h"
#include "app/gui/widgets/plot.h"
#include "model/theory/attention_cost.h"

namespace tscope::gui {

void measureCost(TaskChannel<CostMeasurement>& channel, const AttentionVariantParams& knobs, int d, int maxN) {
  channel.post([knobs, d, maxN](TaskScope<CostMeasurement>& scope) {
    std::vector<int> sizes;
    for (int n = 256; n <= maxN; n *= 2) sizes.push_back(n);
    CostMeasurement measured;
    measured.d = d;
    measured.maxN = maxN;
    measured.planned = (int)(sizes.size() * allAttentionVariants().size());
    scope.publish(std::make_shared<CostMeasurement>(measured));  // the plot starts empty at once
    scope.progress(0, measured.planned);
    // Random q, k, v of the longest n, N(0, 1); shorter runs use their first rows.
    const size_t rows = sizes.empty() ? 0 : (size_t)sizes.back();
    std::vector<float> q(rows * d), k(rows * d), v(rows * d), out(rows * d);
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto* x : {&q, &k, &v})
      for (float& value : *x) value = normal(rng);
    using Clock = std::chrono::steady_clock;
    try {
      for (int n : sizes)
        for (AttentionVariant variant : allAttentionVariants()) {
          if (scope.cancelled()) return;  // a newer measurement replaced this one
          AttentionVariantParams params = knobs;
          params.variant = variant;
          if (!attentionVariantProblem(params, n).empty()) continue;
          const HeadQkv head{q.data(), k.data(), v.data(), n, d, true};
          // The median of a few calls, as many as fit in ~0.2 s (at least one).
          std::vector<double> times;
          size_t peak = 0;
          const Clock::time_point first = Clock::now();
          while (times.size() < 5 && (times.empty() || Clock::now() - first < std::chrono::milliseconds(200))) {
            const Clock::time_point begin = Clock::now();
            peak = attentionVariantFast(head, params, out.data());
            times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
          }
          std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
          measured.points.push_back({variant, n, times[times.size() / 2], (double)peak});
          scope.progress((int)measured.points.size(), measured.planned);
          scope.publish(std::make_shared<CostMeasurement>(measured));
        }
    } catch (const std::exception& e) {
      measured.error = e.what();
      scope.publish(std::make_shared<CostMeasurement>(measured));
    }
  });
}

namespace {

ImU32 variantColour(AttentionVariant variant) { return categoryColour(static_cast<int>(variant), static_cast<int>(allAttentionVariants().size())); }

// The measured points of one variant as (n, value) with value = point.*field, and their log-log fit.
struct VariantCurve {
  std::vector<double> n, ms, bytes;
  LogLogFit timeFit, memoryFit;
};
VariantCurve curveOf(const std::vector<CostPoint>& points, AttentionVariant variant) {
  VariantCurve curve;
  for (const CostPoint& p : points)
    if (p.variant == variant) curve.n.push_back(p.n), curve.ms.push_back(p.ms), curve.bytes.push_back(p.peakBytes);
  if (curve.n.size() >= 2) {
    curve.timeFit = fitLogLog(curve.n, curve.ms);
    curve.memoryFit = fitLogLog(curve.n, curve.bytes);
  }
  return curve;
}

std::string slopeText(const LogLogFit& fit, double expected) {
  char text[48];
  if (fit.points >= 2) std::snprintf(text, sizeof text, "%.2f (%.0f)", fit.slope, expected);
  else std::snprintf(text, sizeof text, "- (%.0f)", expected);
  return text;
}

// The slide's row beside tscope's, as the slide labels and words it (variant | complexity | exact |
// max n | use case); ! where they disagree, the difference on hover.
void drawSlideCell(const SlideVariantRow& slide, nlohmann::json& fact) {
  if (!slide.onSlide) {
    ImGui::TextDisabled("not on the slide");
    fact = nullptr;
    return;
  }
  fact = {{"variant", slide.variant}, {"complexity", slide.complexity}, {"exact", slide.exact},
          {"max_n", slide.maxN},      {"use_case", slide.useCase},      {"differs", slide.differs}};
  const std::string text = slide.variant + " | " + slide.complexity + " | " + slide.exact + " | " + slide.maxN + " | " + slide.useCase;
  if (slide.differs.empty()) {
    ImGui::TextWrapped("%s", text.c_str());
  } else {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.55f, 0.3f, 1.0f));
    ImGui::TextWrapped("! %s", text.c_str());
    ImGui::PopStyleColor();
  }
  if (!slide.differs.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", slide.differs.c_str());
}

// The slide's "Best for:" rows and the "When to Use:" list, in the slides' words.
void drawSlideLists(nlohmann::json& facts) {
  std::string bestFor, whenToUse;
  facts["slide_best_for"] = nlohmann::json::array();
  facts["slide_when_to_use"] = nlohmann::json::array();
  for (const SlideLabelPair& p : slideBestFor()) {
    bestFor += (bestFor.empty() ? "" : "; ") + p.first + ": " + p.second;
    facts["slide_best_for"].push_back({p.first, p.second});
  }
  for (const SlideLabelPair& p : slideWhenToUse()) {
    whenToUse += (whenToUse.empty() ? "" : "; ") + p.first + ": " + p.second;
    facts["slide_when_to_use"].push_back({p.first, p.second});
  }
  ImGui::TextWrapped("The slide's \"Best for:\" %s. Its \"When to Use:\" (efficient attention) %s. tscope's own wording is the 'use' column.",
                     bestFor.c_str(), whenToUse.c_str());
}

}  // namespace

void EfficientPanel::drawCost(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  TaskChannel<CostMeasurement>& channel = ctx.tasks.channel<CostMeasurement>("efficient cost");
  const bool running = channel.busy();
  if (ImGui::Button(running ? "Measure again" : "Measure")) measureCost(channel, ctx.state.attentionVariant, c.headDim(), costMaxN_);
  recordItem(ctx.shared, "efficient_measure");
  ImGui::SameLine();
  ImGui::RadioButton("n up to 4096", &costMaxN_, 4096);
  recordItem(ctx.shared, "efficient_max_4096");
  ImGui::SameLine();
  ImGui::RadioButton("8192", &costMaxN_, 8192);
  recordItem(ctx.shared, "efficient_max_8192");
  // The newest measurement, which may be one made on the model before (it says its own d).
  const std::shared_ptr<const CostMeasurement> measured = channel.latest();
  static const std::vector<CostPoint> none;
  const std::vector<CostPoint>& points = measured ? measured->points : none;
  const int d = measured ? measured->d : c.headDim();
  ImGui::SameLine();
  if (running) {  // the task's progress: points measured of those planned (a variant that cannot run at an n is skipped)
    const WorkProgress p = channel.progress();
    char text[96];
    std::snprintf(text, sizeof text, "measuring on a background thread: %d of %d points", p.done, p.total);
    ImGui::ProgressBar(p.total > 0 ? static_cast<float>(p.done) / static_cast<float>(p.total) : 0.0f, ImVec2(ImGui::GetFontSize() * 22, 0), text);
  } else
    ImGui::TextDisabled("every variant's fast path, one head, d = %d (%s), random q, k, v, causal, the knobs above", d,
                        d == c.headDim() ? "this model's head width" : "the head width of the model it was measured on");
  if (measured && !measured->error.empty()) ImGui::TextColored(ImVec4(0.9f, 0.3f, 0.2f, 1), "%s", measured->error.c_str());
  nlohmann::json& facts = ctx.shared.facts["efficient"];
  facts["measured_points"] = points.size();
  facts["measuring"] = running;

  const std::vector<VariantComplexity> table = complexityTable();
  std::vector<VariantCurve> curves;
  for (const VariantComplexity& row : table) curves.push_back(curveOf(points, row.variant));
  const float width = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) / 2;
  const float height = std::max(ImGui::GetFontSize() * 12, ImGui::GetContentRegionAvail().y * 0.6f);
  for (int which = 0; which < 2; ++which) {
    double lo = 1e300, hi = 0;
    for (const VariantCurve& curve : curves)
      for (double y : which ? curve.bytes : curve.ms)
        if (y > 0) lo = std::min(lo, y), hi = std::max(hi, y);
    if (hi <= 0) lo = which ? 1e3 : 1e-3, hi = which ? 1e9 : 1e3;
    Plot plot(which ? "efficient_memory" : "efficient_time", ImVec2(width, height));
    plot.setTitle(which ? "peak working set against n (log-log)" : "time of one head against n (log-log)");
    plot.setAxes(180, costMaxN_ * 1.4, true, lo / 2, hi * 2, true, "n tokens", which ? "bytes" : "ms");
    plot.setFormats(formatCount, formatGeneral);
    plot.setLegend(LegendPlacement::Above);
    for (size_t i = 0; i < table.size(); ++i)
      plot.line(attentionVariantName(table[i].variant), curves[i].n, which ? curves[i].bytes : curves[i].ms, variantColour(table[i].variant), 2.5f);
    plot.draw();
    recordItem(ctx.shared, which ? "efficient_memory_plot" : "efficient_cost_plot");
    if (!which) ImGui::SameLine();
  }

  // The lecture's table with our numbers in it.
  const int columns = 10;
  if (ImGui::BeginTable("efficient_cost_table", columns, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* title : {"variant", "the slide (Appendix A15)", "time", "memory", "exact", "max n", "use", "time slope (expected)",
                              "memory slope (expected)", "at the largest n"})
      ImGui::TableSetupColumn(title, std::string_view(title) == "use" || std::string_view(title).starts_with("the slide")
                                         ? ImGuiTableColumnFlags_WidthStretch
                                         : ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableHeadersRow();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "the slide's cells: variant | complexity | exact | max n | use case (! where they differ from tscope's); slopes: the "
          "measured log-log fit over n, the lecture's exponent in brackets");
    for (size_t i = 0; i < table.size(); ++i) {
      const VariantComplexity& row = table[i];
      const VariantCurve& curve = curves[i];
      ImGui::TableNextColumn();
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(variantColour(row.variant)), "%s", attentionVariantName(row.variant));
      ImGui::TableNextColumn();
      drawSlideCell(slideVariantRow(row.variant), facts["slide_table"][attentionVariantName(row.variant)]);
      const std::string cells[] = {row.time,
                                   row.memory,
                                   row.exact ? "yes" : "no",
                                   row.maxN,
                                   row.useCase,
                                   slopeText(curve.timeFit, row.timeExponent),
                                   slopeText(curve.memoryFit, row.memoryExponent)};
      for (const std::string& cell : cells) {
        ImGui::TableNextColumn();
        if (&cell == &cells[4]) ImGui::TextWrapped("%s", cell.c_str());  // the use: the one stretching column
        else ImGui::TextUnformatted(cell.c_str());
      }
      ImGui::TableNextColumn();
      if (!curve.n.empty()) ImGui::Text("n %.0f: %.3g ms, %s", curve.n.back(), curve.ms.back(), formatBytes(curve.bytes.back()).c_str());
      if (curve.timeFit.points >= 2) {
        facts["time_slope"][attentionVariantName(row.variant)] = curve.timeFit.slope;
        facts["memory_slope"][attentionVariantName(row.variant)] = curve.memoryFit.slope;
      }
    }
    ImGui::EndTable();
  }
  recordItem(ctx.shared, "efficient_cost_table");
  drawSlideLists(facts);

  // The lecture's worked example.
  const int64_t exact = attentionMatrixBytes(4096, 16), linformer = linformerMatrixBytes(4096, 256, 16);
  ImGui::TextWrapped(
      "Worked example (n = 4096, d = 512, 16 heads, fp32): the attention matrices of one layer take 16 x 4096 x 4096 x 4 B = %s; "
      "Linformer with k = 256 keeps 16 x 4096 x 256 x 4 B = %s, %.0fx less (d does not enter: the matrices are n x n or n x k).",
      formatBytes((double)exact).c_str(), formatBytes((double)linformer).c_str(), (double)exact / std::max<int64_t>(1, linformer));
  facts["worked_exact_bytes"] = exact;
  facts["worked_linformer_bytes"] = linformer;
}

}  // namespace tscope::gui

// The Scaling panel's "Emergence" tab (scaling_lab.h): on a synthetic task's sweep (the shipped
// "addition" sweep, or the sweep on screen when its runs were scored), exact-match accuracy and the
// per-token loss of the answer against model size, side by side, one line per token budget. The same
// models, two metrics: the all-or-nothing one jumps, the per-token one falls smoothly (Schaeffer et
// al. 2023, "Are emergent abilities of large language models a mirage?", arXiv 2304.15004).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "app/gui/panels/scaling/scaling_lab.h"
#include "app/gui/widgets/plot.h"
#include "model/core/error.h"

namespace tscope::gui {

namespace {

// The scored runs of a sweep, as (N, D, label, scores), ascending N.
struct ScoredRun {
  double params = 0, tokens = 0;
  std::string label;
  TaskScores scores;
};
std::vector<ScoredRun> scoredRuns(const SweepResults& results) {
  const LabelledPoints points = labelledPoints(results);
  std::vector<ScoredRun> runs;
  for (size_t i = 0; i < results.runs.size() && i < points.points.size(); ++i)
    if (results.runs[i].task) runs.push_back({points.points[i].params, points.points[i].tokens, points.labels[i], *results.runs[i].task});
  std::sort(runs.begin(), runs.end(), [](const ScoredRun& a, const ScoredRun& b) { return a.params < b.params; });
  return runs;
}

// One metric against N: a line per budget through its runs.
void drawMetricPlot(PanelContext& ctx, const char* id, const char* title, const char* yLabel, const std::vector<ScoredRun>& runs,
                    double (*metric)(const TaskScores&), bool logY, ImVec2 size) {
  Plot plot(id, size);
  plot.setTitle(title);
  plot.setFormats(formatCount, formatGeneral);
  plot.setLegend(LegendPlacement::TopLeft);
  std::vector<double> budgets;
  for (const ScoredRun& r : runs) budgets.push_back(r.tokens);
  budgets = distinctValues(std::move(budgets));
  double xLo = INFINITY, xHi = -INFINITY, yLo = INFINITY, yHi = -INFINITY;
  for (double d : budgets) {
    std::vector<double> xs, ys;
    for (const ScoredRun& r : runs)
      if (r.tokens == d) xs.push_back(r.params), ys.push_back(metric(r.scores));
    plot.line("D = " + formatCount(d), xs, ys, keyColour(budgets, d), 2.5f);
  }
  for (const ScoredRun& r : runs) {
    const double y = metric(r.scores);
    plot.marker(r.label, r.params, y, keyColour(budgets, r.tokens));
    xLo = std::min(xLo, r.params), xHi = std::max(xHi, r.params);
    if (!logY || y > 0) yLo = std::min(yLo, y), yHi = std::max(yHi, y);
  }
  if (runs.empty()) xLo = 1, xHi = 10;
  if (!(yLo <= yHi)) yLo = 0.1, yHi = 1;
  if (logY) plot.setAxes(xLo / 1.5, xHi * 1.5, true, yLo / 1.2, yHi * 1.2, true, "parameters N", yLabel);
  else plot.setAxes(xLo / 1.5, xHi * 1.5, true, 0, 1.05, false, "parameters N", yLabel);
  plot.draw();
  recordItem(ctx.shared, id);
}

double exactMatch(const TaskScores& s) { return s.exactMatch; }
double answerLoss(const TaskScores& s) { return s.answerTokenLoss; }

// The sweep to show: the one on screen when it scores a task, else the shipped "addition" sweep.
const SweepResults* emergenceSweep(ScalingRunsView& v, const SweepView& view) {
  if (view.results && !scoredRuns(*view.results).empty()) {
    v.emergenceSource = view.path;
    return view.results.get();
  }
  if (!v.emergenceLoaded) {
    v.emergenceLoaded = true;
    for (const auto& [name, path] : shippedSweeps()) {
      if (name != "addition") continue;
      try {
        v.emergence = loadSweep(path);
        v.emergenceSource = path;
      } catch (const Error& e) {
        v.emergenceError = e.what();
      }
    }
    if (!v.emergence && v.emergenceError.empty())
      v.emergenceError = "no synthetic-task sweep: the shipped \"addition\" sweep is missing; start the addition preset in Your runs";
  }
  if (v.emergence) v.emergenceSource = "shipped addition sweep";
  return v.emergence ? &*v.emergence : nullptr;
}

}  // namespace

void drawScalingEmergence(PanelContext& ctx, ScalingRunsView& v) {
  const std::shared_ptr<const SweepView> latest = ctx.sweeps ? ctx.sweeps->latest() : nullptr;
  const SweepResults* sweep = latest ? emergenceSweep(v, *latest) : nullptr;
  const std::vector<ScoredRun> runs = sweep ? scoredRuns(*sweep) : std::vector<ScoredRun>{};
  ImGui::TextWrapped(
      "The same models scored two ways. Exact match (every digit of the answer right) seems to appear suddenly "
      "with size, while the loss per answer token falls smoothly: the jump is in the metric, not the model "
      "(Schaeffer et al. 2023).");
  if (sweep) ImGui::TextDisabled("%s: %s", v.emergenceSource.c_str(), sweep->spec.title.c_str());
  else ImGui::TextColored(ImVec4(0.9f, 0.3f, 0.25f, 1.0f), "%s", v.emergenceError.c_str());
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool sideBySide = avail.x / 2 >= ImGui::GetFontSize() * 18;
  const ImVec2 size = sideBySide ? ImVec2((avail.x - spacing) / 2, avail.y) : ImVec2(avail.x, std::max(ImGui::GetFontSize() * 12, avail.y / 2));
  drawMetricPlot(ctx, "scaling_emergence_exact", "Exact-match accuracy vs N", "exact match (share of examples)", runs, exactMatch, false, size);
  if (sideBySide) ImGui::SameLine();
  drawMetricPlot(ctx, "scaling_emergence_loss", "Per-token loss of the answer vs N", "answer loss (nats/token)", runs, answerLoss, true, size);
  nlohmann::json& facts = ctx.shared.facts["scaling_emergence"];
  facts["source"] = v.emergenceSource;
  facts["runs"] = runs.size();
  facts["error"] = sweep ? "" : v.emergenceError;
}

}  // namespace tscope::gui

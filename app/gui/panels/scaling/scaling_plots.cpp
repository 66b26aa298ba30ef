// The scaling lab's plots of measured runs (scaling_lab.h): every curve is sampled from the fitted
// constants (model/theory/scaling_fit.h) or the published ones (model/theory/scaling.h); this file
// only samples, colours and lays out. Points are coloured by the other variable (loss vs N by D),
// so a reader sees which runs were data-limited.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/scaling/scaling_lab.h"
#include "app/gui/widgets/plot.h"

namespace tscope::gui {

namespace {

constexpr int kCurvePoints = 80;
constexpr double kExtrapolateTo = 1e25;  // FLOP: past Chinchilla's own budget (5.88e23)

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  void add(const std::vector<double>& vs) {
    for (double v : vs) add(v);
  }
  bool valid() const { return lo <= hi; }
  // Widened by a factor on log axes (a single value too).
  double low(double factor) const { return lo / factor; }
  double high(double factor) const { return hi * factor; }
};

ImU32 fitColour() { return ImGui::GetColorU32(ImGuiCol_Text); }
ImU32 publishedColour(int which, bool projector) {
  const ImU32 light[] = {IM_COL32(200, 60, 40, 255), IM_COL32(20, 130, 60, 255), IM_COL32(110, 110, 110, 255)};
  const ImU32 dark[] = {IM_COL32(255, 120, 90, 255), IM_COL32(90, 210, 120, 255), IM_COL32(170, 170, 170, 255)};
  return projector ? light[which] : dark[which];
}

std::vector<double> mapped(const std::vector<double>& xs, auto f) {
  std::vector<double> ys;
  ys.reserve(xs.size());
  for (double x : xs) ys.push_back(f(x));
  return ys;
}

// The measured points in the colours of `keys` (their legend entries first unless keyName is null), x
// and y by the getters.
void addRuns(Plot& plot, const LabelledPoints& runs, const std::vector<double>& keys, const char* keyName, auto key, auto x, auto y, Range& xr,
             Range& yr) {
  if (keyName)  // the colour key in the legend
    for (double k : keys) plot.line(std::string(keyName) + " = " + formatCount(k), {}, {}, keyColour(keys, k));
  for (size_t i = 0; i < runs.points.size(); ++i) {
    const ScalingPoint& p = runs.points[i];
    plot.marker(runs.labels[i], x(p), y(p), keyColour(keys, key(p)));
    xr.add(x(p));
    yr.add(y(p));
  }
}

// A fit whose curves cannot be drawn (constants out of range): the points stay, with a note why.
void unusableFit(Plot& plot, const std::exception& e, const Range& xr, const Range& yr) {
  plot.note(std::sqrt(xr.lo * xr.hi), std::sqrt(yr.lo * yr.hi), std::string("fit not drawn: ") + e.what(), ImGui::GetColorU32(ImGuiCol_TextDisabled));
}

void emptyNote(Plot& plot, const char* text) {
  plot.setAxes(1, 10, true, 1, 10, true, "", "");
  plot.note(std::sqrt(10.0), std::sqrt(10.0), text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
}

void addOptimumCurves(PanelContext& ctx, Plot& plot, const SweepFits& fits, const Range& flops, Range& yr) {
  const double lo = flops.low(3), end = std::max(kExtrapolateTo, flops.hi * 10);
  auto optimal = [](const ChinchillaConstants& c) { return [c](double f) { return chinchillaOptimum(c, f).params; }; };
  const std::vector<double> measured = logSpace(lo, flops.hi, kCurvePoints), beyond = logSpace(flops.hi, end, kCurvePoints);
  const std::vector<double> all = logSpace(lo, end, kCurvePoints * 2);
  const std::vector<std::pair<std::string, std::vector<double>>> published = {
      {"Hoffmann 2022 (published)", mapped(all, optimal(chinchillaHoffmann2022()))},
      {"Besiroglu 2024 (refit)", mapped(all, optimal(chinchillaBesiroglu2024()))}};
  for (size_t i = 0; i < published.size(); ++i) {
    plot.line(published[i].first, all, published[i].second, publishedColour(static_cast<int>(i), ctx.state.projector), 1.8f);
    yr.add(published[i].second);
  }
  const auto ours = optimal(fits.chinchilla.constants);
  const std::vector<double> inside = mapped(measured, ours), outside = mapped(beyond, ours);
  plot.line("ours, fitted range", measured, inside, fitColour(), 3.0f);
  plot.line("ours, extrapolated", beyond, outside, ImGui::GetColorU32(ImGuiCol_TextDisabled), 1.2f);
  yr.add(inside);
  yr.add(outside);
  plot.vline(flops.hi, "our largest budget", ImGui::GetColorU32(ImGuiCol_TextDisabled));
  const NamedRun chinchilla = chinchillaRun();
  plot.point("Chinchilla 70B", chinchilla.flops(), chinchilla.params, publishedColour(1, ctx.state.projector), LabelSide::BelowRight);
}

}  // namespace

LabelledPoints labelledPoints(const SweepResults& results) {
  LabelledPoints out;
  out.points = sweepPoints(results);
  for (size_t i = 0; i < out.points.size(); ++i) {
    char text[160];
    const std::string name = i < results.runs.size() ? results.runs[i].name : "run " + std::to_string(i + 1);
    std::snprintf(text, sizeof text, "%s: N %s, D %s, val %.3f", name.c_str(), formatCount(out.points[i].params).c_str(),
                  formatCount(out.points[i].tokens).c_str(), out.points[i].loss);
    out.labels.push_back(text);
  }
  return out;
}

std::vector<double> distinctValues(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

ImU32 keyColour(const std::vector<double>& keys, double value) {
  const auto at = std::lower_bound(keys.begin(), keys.end(), value);
  return categoryColour(static_cast<int>(at - keys.begin()), static_cast<int>(keys.size()));
}

int drawPowerLawPlot(PanelContext& ctx, const SweepView& view, bool byParams, ImVec2 size) {
  const char* id = byParams ? "scaling_runs_n" : "scaling_runs_d";
  Plot plot(id, size);
  plot.setTitle(byParams ? "Loss vs parameters N (colour: tokens D)" : "Loss vs tokens D (colour: parameters N)");
  plot.setFormats(formatCount, formatGeneral);
  plot.setLegend(LegendPlacement::BottomLeft);  // the loss falls to the right: small x and low loss stay empty
  const LabelledPoints runs = view.results ? labelledPoints(*view.results) : LabelledPoints{};
  if (runs.points.empty()) {
    emptyNote(plot, "no finished runs yet");
    plot.draw();
    recordItem(ctx.shared, id);
    return 0;
  }
  auto params = [](const ScalingPoint& p) { return p.params; };
  auto tokens = [](const ScalingPoint& p) { return p.tokens; };
  auto loss = [](const ScalingPoint& p) { return p.loss; };
  std::vector<double> keyValues;
  for (const ScalingPoint& p : runs.points) keyValues.push_back(byParams ? p.tokens : p.params);
  const std::vector<double> keys = distinctValues(keyValues);
  Range xr, yr;
  if (byParams) addRuns(plot, runs, keys, "D", tokens, params, loss, xr, yr);
  else addRuns(plot, runs, keys, "N", params, tokens, loss, xr, yr);
  const std::vector<double> xs = logSpace(xr.low(1.5), xr.high(1.5), kCurvePoints);
  const SweepFits* fits = view.fits.get();
  const PowerLawFit* fit = !fits      ? nullptr
                           : byParams ? (fits->hasKaplanParams ? &fits->kaplanParams : nullptr)
                                      : (fits->hasKaplanTokens ? &fits->kaplanTokens : nullptr);
  if (fit) try {
      char name[96];
      std::snprintf(name, sizeof name, "our fit, alpha_%s %.3f", byParams ? "N" : "D", fit->alpha);
      const std::vector<double> ys = mapped(xs, [&](double x) { return fit->loss(x); });
      plot.line(name, xs, ys, fitColour(), 2.5f);
      yr.add(ys);
      // Kaplan's published exponent through our fit at the middle of the range (only the slope compares:
      // their N_c and D_c are for another data set and tokenizer).
      const KaplanConstants kaplan;
      const double alpha = byParams ? kaplan.alphaN : kaplan.alphaD, middle = std::sqrt(xr.lo * xr.hi);
      std::snprintf(name, sizeof name, "Kaplan 2020 slope, %.3f", alpha);
      const std::vector<double> published = mapped(xs, [&](double x) { return scaleLossToParams(fit->loss(middle), middle, x, alpha); });
      plot.line(name, xs, published, publishedColour(2, ctx.state.projector), 1.6f);
      yr.add(published);
    } catch (const std::exception& e) {
      unusableFit(plot, e, xr, yr);
    }
  plot.setAxes(xs.front(), xs.back(), true, yr.low(1.05), yr.high(1.05), true, byParams ? "parameters N" : "tokens D",
               "validation loss (nats/token)");
  plot.draw();
  recordItem(ctx.shared, id);
  return static_cast<int>(runs.points.size());
}

void drawComputePlot(PanelContext& ctx, const SweepView& view, bool isoFlop, ImVec2 size) {
  Plot plot("scaling_runs_c", size);
  plot.setTitle(isoFlop ? "Fitted iso-FLOP curves: loss vs N at fixed compute" : "Loss vs compute C = 6ND (colour: parameters N)");
  plot.setFormats(isoFlop ? formatCount : formatScientific, formatGeneral);
  plot.setLegend(LegendPlacement::BottomLeft);
  const LabelledPoints runs = view.results ? labelledPoints(*view.results) : LabelledPoints{};
  if (runs.points.empty()) {
    emptyNote(plot, "no finished runs yet");
    plot.draw();
    recordItem(ctx.shared, "scaling_runs_c");
    return;
  }
  std::vector<double> params;
  Range flops;
  for (const ScalingPoint& p : runs.points) params.push_back(p.params), flops.add(p.flops());
  const std::vector<double> sizes = distinctValues(params);
  Range xr, yr;
  auto paramsOf = [](const ScalingPoint& p) { return p.params; };
  auto flopsOf = [](const ScalingPoint& p) { return p.flops(); };
  auto loss = [](const ScalingPoint& p) { return p.loss; };
  addRuns(plot, runs, sizes, isoFlop ? nullptr : "N", paramsOf, isoFlop ? paramsOf : flopsOf, loss, xr, yr);
  const double xLo = xr.low(isoFlop ? 3 : 2), xHi = xr.high(isoFlop ? 3 : 2);
  const SweepFits* fits = view.fits.get();
  if (fits && fits->hasChinchilla) try {
      const ChinchillaConstants& c = fits->chinchilla.constants;
      if (isoFlop) {
        const std::vector<double> budgets = logSpace(flops.lo, flops.hi, flops.lo < flops.hi ? 4 : 2);
        for (size_t i = 0; i < budgets.size(); ++i) {
          const Curve iso = chinchillaIsoFlopCurve(c, budgets[i], xLo, xHi, kCurvePoints);
          const ImU32 colour = categoryColour(static_cast<int>(i), static_cast<int>(budgets.size()), 0.6f);
          plot.line("C = " + formatScientific(budgets[i]), iso.x, iso.y, colour, 1.4f);
        }
        const Curve frontier = chinchillaFrontierCurve(c, flops.low(10), flops.high(10), kCurvePoints);
        plot.line("fitted frontier", frontier.x, frontier.y, fitColour(), 2.5f);
        yr.add(frontier.y);
      } else {
        const std::vector<double> cs = logSpace(xLo, xHi, kCurvePoints);
        for (double n : sizes)
          plot.line("fit N = " + formatCount(n), cs, mapped(cs, [&](double f) { return chinchillaLoss(c, n, f / (6 * n)); }), keyColour(sizes, n),
                    1.2f, false);
        const std::vector<double> frontier = mapped(cs, [&](double f) { return chinchillaOptimum(c, f).loss; });
        plot.line("fitted frontier", cs, frontier, fitColour(), 2.5f);
        yr.add(frontier);
      }
    } catch (const std::exception& e) {
      unusableFit(plot, e, xr, yr);
    }
  else {
    plot.note(std::sqrt(xLo * xHi), std::sqrt(yr.lo * yr.hi), "L(N, D) needs 5 runs, 2 sizes and 2 budgets",
              ImGui::GetColorU32(ImGuiCol_TextDisabled));
  }
  plot.setAxes(xLo, xHi, true, yr.low(1.05), std::min(yr.high(1.05), yr.hi * 1.5), true, isoFlop ? "parameters N" : "compute C (FLOP)",
               "validation loss (nats/token)");
  plot.draw();
  recordItem(ctx.shared, "scaling_runs_c");
}

void drawOptimumPlot(PanelContext& ctx, const SweepView& view, ImVec2 size) {
  Plot plot("scaling_runs_nopt", size);
  plot.setTitle("Compute-optimal N_opt vs compute C");
  plot.setFormats(formatScientific, formatCount);
  plot.setLegend(LegendPlacement::TopLeft);
  const SweepFits* fits = view.fits.get();
  if (!fits || !fits->hasChinchilla) {
    emptyNote(plot, "needs the L(N, D) fit (5 runs, 2 sizes, 2 budgets)");
    plot.draw();
    recordItem(ctx.shared, "scaling_runs_nopt");
    return;
  }
  Range flops, yr;
  for (const ScalingPoint& p : fits->points) flops.add(p.flops());
  try {
    addOptimumCurves(ctx, plot, *fits, flops, yr);
  } catch (const std::exception& e) {
    unusableFit(plot, e, flops, yr.valid() ? yr : flops);
  }
  const double lo = flops.low(3), end = std::max(kExtrapolateTo, flops.hi * 10);
  plot.setAxes(lo, end, true, yr.valid() ? yr.low(2) : 1, yr.valid() ? yr.high(2) : 10, true, "compute C (FLOP)", "N_opt (parameters)");
  plot.draw();
  recordItem(ctx.shared, "scaling_runs_nopt");
}

}  // namespace tscope::gui

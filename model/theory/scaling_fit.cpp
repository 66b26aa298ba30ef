// Kaplan's power laws fitted to measured runs, the points they are fitted to, a whole sweep's fits
// with notes in place of exceptions, and their CSV. The Chinchilla fit is in scaling_fit_chinchilla.cpp;
// the log-log line is attention_cost's fitLogLog (one least-squares line for the whole program).
#include "model/theory/scaling_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "model/core/csv.h"
#include "model/core/error.h"
#include "model/theory/attention_cost.h"

namespace tscope {

namespace {

// The lowest loss at each distinct value of `member` (ascending).
LawPoints bestLossPer(std::span<const ScalingPoint> points, double ScalingPoint::*member) {
  std::map<double, double> best;
  for (const ScalingPoint& p : points) {
    auto [it, inserted] = best.emplace(p.*member, p.loss);
    if (!inserted) it->second = std::min(it->second, p.loss);
  }
  LawPoints law;
  for (const auto& [x, loss] : best) {
    law.x.push_back(x);
    law.loss.push_back(loss);
  }
  return law;
}

}  // namespace

void validatePoints(std::span<const ScalingPoint> points) {
  for (size_t i = 0; i < points.size(); ++i) {
    const ScalingPoint& p = points[i];
    const auto check = [&](const char* name, double v) {
      if (!(v > 0) || !std::isfinite(v))
        throw Error("scaling point " + std::to_string(i) + ": " + name + " must be positive and finite (got " + csvNumber(v) + ")");
    };
    check("params N", p.params);
    check("tokens D", p.tokens);
    check("loss", p.loss);
  }
}

double PowerLawFit::loss(double x) const { return std::pow(scale / x, alpha); }

PowerLawFit fitPowerLaw(std::span<const double> xs, std::span<const double> losses) {
  LogLogFit line;
  try {
    line = fitLogLog(xs, losses);
  } catch (const Error& e) {
    throw Error(std::string("power-law fit: ") + e.what());
  }
  if (!(line.slope < 0))
    throw Error("power-law fit: the loss does not fall with x (log-log slope " + csvNumber(line.slope) + "), so there is no power law to report");
  PowerLawFit fit;
  fit.alpha = -line.slope;
  fit.scale = std::exp(line.intercept / fit.alpha);  // log L = alpha log scale - alpha log x
  fit.points = line.points;
  double sum = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double r = std::log(losses[i]) - (line.intercept + line.slope * std::log(xs[i]));
    sum += r * r;
  }
  fit.rmsLogResidual = std::sqrt(sum / static_cast<double>(xs.size()));
  return fit;
}

LawPoints bestLossPerParams(std::span<const ScalingPoint> points) { return bestLossPer(points, &ScalingPoint::params); }

LawPoints bestLossPerTokens(std::span<const ScalingPoint> points) { return bestLossPer(points, &ScalingPoint::tokens); }

SweepFits fitSweep(std::span<const ScalingPoint> points, int bootstrapSamples, uint64_t seed) {
  SweepFits fits;
  fits.points.assign(points.begin(), points.end());
  try {
    validatePoints(points);
  } catch (const Error& e) {
    fits.notes.push_back(std::string("no fit: ") + e.what());
    return fits;
  }
  if (points.empty()) {
    fits.notes.push_back("no fit: no runs");
    return fits;
  }
  const auto fitLaw = [&](const char* law, const LawPoints& lawPoints, const char* onlyOne, PowerLawFit& fit, bool& has) {
    if (lawPoints.x.size() < 2) {
      fits.notes.push_back(std::string(law) + ": " + onlyOne);
      return;
    }
    try {
      fit = fitPowerLaw(lawPoints.x, lawPoints.loss);
      has = true;
    } catch (const Error& e) {
      fits.notes.push_back(std::string(law) + ": " + e.what());
    }
  };
  fitLaw("L(N)", bestLossPerParams(points), "only one model size", fits.kaplanParams, fits.hasKaplanParams);
  fitLaw("L(D)", bestLossPerTokens(points), "only one token count", fits.kaplanTokens, fits.hasKaplanTokens);

  try {
    fits.chinchilla = fitChinchilla(points);
    fits.hasChinchilla = true;
  } catch (const Error& e) {
    fits.notes.push_back(std::string("L(N, D): ") + e.what());
    return fits;
  }
  double largestFlops = 0;
  for (const ScalingPoint& p : points) largestFlops = std::max(largestFlops, p.flops());
  try {
    fits.optimumAtSweep = chinchillaOptimum(fits.chinchilla.constants, largestFlops);
    fits.optimumAtChinchilla = chinchillaOptimum(fits.chinchilla.constants, chinchillaRun().flops());
  } catch (const Error& e) {
    fits.notes.push_back(std::string("compute optimum: ") + e.what());
    return fits;
  }
  if (bootstrapSamples > 0) {
    fits.bootstrap = bootstrapChinchilla(points, fits.chinchilla, largestFlops, bootstrapSamples, 0.8, seed);
    if (fits.bootstrap.samples == 0) fits.notes.push_back("bootstrap: no resample could be fitted");
  }
  return fits;
}

std::string fitsCsv(const SweepFits& fits) {
  std::string csv = "law,constant,value,lo,hi\n";
  const auto row = [&](const char* law, const char* constant, double value, const Interval* interval = nullptr) {
    csv += std::string(law) + "," + constant + "," + csvNumber(value) + ",";
    if (interval) csv += csvNumber(interval->lo) + "," + csvNumber(interval->hi);
    else csv += ",";
    csv += "\n";
  };
  const auto powerLaw = [&](const char* law, const char* exponent, const char* scale, const PowerLawFit& fit) {
    row(law, exponent, fit.alpha);
    row(law, scale, fit.scale);
    row(law, "rms_log_residual", fit.rmsLogResidual);
    row(law, "points", fit.points);
  };
  if (fits.hasKaplanParams) powerLaw("kaplan_params", "alpha_N", "N_c", fits.kaplanParams);
  if (fits.hasKaplanTokens) powerLaw("kaplan_tokens", "alpha_D", "D_c", fits.kaplanTokens);
  if (!fits.hasChinchilla) return csv;
  const ChinchillaFit& c = fits.chinchilla;
  const ChinchillaBootstrap& boot = fits.bootstrap;
  const bool withIntervals = boot.samples > 0;
  const auto maybe = [&](const Interval& interval) { return withIntervals ? &interval : nullptr; };
  row("chinchilla", "E", c.constants.E, maybe(boot.E));
  row("chinchilla", "A", c.constants.A);
  row("chinchilla", "B", c.constants.B);
  row("chinchilla", "alpha", c.constants.alpha, maybe(boot.alpha));
  row("chinchilla", "beta", c.constants.beta, maybe(boot.beta));
  row("chinchilla", "objective", c.objective);
  row("chinchilla", "rms_log_residual", c.rmsLogResidual);
  row("chinchilla", "points", c.points);
  if (fits.optimumAtSweep.flops <= 0) return csv;  // no frontier (an exponent was not positive)
  row("chinchilla", "params_exponent", chinchillaParamsExponent(c.constants), maybe(boot.paramsExponent));
  if (withIntervals) row("chinchilla", "bootstrap_samples", boot.samples);
  const auto optimum = [&](const char* law, const ComputeOptimum& o, const Interval* ratioInterval) {
    row(law, "flops", o.flops);
    row(law, "params", o.params);
    row(law, "tokens", o.tokens);
    row(law, "tokens_per_param", o.tokensPerParam, ratioInterval);
    row(law, "loss", o.loss);
  };
  const bool bootstrapAtSweep = withIntervals && boot.atFlops == fits.optimumAtSweep.flops;
  optimum("optimum_at_sweep", fits.optimumAtSweep, bootstrapAtSweep ? &boot.tokensPerParam : nullptr);
  optimum("optimum_at_chinchilla", fits.optimumAtChinchilla, nullptr);
  return csv;
}

}  // namespace tscope

// Chinchilla's parametric fit (Hoffmann et al. 2022 Approach 3) and its bootstrap (Besiroglu et al.
// 2024). Parameters are fitted in logs, theta = (a, b, e, alpha, beta) with A = exp(a), B = exp(b),
// E = exp(e), so log L = LSE(a - alpha log N, b - beta log D, e) and the softmax of the three terms
// is the gradient of the LSE: the objective and its analytic gradient cost one pass over the points.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "model/core/cpu_threads.h"
#include "model/core/error.h"
#include "model/theory/lbfgs.h"
#include "model/theory/scaling_fit.h"

namespace tscope {

namespace {

constexpr int kParameters = 5;  // (a, b, e, alpha, beta)

// The points in the logs the objective reads, computed once per fit.
struct LogPoints {
  std::vector<double> logN, logD, logL;
};

LogPoints logsOf(std::span<const ScalingPoint> points) {
  LogPoints logs;
  for (const ScalingPoint& p : points) {
    logs.logN.push_back(std::log(p.params));
    logs.logD.push_back(std::log(p.tokens));
    logs.logL.push_back(std::log(p.loss));
  }
  return logs;
}

// log L predicted at point i and the softmax weights of its three terms (d log L / d(a, b, e)).
struct Prediction {
  double logLoss, weightA, weightB, weightE;
};

Prediction predict(const double* theta, double logN, double logD) {
  const double termA = theta[0] - theta[3] * logN, termB = theta[1] - theta[4] * logD, termE = theta[2];
  const double top = std::max({termA, termB, termE});
  // exp(0) = 1 for the largest term: two exps per point instead of three (the fit's inner loop).
  const double expA = termA == top ? 1.0 : std::exp(termA - top), expB = termB == top ? 1.0 : std::exp(termB - top);
  const double expE = termE == top ? 1.0 : std::exp(termE - top);
  const double sum = expA + expB + expE, inverse = 1.0 / sum;
  return {top + std::log(sum), expA * inverse, expB * inverse, expE * inverse};
}

// Mean Huber loss of the log residuals at theta; its gradient into `gradient` when it has 5 entries.
double huberObjective(const LogPoints& logs, double delta, std::span<const double> theta, std::span<double> gradient) {
  const bool withGradient = gradient.size() == kParameters;
  if (withGradient) std::fill(gradient.begin(), gradient.end(), 0.0);
  double sum = 0;
  for (size_t i = 0; i < logs.logL.size(); ++i) {
    const Prediction p = predict(theta.data(), logs.logN[i], logs.logD[i]);
    const double r = p.logLoss - logs.logL[i];
    double slope = r;  // dHuber/dr
    if (std::fabs(r) <= delta) {
      sum += 0.5 * r * r;
    } else {
      sum += delta * (std::fabs(r) - 0.5 * delta);
      slope = std::copysign(delta, r);
    }
    if (!withGradient) continue;
    gradient[0] += slope * p.weightA;
    gradient[1] += slope * p.weightB;
    gradient[2] += slope * p.weightE;
    gradient[3] -= slope * p.weightA * logs.logN[i];
    gradient[4] -= slope * p.weightB * logs.logD[i];
  }
  const double count = static_cast<double>(logs.logL.size());
  if (withGradient)
    for (double& g : gradient) g /= count;
  return sum / count;
}

std::vector<double> thetaOf(const ChinchillaConstants& c) { return {std::log(c.A), std::log(c.B), std::log(c.E), c.alpha, c.beta}; }

ChinchillaConstants constantsOf(std::span<const double> theta) {
  return ChinchillaConstants{std::exp(theta[2]), std::exp(theta[0]), std::exp(theta[1]), theta[3], theta[4]};
}

double rmsLogResidual(const LogPoints& logs, std::span<const double> theta) {
  double sum = 0;
  for (size_t i = 0; i < logs.logL.size(); ++i) {
    const double r = predict(theta.data(), logs.logN[i], logs.logD[i]).logLoss - logs.logL[i];
    sum += r * r;
  }
  return std::sqrt(sum / static_cast<double>(logs.logL.size()));
}

size_t distinctCount(std::span<const ScalingPoint> points, double ScalingPoint::*member) {
  std::set<double> values;
  for (const ScalingPoint& p : points) values.insert(p.*member);
  return values.size();
}

// Empty when the points pin down all five constants; else what is missing, for the message.
std::string missingForChinchilla(std::span<const ScalingPoint> points) {
  if (points.size() < kParameters) return "needs at least 5 points for its 5 constants, not " + std::to_string(points.size());
  if (distinctCount(points, &ScalingPoint::params) < 2) return "needs at least 2 distinct model sizes N (only one model size)";
  if (distinctCount(points, &ScalingPoint::tokens) < 2) return "needs at least 2 distinct token counts D (only one token count)";
  return {};
}

void checkForChinchilla(std::span<const ScalingPoint> points) {
  validatePoints(points);
  if (const std::string missing = missingForChinchilla(points); !missing.empty()) throw Error("Chinchilla fit " + missing);
}

// Every start: the extra ones, then the grid (alpha outermost, b innermost).
std::vector<std::vector<double>> startsOf(const ChinchillaFitOptions& options) {
  std::vector<std::vector<double>> starts;
  for (const ChinchillaConstants& c : options.extraStarts) starts.push_back(thetaOf(c));
  for (double alpha : options.alphaStarts)
    for (double beta : options.betaStarts)
      for (double e : options.eStarts)
        for (double a : options.aStarts)
          for (double b : options.bStarts) starts.push_back({a, b, e, alpha, beta});
  return starts;
}

// fitChinchilla on points already checked: every start on `threads` threads (each start's result
// kept in its slot, then the lowest taken in start order, so the answer does not depend on them).
ChinchillaFit fitChecked(std::span<const ScalingPoint> points, const ChinchillaFitOptions& options, int threads) {
  if (!(options.huberDelta > 0) || !std::isfinite(options.huberDelta))
    throw Error("Chinchilla fit: the Huber delta must be positive and finite (got " + std::to_string(options.huberDelta) + ")");
  const std::vector<std::vector<double>> starts = startsOf(options);
  if (starts.empty()) throw Error("Chinchilla fit: no starts (every start list of the grid is empty)");
  const LogPoints logs = logsOf(points);
  const ObjectiveWithGradient objective = [&](std::span<const double> theta, std::span<double> gradient) {
    return huberObjective(logs, options.huberDelta, theta, gradient);
  };
  LbfgsOptions lbfgs;
  lbfgs.maxIterations = options.maxIterations;
  std::vector<LbfgsResult> results(starts.size());
  const int count = static_cast<int>(starts.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads) if (threads > 1)
  for (int i = 0; i < count; ++i) results[i] = minimizeLbfgs(objective, starts[i], lbfgs);
  const LbfgsResult* best = nullptr;
  for (const LbfgsResult& result : results)
    if (std::isfinite(result.value) && (!best || result.value < best->value)) best = &result;
  if (!best) throw Error("Chinchilla fit: no start reached a finite objective");
  ChinchillaFit fit;
  fit.constants = constantsOf(best->x);
  fit.objective = best->value;
  fit.rmsLogResidual = rmsLogResidual(logs, best->x);
  fit.points = static_cast<int>(points.size());
  fit.starts = count;
  return fit;
}

// The central `level` share of `values` (sorted here), by linear interpolation between order statistics.
Interval centralInterval(std::vector<double> values, double level) {
  std::sort(values.begin(), values.end());
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(values.size() - 1);
    const size_t below = static_cast<size_t>(std::floor(position));
    const size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
  };
  const double tail = 0.5 * (1 - level);
  return {quantile(tail), quantile(1 - tail)};
}

}  // namespace

double chinchillaObjective(std::span<const ScalingPoint> points, const ChinchillaConstants& constants, double huberDelta,
                           std::span<double> gradient) {
  if (!(constants.E > 0)) throw Error("Chinchilla objective: E must be positive (it is fitted as log E)");
  const std::vector<double> theta = thetaOf(constants);
  return huberObjective(logsOf(points), huberDelta, theta, gradient);
}

ChinchillaFit fitChinchilla(std::span<const ScalingPoint> points, const ChinchillaFitOptions& options) {
  checkForChinchilla(points);
  return fitChecked(points, options, resolveThreadCount(0));
}

ChinchillaBootstrap bootstrapChinchilla(std::span<const ScalingPoint> points, const ChinchillaFit& fit, double atFlops, int samples, double level,
                                        uint64_t seed) {
  checkForChinchilla(points);
  if (samples < 1) throw Error("Chinchilla bootstrap: needs at least 1 sample, not " + std::to_string(samples));
  if (!(level > 0 && level < 1)) throw Error("Chinchilla bootstrap: level must be in (0, 1) (got " + std::to_string(level) + ")");
  if (!(atFlops > 0) || !std::isfinite(atFlops))
    throw Error("Chinchilla bootstrap: the budget in FLOP must be positive and finite (got " + std::to_string(atFlops) + ")");
  // The full fit's answer, then a coarse grid around its A and B.
  ChinchillaFitOptions refit;
  refit.extraStarts = {fit.constants};
  refit.alphaStarts = refit.betaStarts = {0.2, 0.5, 1};
  refit.eStarts = {-1, 0, 1};
  refit.aStarts = {std::log(fit.constants.A)};
  refit.bStarts = {std::log(fit.constants.B)};

  // The resamples are drawn in order from one generator, then fitted in parallel (one thread per
  // resample), so the intervals depend on the seed alone.
  std::mt19937_64 rng(seed);
  std::vector<std::vector<ScalingPoint>> resamples(samples, std::vector<ScalingPoint>(points.size()));
  for (std::vector<ScalingPoint>& resample : resamples)
    for (ScalingPoint& p : resample) p = points[rng() % points.size()];
  std::vector<ChinchillaConstants> refits(samples);
  std::vector<char> fitted(samples, 0);
  const int threads = resolveThreadCount(0);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (int s = 0; s < samples; ++s) {
    if (!missingForChinchilla(resamples[s]).empty()) continue;  // e.g. every draw at one model size
    try {
      const ChinchillaConstants c = fitChecked(resamples[s], refit, 1).constants;
      // A resample whose exponents are not positive has no compute-optimal frontier: skipped.
      fitted[s] = c.alpha > 0 && c.beta > 0 && std::isfinite(c.A) && std::isfinite(c.B) && std::isfinite(c.E);
      refits[s] = c;
    } catch (const Error&) {  // no start reached a finite objective
    }
  }
  std::vector<double> alphas, betas, Es, exponents, ratios;
  for (int s = 0; s < samples; ++s) {
    if (!fitted[s]) continue;
    const ChinchillaConstants& c = refits[s];
    alphas.push_back(c.alpha);
    betas.push_back(c.beta);
    Es.push_back(c.E);
    exponents.push_back(chinchillaParamsExponent(c));
    ratios.push_back(chinchillaOptimum(c, atFlops).tokensPerParam);
  }
  ChinchillaBootstrap bootstrap;
  bootstrap.samples = static_cast<int>(alphas.size());
  bootstrap.level = level;
  bootstrap.atFlops = atFlops;
  if (alphas.empty()) return bootstrap;
  bootstrap.alpha = centralInterval(alphas, level);
  bootstrap.beta = centralInterval(betas, level);
  bootstrap.E = centralInterval(Es, level);
  bootstrap.paramsExponent = centralInterval(exponents, level);
  bootstrap.tokensPerParam = centralInterval(ratios, level);
  return bootstrap;
}

}  // namespace tscope

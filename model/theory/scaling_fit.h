// Scaling laws fitted to measured runs (the scaling lab): Kaplan's power laws L(N) and L(D) and
// Chinchilla's L(N, D) = E + A / N^alpha + B / D^beta, fitted the way the papers did, so a class can
// measure its own exponents and the compute-optimal split they imply.
//   Kaplan et al. 2020 (arXiv 2001.08361) eqs. 1.1-1.2: L(N) = (N_c / N)^alpha_N, L(D) = (D_c / D)^alpha_D,
//     here a least-squares line in log-log space.
//   Hoffmann et al. 2022 (arXiv 2203.15556) Approach 3, section D.2: minimise the Huber loss (delta
//     1e-3) of log L_i - LSE(a - alpha log N_i, b - beta log D_i, e) with L-BFGS from a grid of
//     starts (alpha, beta in {0, 0.5, ..., 2}, e in {-1, -0.5, ..., 1}, a, b in {0, 5, ..., 25}) and
//     keep the best; A = exp(a), B = exp(b), E = exp(e). Besiroglu et al. 2024 (arXiv 2404.10102)
//     add bootstrap intervals by refitting on resampled points, as here.
// Pure functions of their arguments (a seed where there is randomness); no model, no I/O.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/theory/scaling.h"

namespace tscope {

// One measured run: N parameters (the sweep says which count: non-embedding by default), D training
// tokens, and its final loss in nats per token (validation loss).
struct ScalingPoint {
  double params = 0;
  double tokens = 0;
  double loss = 0;
  double flops() const { return trainingFlops(params, tokens); }
};

// Throws tscope::Error naming the point (its index) unless params, tokens and loss are positive and finite.
void validatePoints(std::span<const ScalingPoint> points);

// --- Kaplan ----------------------------------------------------------------------------------
// L(x) = (scale / x)^alpha, fitted as the least-squares line log L = alpha log scale - alpha log x.
struct PowerLawFit {
  double alpha = 0;           // the exponent (positive when the loss falls with x)
  double scale = 0;           // N_c or D_c
  double rmsLogResidual = 0;  // sqrt(mean((log L_i - log L(x_i))^2))
  int points = 0;
  double loss(double x) const;  // (scale / x)^alpha
};
// Needs at least 2 distinct x; throws tscope::Error otherwise, or for a non-positive x or loss, or
// when the fitted slope is not negative (the loss does not fall with x: no power law to report).
PowerLawFit fitPowerLaw(std::span<const double> xs, std::span<const double> losses);

// The points Kaplan's single-variable laws are fitted to: for L(N), the lowest loss at each distinct
// N (its longest run, the nearest to "trained to convergence"); for L(D), the lowest loss at each
// distinct D (its largest model). x ascending.
struct LawPoints {
  std::vector<double> x, loss;
};
LawPoints bestLossPerParams(std::span<const ScalingPoint> points);
LawPoints bestLossPerTokens(std::span<const ScalingPoint> points);

// --- Chinchilla ------------------------------------------------------------------------------
struct ChinchillaFitOptions {
  double huberDelta = 1e-3;
  // The grid of starts (Hoffmann et al.'s by default); every combination is one L-BFGS run.
  std::vector<double> alphaStarts{0, 0.5, 1, 1.5, 2}, betaStarts{0, 0.5, 1, 1.5, 2};
  std::vector<double> eStarts{-1, -0.5, 0, 0.5, 1};
  std::vector<double> aStarts{0, 5, 10, 15, 20, 25}, bStarts{0, 5, 10, 15, 20, 25};
  std::vector<ChinchillaConstants> extraStarts;  // tried before the grid (e.g. an earlier fit's answer)
  int maxIterations = 200;                       // per start
};

struct ChinchillaFit {
  ChinchillaConstants constants;  // E, A, B, alpha, beta
  double objective = 0;           // mean Huber loss of the best start (what was minimised)
  double rmsLogResidual = 0;      // sqrt(mean((log L_i - log L(N_i, D_i))^2)) at the best start
  int points = 0;
  int starts = 0;  // grid points tried
};
// Needs at least 5 points with at least 2 distinct N and 2 distinct D; throws tscope::Error naming
// what is missing. Deterministic: the first start that reaches the lowest objective wins.
ChinchillaFit fitChinchilla(std::span<const ScalingPoint> points, const ChinchillaFitOptions& options = {});

// What fitChinchilla minimises: mean over the points of Huber_delta(LSE(a - alpha log N_i,
// b - beta log D_i, e) - log L_i) with a = log A, b = log B, e = log E. When `gradient` has 5
// entries it receives the analytic gradient in the order (a, b, e, alpha, beta). E must be > 0.
double chinchillaObjective(std::span<const ScalingPoint> points, const ChinchillaConstants& constants, double huberDelta,
                           std::span<double> gradient = {});

// A central interval of a bootstrap distribution.
struct Interval {
  double lo = 0, hi = 0;
};
struct ChinchillaBootstrap {
  int samples = 0;     // resamples that fitted (a degenerate resample is skipped)
  double level = 0.8;  // the central share of the distribution each interval covers
  Interval alpha, beta, E;
  Interval paramsExponent;  // a in N_opt ~ C^a = beta / (alpha + beta)
  Interval tokensPerParam;  // D_opt / N_opt at `atFlops`
  double atFlops = 0;
};
// Refits on `samples` resamples of the points drawn with replacement (seeded), each from the full
// fit's constants plus a coarse grid (the full grid per resample would take minutes), and returns
// the central `level` intervals. Throws like fitChinchilla for the full set.
ChinchillaBootstrap bootstrapChinchilla(std::span<const ScalingPoint> points, const ChinchillaFit& fit, double atFlops, int samples = 200,
                                        double level = 0.8, uint64_t seed = 1);

// --- a whole sweep -----------------------------------------------------------------------------
// Everything the panel and `tscope-cli fit` report for a set of runs.
struct SweepFits {
  std::vector<ScalingPoint> points;
  bool hasKaplanParams = false, hasKaplanTokens = false, hasChinchilla = false;
  PowerLawFit kaplanParams, kaplanTokens;  // L(N), L(D)
  ChinchillaFit chinchilla;
  ChinchillaBootstrap bootstrap;  // samples == 0 when not asked for or not fitted
  // The compute-optimal split our fit implies: at the sweep's own largest budget and at Chinchilla's
  // (5.88e23 FLOP, an extrapolation over many orders of magnitude, shown as such).
  ComputeOptimum optimumAtSweep, optimumAtChinchilla;
  std::vector<std::string> notes;  // one line per law that could not be fitted, and why
};
// Fits what the points allow (a law that cannot be fitted gets a note instead of an exception).
SweepFits fitSweep(std::span<const ScalingPoint> points, int bootstrapSamples = 200, uint64_t seed = 1);

// CSV (RFC 4180, '.' decimals, full precision), one row per fitted constant and implied number:
// "law,constant,value,lo,hi" (lo, hi: the bootstrap interval where there is one, else empty).
std::string fitsCsv(const SweepFits& fits);

}  // namespace tscope

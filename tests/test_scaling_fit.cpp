// Scaling-law fits (model/theory/scaling_fit.h): Kaplan power laws and Chinchilla's Approach 3
// recovered from synthetic runs drawn from known constants (two different sets, noiseless and with
// seeded noise), the bootstrap intervals, every error path, fitSweep's notes and the CSV round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "model/core/error.h"
#include "model/theory/scaling_fit.h"

using namespace tscope;

namespace {

// A 5 x 4 grid of runs, N in 1e5..3e7 and D in 1e6..1e8, losses from `truth` times exp(noise * z).
std::vector<ScalingPoint> chinchillaGrid(const ChinchillaConstants& truth, double noise = 0, uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<ScalingPoint> points;
  for (double n : logSpace(1e5, 3e7, 5))
    for (double d : logSpace(1e6, 1e8, 4)) points.push_back({n, d, chinchillaLoss(truth, n, d) * std::exp(noise * normal(rng))});
  return points;
}

constexpr ChinchillaConstants kFirst{1.8, 400, 600, 0.34, 0.28};
constexpr ChinchillaConstants kSecond{1.5, 1000, 300, 0.5, 0.3};

double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

// Runs `call` and expects a tscope::Error whose message contains `needle`.
template <class F>
void expectError(F call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one naming '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what() << "\nexpected: " << needle;
  }
}

}  // namespace

TEST(ScalingFit, PowerLawRecoveredExactlyFromNoiselessPoints) {
  for (const auto& [alpha, scale] : {std::pair{0.076, 8.8e13}, std::pair{0.3, 2e4}}) {
    std::vector<double> xs = logSpace(1e5, 1e9, 7), losses;
    for (double x : xs) losses.push_back(std::pow(scale / x, alpha));
    const PowerLawFit fit = fitPowerLaw(xs, losses);
    EXPECT_LT(relative(fit.alpha, alpha), 1e-12) << fit.alpha << " vs " << alpha;
    EXPECT_LT(relative(fit.scale, scale), 1e-9) << fit.scale << " vs " << scale;
    EXPECT_LT(fit.rmsLogResidual, 1e-12);
    EXPECT_EQ(fit.points, 7);
    EXPECT_LT(relative(fit.loss(3e6), std::pow(scale / 3e6, alpha)), 1e-12);
  }
}

TEST(ScalingFit, PowerLawWithinToleranceUnderSeededNoise) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::vector<double> xs = logSpace(1e5, 1e9, 20), losses;
  for (double x : xs) losses.push_back(std::pow(5e7 / x, 0.2) * std::exp(0.01 * normal(rng)));
  const PowerLawFit fit = fitPowerLaw(xs, losses);
  EXPECT_NEAR(fit.alpha, 0.2, 0.01);
  EXPECT_GT(fit.rmsLogResidual, 0.003);  // the noise is seen, not fitted away
  EXPECT_LT(fit.rmsLogResidual, 0.02);
}

TEST(ScalingFit, PowerLawErrorsNameTheProblem) {
  const std::vector<double> one{1e6}, oneLoss{3.0};
  expectError([&] { fitPowerLaw(one, oneLoss); }, "at least two points");
  const std::vector<double> same{1e6, 1e6}, twoLosses{3.0, 2.5};
  expectError([&] { fitPowerLaw(same, twoLosses); }, "every x is the same");
  const std::vector<double> negative{-1e6, 1e7}, zeroX{0, 1e7};
  expectError([&] { fitPowerLaw(negative, twoLosses); }, "positive");
  expectError([&] { fitPowerLaw(zeroX, twoLosses); }, "positive");
  const std::vector<double> xs{1e6, 1e7}, zeroLoss{3.0, 0.0}, nanLoss{3.0, NAN};
  expectError([&] { fitPowerLaw(xs, zeroLoss); }, "point 1");
  expectError([&] { fitPowerLaw(xs, nanLoss); }, "point 1");
  const std::vector<double> rising{2.5, 3.0};
  expectError([&] { fitPowerLaw(xs, rising); }, "does not fall");
  const std::vector<double> threeLosses{3, 2, 1};
  expectError([&] { fitPowerLaw(xs, threeLosses); }, "2 x values but 3 y values");
}

TEST(ScalingFit, BestLossPerParamsAndPerTokens) {
  const std::vector<ScalingPoint> points{{2e6, 1e8, 3.1}, {1e6, 1e8, 3.4}, {1e6, 4e8, 3.2}, {2e6, 4e8, 2.9}, {2e6, 1e9, 3.0}};
  const LawPoints perN = bestLossPerParams(points);
  EXPECT_EQ(perN.x, (std::vector<double>{1e6, 2e6}));
  EXPECT_EQ(perN.loss, (std::vector<double>{3.2, 2.9}));
  const LawPoints perD = bestLossPerTokens(points);
  EXPECT_EQ(perD.x, (std::vector<double>{1e8, 4e8, 1e9}));
  EXPECT_EQ(perD.loss, (std::vector<double>{3.1, 2.9, 3.0}));
}

TEST(ScalingFit, ChinchillaObjectiveGradientMatchesFiniteDifferences) {
  const std::vector<ScalingPoint> points = chinchillaGrid(kFirst, 0.01);
  // Near the truth (residuals inside and outside delta) and far from it (all in the linear part).
  for (const ChinchillaConstants& at : {ChinchillaConstants{1.7, 420, 580, 0.33, 0.29}, ChinchillaConstants{3.0, 50, 5000, 0.6, 0.2}}) {
    std::vector<double> gradient(5);
    chinchillaObjective(points, at, 1e-2, gradient);
    const double theta[5] = {std::log(at.A), std::log(at.B), std::log(at.E), at.alpha, at.beta};
    double largest = 0;
    for (int k = 0; k < 5; ++k) {
      const double h = 1e-6;
      double up[5], down[5];
      std::copy(theta, theta + 5, up);
      std::copy(theta, theta + 5, down);
      up[k] += h;
      down[k] -= h;
      const auto value = [&](const double* t) {
        return chinchillaObjective(points, ChinchillaConstants{std::exp(t[2]), std::exp(t[0]), std::exp(t[1]), t[3], t[4]}, 1e-2);
      };
      const double numeric = (value(up) - value(down)) / (2 * h);
      largest = std::max(largest, std::fabs(numeric - gradient[k]));
      EXPECT_NEAR(gradient[k], numeric, 1e-6 * std::max(1.0, std::fabs(numeric))) << "parameter " << k;
    }
    std::printf("objective gradient vs central differences: largest difference %.3g\n", largest);
  }
}

TEST(ScalingFit, ChinchillaRecoversKnownConstantsFromNoiselessPoints) {
  for (const ChinchillaConstants& truth : {kFirst, kSecond}) {
    const ChinchillaFit fit = fitChinchilla(chinchillaGrid(truth));
    const ChinchillaConstants& c = fit.constants;
    std::printf("truth E %g A %g B %g alpha %g beta %g -> fitted E %.6g A %.6g B %.6g alpha %.6g beta %.6g\n", truth.E, truth.A, truth.B, truth.alpha,
                truth.beta, c.E, c.A, c.B, c.alpha, c.beta);
    EXPECT_LT(relative(c.alpha, truth.alpha), 1e-3);
    EXPECT_LT(relative(c.beta, truth.beta), 1e-3);
    EXPECT_LT(relative(c.E, truth.E), 1e-2);
    EXPECT_LT(relative(c.A, truth.A), 1e-2);
    EXPECT_LT(relative(c.B, truth.B), 1e-2);
    EXPECT_LT(fit.rmsLogResidual, 1e-6);
    EXPECT_EQ(fit.points, 20);
    EXPECT_EQ(fit.starts, 4500);  // Hoffmann et al.'s grid: 5 x 5 x 5 x 6 x 6
  }
}

TEST(ScalingFit, ChinchillaWithinToleranceUnderOnePercentNoise) {
  for (const ChinchillaConstants& truth : {kFirst, kSecond}) {
    const ChinchillaFit fit = fitChinchilla(chinchillaGrid(truth, 0.01));
    EXPECT_NEAR(fit.constants.alpha, truth.alpha, 0.05);
    EXPECT_NEAR(fit.constants.beta, truth.beta, 0.05);
    EXPECT_GT(fit.rmsLogResidual, 0.003);
    EXPECT_LT(fit.rmsLogResidual, 0.02);
    EXPECT_GT(fit.objective, 0);
  }
}

TEST(ScalingFit, ChinchillaIsTheSameOnOneAndTwoThreadsAndReportsItsSpeed) {
  // The starts run on OpenMP threads: one thread and two must give the same answer, bit for bit.
  const std::vector<ScalingPoint> points = chinchillaGrid(kFirst, 0.01);
  const char* before = std::getenv("TSCOPE_THREADS");
  const std::string saved = before ? before : "";
  setenv("TSCOPE_THREADS", "1", 1);
  const auto t0 = std::chrono::steady_clock::now();
  const ChinchillaFit first = fitChinchilla(points);
  const auto t1 = std::chrono::steady_clock::now();
  setenv("TSCOPE_THREADS", "2", 1);
  const ChinchillaFit second = fitChinchilla(points);
  if (before) setenv("TSCOPE_THREADS", saved.c_str(), 1);
  else unsetenv("TSCOPE_THREADS");
  EXPECT_EQ(first.constants.alpha, second.constants.alpha);
  EXPECT_EQ(first.constants.beta, second.constants.beta);
  EXPECT_EQ(first.constants.E, second.constants.E);
  EXPECT_EQ(first.objective, second.objective);
  std::printf("full grid (%d starts) on %d points, one thread: %.0f ms (not asserted)\n", first.starts, first.points,
              std::chrono::duration<double, std::milli>(t1 - t0).count());
}

TEST(ScalingFit, BootstrapContainsTheTruthAndNarrowsWithLessNoise) {
  const double trueExponent = kFirst.beta / (kFirst.alpha + kFirst.beta);
  double alphaWidth[2] = {0, 0};
  const double noises[2] = {0.01, 0.002};
  for (int k = 0; k < 2; ++k) {
    const std::vector<ScalingPoint> points = chinchillaGrid(kFirst, noises[k]);
    const ChinchillaFit fit = fitChinchilla(points);
    const auto t0 = std::chrono::steady_clock::now();
    const ChinchillaBootstrap boot = bootstrapChinchilla(points, fit, 1e16, 200, 0.8, 5);
    std::printf("noise %g: 200 bootstrap samples in %.2f s; alpha [%.4f, %.4f] beta [%.4f, %.4f] a [%.4f, %.4f]\n", noises[k],
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), boot.alpha.lo, boot.alpha.hi, boot.beta.lo,
                boot.beta.hi, boot.paramsExponent.lo, boot.paramsExponent.hi);
    EXPECT_GT(boot.samples, 190);
    EXPECT_EQ(boot.level, 0.8);
    EXPECT_EQ(boot.atFlops, 1e16);
    EXPECT_LE(boot.alpha.lo, kFirst.alpha);
    EXPECT_GE(boot.alpha.hi, kFirst.alpha);
    EXPECT_LE(boot.beta.lo, kFirst.beta);
    EXPECT_GE(boot.beta.hi, kFirst.beta);
    EXPECT_LE(boot.paramsExponent.lo, trueExponent);
    EXPECT_GE(boot.paramsExponent.hi, trueExponent);
    const double trueRatio = chinchillaOptimum(kFirst, 1e16).tokensPerParam;
    EXPECT_LE(boot.tokensPerParam.lo, trueRatio);
    EXPECT_GE(boot.tokensPerParam.hi, trueRatio);
    EXPECT_LT(boot.E.lo, boot.E.hi);
    alphaWidth[k] = boot.alpha.hi - boot.alpha.lo;
    // Same seed, same intervals.
    const ChinchillaBootstrap again = bootstrapChinchilla(points, fit, 1e16, 20, 0.8, 5);
    const ChinchillaBootstrap again2 = bootstrapChinchilla(points, fit, 1e16, 20, 0.8, 5);
    EXPECT_EQ(again.alpha.lo, again2.alpha.lo);
    EXPECT_EQ(again.tokensPerParam.hi, again2.tokensPerParam.hi);
  }
  EXPECT_LT(alphaWidth[1], 0.5 * alphaWidth[0]) << "widths " << alphaWidth[0] << " (1% noise), " << alphaWidth[1] << " (0.2%)";
}

TEST(ScalingFit, ChinchillaErrorsNameWhatIsMissing) {
  const std::vector<ScalingPoint> grid = chinchillaGrid(kFirst);
  expectError([&] { fitChinchilla(std::span(grid).first(4)); }, "at least 5 points");
  std::vector<ScalingPoint> oneN = grid, oneD = grid;
  for (ScalingPoint& p : oneN) p.params = 1e6;
  for (ScalingPoint& p : oneD) p.tokens = 1e8;
  expectError([&] { fitChinchilla(oneN); }, "only one model size");
  expectError([&] { fitChinchilla(oneD); }, "only one token count");
  std::vector<ScalingPoint> bad = grid;
  bad[7].loss = -1;
  expectError([&] { fitChinchilla(bad); }, "scaling point 7: loss must be positive");
  bad = grid;
  bad[3].params = 0;
  expectError([&] { fitChinchilla(bad); }, "scaling point 3: params N");
  bad = grid;
  bad[12].tokens = NAN;
  expectError([&] { fitChinchilla(bad); }, "scaling point 12: tokens D");
  bad = grid;
  bad[0].loss = INFINITY;
  expectError([&] { validatePoints(bad); }, "scaling point 0: loss");
  ChinchillaFitOptions noStarts;
  noStarts.alphaStarts.clear();
  expectError([&] { fitChinchilla(grid, noStarts); }, "no starts");
  ChinchillaFitOptions badDelta;
  badDelta.huberDelta = 0;
  expectError([&] { fitChinchilla(grid, badDelta); }, "Huber delta");

  const ChinchillaFit fit{kFirst, 0, 0, 20, 1};
  expectError([&] { bootstrapChinchilla(oneN, fit, 1e16); }, "only one model size");
  expectError([&] { bootstrapChinchilla(grid, fit, 1e16, 0); }, "at least 1 sample");
  expectError([&] { bootstrapChinchilla(grid, fit, 1e16, 10, 1.0); }, "level");
  expectError([&] { bootstrapChinchilla(grid, fit, 0, 10); }, "budget");
}

TEST(ScalingFit, SweepNotesWhatCannotBeFitted) {
  // One model size at four token counts: L(D) fits, L(N) and L(N, D) get notes.
  std::vector<ScalingPoint> oneSize;
  for (double d : logSpace(1e6, 1e8, 4)) oneSize.push_back({1e6, d, chinchillaLoss(kFirst, 1e6, d)});
  const SweepFits partial = fitSweep(oneSize, 0);
  EXPECT_FALSE(partial.hasKaplanParams);
  EXPECT_TRUE(partial.hasKaplanTokens);
  EXPECT_FALSE(partial.hasChinchilla);
  ASSERT_EQ(partial.notes.size(), 2u);
  EXPECT_EQ(partial.notes[0], "L(N): only one model size");
  EXPECT_NE(partial.notes[1].find("L(N, D): Chinchilla fit needs at least 5 points"), std::string::npos) << partial.notes[1];
  EXPECT_EQ(partial.points.size(), 4u);

  std::vector<ScalingPoint> bad = oneSize;
  bad[2].loss = NAN;
  const SweepFits none = fitSweep(bad, 0);
  EXPECT_FALSE(none.hasKaplanParams || none.hasKaplanTokens || none.hasChinchilla);
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("scaling point 2: loss"), std::string::npos) << none.notes[0];
  EXPECT_EQ(fitSweep({}, 0).notes, (std::vector<std::string>{"no fit: no runs"}));

  const std::vector<ScalingPoint> grid = chinchillaGrid(kFirst, 0.01);
  const SweepFits full = fitSweep(grid, 50);
  EXPECT_TRUE(full.notes.empty()) << full.notes.front();
  EXPECT_TRUE(full.hasKaplanParams && full.hasKaplanTokens && full.hasChinchilla);
  EXPECT_EQ(full.bootstrap.samples, 50);
  double largest = 0;
  for (const ScalingPoint& p : grid) largest = std::max(largest, p.flops());
  EXPECT_EQ(full.optimumAtSweep.flops, largest);
  EXPECT_EQ(full.bootstrap.atFlops, largest);
  EXPECT_EQ(full.optimumAtChinchilla.flops, chinchillaRun().flops());
  EXPECT_LT(relative(full.optimumAtChinchilla.params, chinchillaOptimum(full.chinchilla.constants, chinchillaRun().flops()).params), 1e-12);
  // L(N) is fitted to the lowest loss per size: the largest D of each row of the grid.
  const PowerLawFit direct = fitPowerLaw(bestLossPerParams(grid).x, bestLossPerParams(grid).loss);
  EXPECT_EQ(full.kaplanParams.alpha, direct.alpha);
}

TEST(ScalingFit, CsvHasOneRowPerConstantAndRoundTrips) {
  const SweepFits fits = fitSweep(chinchillaGrid(kSecond, 0.01), 30);
  const std::string csv = fitsCsv(fits);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "law,constant,value,lo,hi");
  std::map<std::string, std::vector<std::string>> rows;
  int count = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream cellsIn(line);
    std::string cell;
    while (std::getline(cellsIn, cell, ',')) cells.push_back(cell);
    if (line.back() == ',') cells.push_back("");
    ASSERT_EQ(cells.size(), 5u) << line;
    const std::string key = cells[0] + "/" + cells[1];
    EXPECT_EQ(rows.count(key), 0u) << "row twice: " << key;
    rows[key] = cells;
    ++count;
  }
  // 4 + 4 Kaplan rows, 8 Chinchilla constants, params_exponent, bootstrap_samples, 2 x 5 optimum rows.
  EXPECT_EQ(count, 28);
  const auto value = [&](const std::string& key, int column = 2) {
    EXPECT_EQ(rows.count(key), 1u) << key;
    return std::stod(rows[key][column]);
  };
  EXPECT_EQ(value("kaplan_params/alpha_N"), fits.kaplanParams.alpha);
  EXPECT_EQ(value("kaplan_params/N_c"), fits.kaplanParams.scale);
  EXPECT_EQ(value("kaplan_tokens/alpha_D"), fits.kaplanTokens.alpha);
  EXPECT_EQ(value("kaplan_tokens/D_c"), fits.kaplanTokens.scale);
  EXPECT_EQ(value("chinchilla/E"), fits.chinchilla.constants.E);
  EXPECT_EQ(value("chinchilla/A"), fits.chinchilla.constants.A);
  EXPECT_EQ(value("chinchilla/B"), fits.chinchilla.constants.B);
  EXPECT_EQ(value("chinchilla/alpha"), fits.chinchilla.constants.alpha);
  EXPECT_EQ(value("chinchilla/alpha", 3), fits.bootstrap.alpha.lo);
  EXPECT_EQ(value("chinchilla/alpha", 4), fits.bootstrap.alpha.hi);
  EXPECT_EQ(value("chinchilla/beta", 3), fits.bootstrap.beta.lo);
  EXPECT_EQ(value("chinchilla/params_exponent", 4), fits.bootstrap.paramsExponent.hi);
  EXPECT_EQ(rows["chinchilla/A"][3], "");  // no interval for A
  EXPECT_EQ(value("optimum_at_sweep/tokens_per_param"), fits.optimumAtSweep.tokensPerParam);
  EXPECT_EQ(value("optimum_at_sweep/tokens_per_param", 3), fits.bootstrap.tokensPerParam.lo);
  EXPECT_EQ(value("optimum_at_chinchilla/params"), fits.optimumAtChinchilla.params);
  EXPECT_EQ(rows["optimum_at_chinchilla/tokens_per_param"][3], "");
  EXPECT_EQ(value("optimum_at_chinchilla/flops"), chinchillaRun().flops());

  // Without a bootstrap no row has an interval; without a fit only the header is left.
  const std::string plain = fitsCsv(fitSweep(chinchillaGrid(kSecond, 0.01), 0));
  EXPECT_EQ(plain.find(",,\n") != std::string::npos, true);
  EXPECT_EQ(plain.find("bootstrap_samples"), std::string::npos);
  EXPECT_EQ(fitsCsv(fitSweep({}, 0)), "law,constant,value,lo,hi\n");
}

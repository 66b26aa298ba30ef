// Scaling laws (model/theory/scaling.h): the lecture's worked example, the Chinchilla compute-optimal
// frontier against an independent closed form and a brute-force search along iso-FLOP curves,
// Kaplan's power laws, and the tokens-per-parameter ratio the two Chinchilla fits imply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/core/error.h"
#include "model/theory/scaling.h"

using namespace tscope;

namespace {

// N_opt written out again from Hoffmann et al. 2022 eq. 4, independently of scaling.cpp.
double independentOptimalParams(double E, double A, double B, double alpha, double beta, double flops) {
  (void)E;  // the irreducible loss does not move the optimum
  const double G = std::pow((alpha * A) / (beta * B), 1.0 / (alpha + beta));
  return G * std::pow(flops / 6.0, beta / (alpha + beta));
}

double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

}  // namespace

TEST(Scaling, WorkedExample175BAt2Point1NatsScaledTo500B) {
  // Kaplan's L(N) = (N_c/N)^0.076 through the measured point: 2.1 x (175/500)^0.076.
  const double scaled = scaleLossToParams(2.1, 175e9, 500e9, KaplanConstants{}.alphaN);
  EXPECT_NEAR(scaled, 1.93896, 5e-5);
  // Slides quote "about 1.93": that is the value cut to two decimals (rounded it is 1.94).
  EXPECT_DOUBLE_EQ(std::floor(scaled * 100) / 100, 1.93);
  EXPECT_DOUBLE_EQ(std::round(scaled * 100) / 100, 1.94);
  // Same answer as the ratio of Kaplan's absolute L(N) (N_c cancels).
  const KaplanConstants k;
  const double viaAbsolute = 2.1 * kaplanLossFromParams(k, 500e9) / kaplanLossFromParams(k, 175e9);
  EXPECT_LT(relative(scaled, viaAbsolute), 1e-12) << scaled << " vs " << viaAbsolute;
  // A bigger model never gets a higher loss; the same size keeps it.
  EXPECT_DOUBLE_EQ(scaleLossToParams(2.1, 175e9, 175e9, 0.076), 2.1);
  EXPECT_THROW(scaleLossToParams(2.1, 0, 500e9, 0.076), Error);
}

TEST(Scaling, KaplanCurvesAreDecreasingPowerLaws) {
  const KaplanConstants k;
  const Curve byParams = kaplanParamsCurve(k, 1e3, 1e13, 101);
  const Curve byTokens = kaplanTokensCurve(k, 1e6, 1e13, 101);
  const Curve byCompute = kaplanComputeCurve(k, 1e15, 1e27, 101);
  for (const Curve* curve : {&byParams, &byTokens, &byCompute}) {
    ASSERT_EQ(curve->x.size(), 101u);
    for (size_t i = 1; i < curve->x.size(); ++i) {
      EXPECT_GT(curve->x[i], curve->x[i - 1]);
      EXPECT_LT(curve->y[i], curve->y[i - 1]) << "at x = " << curve->x[i];
    }
  }
  // Straight lines on log-log axes with slope -alpha; L = 1 nat exactly at the constant.
  auto slope = [](const Curve& c) { return (std::log(c.y.back()) - std::log(c.y.front())) / (std::log(c.x.back()) - std::log(c.x.front())); };
  EXPECT_NEAR(slope(byParams), -k.alphaN, 1e-12);
  EXPECT_NEAR(slope(byTokens), -k.alphaD, 1e-12);
  EXPECT_NEAR(slope(byCompute), -k.alphaC, 1e-12);
  EXPECT_DOUBLE_EQ(kaplanLossFromParams(k, k.paramsC), 1.0);
  EXPECT_DOUBLE_EQ(kaplanLossFromTokens(k, k.tokensC), 1.0);
  EXPECT_NEAR(kaplanLossFromCompute(k, k.computeCPfDays * 8.64e19), 1.0, 1e-15);
  // GPT-2 small's 85M non-embedding parameters: (8.8e13 / 8.5056e7)^0.076 = 2.87 nats.
  EXPECT_NEAR(kaplanLossFromParams(k, 85056000), std::pow(8.8e13 / 85056000, 0.076), 1e-12);
  EXPECT_THROW(kaplanLossFromParams(k, -1), Error);
}

TEST(Scaling, FrontierSpendsTheBudgetAndMinimisesTheIsoFlopCurve) {
  double worstBudget = 0, worstSearch = 0;
  for (const ChinchillaConstants& c : {chinchillaHoffmann2022(), chinchillaBesiroglu2024()}) {
    for (double flops = 1e18; flops <= 1e26; flops *= 10) {
      const ComputeOptimum o = chinchillaOptimum(c, flops);
      worstBudget = std::max(worstBudget, relative(6 * o.params * o.tokens, flops));
      EXPECT_LT(relative(o.params, independentOptimalParams(c.E, c.A, c.B, c.alpha, c.beta, flops)), 1e-12);
      EXPECT_LT(relative(o.loss, chinchillaLoss(c, o.params, o.tokens)), 1e-15);
      // Neighbours along the iso-FLOP curve, near and far, on both sides, are higher.
      for (double step : {1e-3, 1e-2, 0.1, 0.5, 2.0}) {
        EXPECT_GT(chinchillaIsoFlopLoss(c, flops, o.params * (1 + step)), o.loss) << "C=" << flops << " step +" << step;
        EXPECT_GT(chinchillaIsoFlopLoss(c, flops, o.params / (1 + step)), o.loss) << "C=" << flops << " step -" << step;
      }
      // A brute-force search on a fixed grid (1e6..1e14, independent of N_opt) lands within one grid
      // step of N_opt.
      const Curve iso = chinchillaIsoFlopCurve(c, flops, 1e6, 1e14, 8001);
      size_t best = 0;
      for (size_t i = 1; i < iso.y.size(); ++i)
        if (iso.y[i] < iso.y[best]) best = i;
      const double gridStep = std::pow(1e8, 1.0 / 8000);  // ratio between neighbours
      worstSearch = std::max(worstSearch, std::fabs(std::log(iso.x[best] / o.params)));
      EXPECT_LE(std::fabs(std::log(iso.x[best] / o.params)), std::log(gridStep));
      EXPECT_GE(iso.y[best], o.loss - 1e-12);
    }
  }
  EXPECT_LT(worstBudget, 1e-14) << "largest relative error of 6 N_opt D_opt against C";
  std::printf("frontier: largest |6ND/C - 1| = %.2e, largest |ln(N_search / N_opt)| = %.2e\n", worstBudget, worstSearch);
}

TEST(Scaling, ChinchillaOwnBudget) {
  const NamedRun run = chinchillaRun();
  const double flops = run.flops();
  EXPECT_DOUBLE_EQ(flops, 6 * 70e9 * 1.4e12);              // 5.88e23
  EXPECT_DOUBLE_EQ(gpt3Run().flops(), 6 * 175e9 * 300e9);  // 3.15e23
  // Hoffmann's published (rounded) Approach-3 constants put the optimum at ~32.5B parameters,
  // about 2.15x smaller than the 70B the paper trained (Approaches 1 and 2 gave ~67B).
  const ComputeOptimum published = chinchillaOptimum(chinchillaHoffmann2022(), flops);
  const double expected = independentOptimalParams(1.69, 406.4, 410.7, 0.34, 0.28, flops);
  EXPECT_LT(relative(published.params, expected), 1e-12);
  EXPECT_NEAR(published.params, 3.249e10, 0.001e10);
  EXPECT_GT(run.params / published.params, 2.0);
  EXPECT_LT(run.params / published.params, 2.5);
  // Besiroglu et al.'s refit puts it at ~73B, within 5% of 70B.
  const ComputeOptimum refit = chinchillaOptimum(chinchillaBesiroglu2024(), flops);
  EXPECT_LT(relative(refit.params, independentOptimalParams(1.8172, 482.01, 2085.43, 0.3478, 0.3658, flops)), 1e-12);
  EXPECT_LT(relative(refit.params, run.params), 0.05) << refit.params;
  std::printf("Chinchilla budget %.3g FLOP: N_opt %.3g (published fit), %.3g (refit); trained 7e10\n", flops, published.params, refit.params);
}

TEST(Scaling, TokensPerParameterAlongTheFrontier) {
  // D/N = (C/6) / N^2 = (C/6)^(1 - 2a) / G^2 with a = beta/(alpha + beta): the ratio drifts by a
  // factor 10^(1 - 2a) per decade of compute, so "near 20" can only hold where 1 - 2a is ~0.
  for (const ChinchillaConstants& c : {chinchillaHoffmann2022(), chinchillaBesiroglu2024()}) {
    const double a = chinchillaParamsExponent(c);
    const double lo = chinchillaOptimum(c, 1e23).tokensPerParam, hi = chinchillaOptimum(c, 1e24).tokensPerParam;
    EXPECT_NEAR(hi / lo, std::pow(10.0, 1 - 2 * a), 1e-12);
    const double G = std::pow(c.alpha * c.A / (c.beta * c.B), 1 / (c.alpha + c.beta));
    EXPECT_LT(relative(lo, std::pow(1e23 / 6, 1 - 2 * a) / (G * G)), 1e-12);
  }
  // Published constants: a = 0.4516, so the ratio climbs from 78 to 98 over 1e23..1e24 FLOP:
  // 4-5x the "20 tokens per parameter" of Approaches 1 and 2 (the rounding Besiroglu et al. found).
  const ChinchillaConstants published = chinchillaHoffmann2022();
  EXPECT_NEAR(chinchillaOptimum(published, 1e23).tokensPerParam, 78.21, 0.01);
  EXPECT_NEAR(chinchillaOptimum(published, 1e24).tokensPerParam, 97.73, 0.01);
  // Refit: a = 0.5126, the ratio falls gently (x0.944 per decade) from 19.2 to 18.1. Tolerance:
  // 20 is Chinchilla's own 1.4T/70B; since D/N = C/(6N^2), the refit's 4.3% larger N at that
  // budget is an 8.6% smaller ratio, and the decade's drift adds under 6%: 10% covers 1e23..1e24.
  const ChinchillaConstants refit = chinchillaBesiroglu2024();
  for (double flops : {1e23, 3e23, 1e24}) {
    const double ratio = chinchillaOptimum(refit, flops).tokensPerParam;
    EXPECT_LT(relative(ratio, 20.0), 0.10) << "C=" << flops << " D/N=" << ratio;
  }
}

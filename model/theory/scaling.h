// Scaling laws as pure functions, for the scaling panel, the CLI and the tests: Kaplan et al. 2020
// (arXiv 2001.08361) power laws L(N), L(D), L(C_min), and Chinchilla's parametric fit (Hoffmann et
// al. 2022, arXiv 2203.15556, Approach 3) L(N, D) with its compute-optimal frontier under C = 6ND.
// Constants live in plain structs so a lecturer can edit them. Losses are in nats per token.
#pragma once
#include <string>
#include <vector>

namespace tscope {

inline constexpr double kFlopsPerPetaflopDay = 8.64e19;  // 1e15 FLOP/s x 86,400 s
double flopsToPetaflopDays(double flops);
// Training compute of a dense transformer, C = 6 N D (Kaplan Table 1; Hoffmann eq. 3's constraint).
double trainingFlops(double params, double tokens);

// ---------------------------------------------------------------------------------------------
// Kaplan et al. 2020, eqs. 1.1-1.3 and Table 5 (L in nats, N non-embedding parameters).
struct KaplanConstants {
  double alphaN = 0.076, paramsC = 8.8e13;        // L(N) = (N_c / N)^alpha_N, models trained to convergence
  double alphaD = 0.095, tokensC = 5.4e13;        // L(D) = (D_c / D)^alpha_D, large models, early stopping
  double alphaC = 0.050, computeCPfDays = 3.1e8;  // L(C_min) = (C_c / C_min)^alpha_C, C in PF-days
};
// Every function below throws tscope::Error (one line naming the argument) unless the argument
// and the constants it uses are positive and finite.
double kaplanLossFromParams(const KaplanConstants& k, double nonEmbeddingParams);
double kaplanLossFromTokens(const KaplanConstants& k, double tokens);
double kaplanLossFromCompute(const KaplanConstants& k, double flops);  // converted to PF-days inside

// The lecture's worked example: a model measured at `measuredLoss` with `measuredParams` scaled to
// `newParams` along L(N) = (N_c / N)^alpha: L_new = L_measured (N_measured / N_new)^alpha (N_c
// cancels). "175B at 2.1 nats scaled to 500B": 2.1 x (175/500)^0.076 = 1.9390 (slides say ~1.93).
double scaleLossToParams(double measuredLoss, double measuredParams, double newParams, double alphaN);

// ---------------------------------------------------------------------------------------------
// Chinchilla, L(N, D) = E + A / N^alpha + B / D^beta (N all parameters, D training tokens).
struct ChinchillaConstants {
  double E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28;  // Hoffmann et al. 2022, eq. 10
};
// The published Approach-3 values (the struct's defaults). At Chinchilla's own budget they put the
// optimum at ~32B parameters and ~90 tokens per parameter, not 70B and 20: Besiroglu et al. 2024
// (arXiv 2404.10102) trace this to rounding and an unconverged fit.
ChinchillaConstants chinchillaHoffmann2022();
// Besiroglu et al. 2024's refit of the same functional form (their Table 1), whose frontier
// agrees with Hoffmann's Approaches 1 and 2 (~20 tokens per parameter; N ~ C^0.51).
ChinchillaConstants chinchillaBesiroglu2024();

double chinchillaLoss(const ChinchillaConstants& c, double params, double tokens);
// The iso-FLOP curve at budget C: L(N, C / (6N)) as a function of N.
double chinchillaIsoFlopLoss(const ChinchillaConstants& c, double flops, double params);

struct ComputeOptimum {
  double flops = 0;           // the budget C
  double params = 0;          // N_opt = G (C/6)^(beta/(alpha+beta))
  double tokens = 0;          // D_opt = (C/6) / N_opt
  double tokensPerParam = 0;  // D_opt / N_opt
  double loss = 0;            // L(N_opt, D_opt)
};
// The minimum of the iso-FLOP curve (Hoffmann eq. 4): G = (alpha A / (beta B))^(1/(alpha+beta)).
ComputeOptimum chinchillaOptimum(const ChinchillaConstants& c, double flops);
double chinchillaParamsExponent(const ChinchillaConstants& c);  // a in N_opt ~ C^a, beta/(alpha+beta)

// ---------------------------------------------------------------------------------------------
// Sampled curves for plots (x ascending, log-spaced).
struct Curve {
  std::vector<double> x, y;
};
std::vector<double> logSpace(double lo, double hi, int count);                        // count >= 2 values, lo..hi inclusive
Curve kaplanParamsCurve(const KaplanConstants& k, double lo, double hi, int count);   // x = N, y = L(N)
Curve kaplanTokensCurve(const KaplanConstants& k, double lo, double hi, int count);   // x = D, y = L(D)
Curve kaplanComputeCurve(const KaplanConstants& k, double lo, double hi, int count);  // x = C in FLOP, y = L(C)
Curve chinchillaIsoFlopCurve(const ChinchillaConstants& c, double flops, double paramsLo, double paramsHi, int count);
// The frontier drawn on iso-FLOP axes: x = N_opt(C), y = L at the optimum, for C in flopsLo..flopsHi.
Curve chinchillaFrontierCurve(const ChinchillaConstants& c, double flopsLo, double flopsHi, int count);

// ---------------------------------------------------------------------------------------------
// Named training runs to mark on the plots.
struct NamedRun {
  std::string name;
  double params = 0;  // N
  double tokens = 0;  // D
  double flops() const { return trainingFlops(params, tokens); }
};
NamedRun gpt3Run();        // Brown et al. 2020: 175B parameters, 300B tokens (6ND = 3.15e23 FLOP)
NamedRun chinchillaRun();  // Hoffmann et al. 2022: 70B parameters, 1.4T tokens (6ND = 5.88e23 FLOP;
                           // the paper counts 5.76e23 with its finer FLOP accounting)

}  // namespace tscope

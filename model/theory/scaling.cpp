// Kaplan and Chinchilla scaling laws (see scaling.h for the sources of every constant). Closed
// forms only: the compute-optimal point is Hoffmann et al.'s eq. 4, not a numerical search.
#include "model/theory/scaling.h"

#include <cmath>

#include "model/core/error.h"

namespace tscope {

namespace {

double positive(const char* name, double v) {
  if (!(v > 0) || !std::isfinite(v))
    throw Error(std::string("scaling law: ") + name + " must be positive and finite (got " + std::to_string(v) + ")");
  return v;
}

void checkKaplan(const KaplanConstants& k) {
  positive("alpha_N", k.alphaN);
  positive("N_c", k.paramsC);
  positive("alpha_D", k.alphaD);
  positive("D_c", k.tokensC);
  positive("alpha_C", k.alphaC);
  positive("C_c", k.computeCPfDays);
}

void checkChinchilla(const ChinchillaConstants& c) {
  if (!(c.E >= 0) || !std::isfinite(c.E)) throw Error("scaling law: E must be zero or positive (got " + std::to_string(c.E) + ")");
  positive("A", c.A);
  positive("B", c.B);
  positive("alpha", c.alpha);
  positive("beta", c.beta);
}

template <class F>
Curve sample(double lo, double hi, int count, F f) {
  Curve curve;
  curve.x = logSpace(lo, hi, count);
  curve.y.reserve(curve.x.size());
  for (double x : curve.x) curve.y.push_back(f(x));
  return curve;
}

}  // namespace

double flopsToPetaflopDays(double flops) { return flops / kFlopsPerPetaflopDay; }

double trainingFlops(double params, double tokens) { return 6.0 * params * tokens; }

double kaplanLossFromParams(const KaplanConstants& k, double nonEmbeddingParams) {
  checkKaplan(k);
  return std::pow(k.paramsC / positive("N", nonEmbeddingParams), k.alphaN);
}

double kaplanLossFromTokens(const KaplanConstants& k, double tokens) {
  checkKaplan(k);
  return std::pow(k.tokensC / positive("D", tokens), k.alphaD);
}

double kaplanLossFromCompute(const KaplanConstants& k, double flops) {
  checkKaplan(k);
  return std::pow(k.computeCPfDays / flopsToPetaflopDays(positive("C", flops)), k.alphaC);
}

double scaleLossToParams(double measuredLoss, double measuredParams, double newParams, double alphaN) {
  positive("measured loss", measuredLoss);
  return measuredLoss * std::pow(positive("measured N", measuredParams) / positive("new N", newParams), positive("alpha_N", alphaN));
}

ChinchillaConstants chinchillaHoffmann2022() { return ChinchillaConstants{}; }

ChinchillaConstants chinchillaBesiroglu2024() { return ChinchillaConstants{1.8172, 482.01, 2085.43, 0.3478, 0.3658}; }

double chinchillaLoss(const ChinchillaConstants& c, double params, double tokens) {
  checkChinchilla(c);
  return c.E + c.A / std::pow(positive("N", params), c.alpha) + c.B / std::pow(positive("D", tokens), c.beta);
}

double chinchillaIsoFlopLoss(const ChinchillaConstants& c, double flops, double params) {
  return chinchillaLoss(c, params, positive("C", flops) / (6.0 * positive("N", params)));
}

double chinchillaParamsExponent(const ChinchillaConstants& c) {
  checkChinchilla(c);
  return c.beta / (c.alpha + c.beta);
}

ComputeOptimum chinchillaOptimum(const ChinchillaConstants& c, double flops) {
  checkChinchilla(c);
  ComputeOptimum o;
  o.flops = positive("C", flops);
  // d/dN [A N^-alpha + B (C / 6N)^-beta] = 0  =>  alpha A N^-alpha = beta B (6N / C)^beta.
  const double G = std::pow(c.alpha * c.A / (c.beta * c.B), 1.0 / (c.alpha + c.beta));
  const double budget = flops / 6.0;  // N D
  o.params = G * std::pow(budget, c.beta / (c.alpha + c.beta));
  o.tokens = budget / o.params;
  o.tokensPerParam = o.tokens / o.params;
  o.loss = chinchillaLoss(c, o.params, o.tokens);
  return o;
}

std::vector<double> logSpace(double lo, double hi, int count) {
  positive("lower end", lo);
  positive("upper end", hi);
  if (count < 2) throw Error("logSpace: needs at least 2 points (got " + std::to_string(count) + ")");
  std::vector<double> values(count);
  const double a = std::log(lo), b = std::log(hi);
  for (int i = 0; i < count; ++i) values[i] = std::exp(a + (b - a) * i / (count - 1));
  values.front() = lo;
  values.back() = hi;
  return values;
}

Curve kaplanParamsCurve(const KaplanConstants& k, double lo, double hi, int count) {
  return sample(lo, hi, count, [&](double n) { return kaplanLossFromParams(k, n); });
}

Curve kaplanTokensCurve(const KaplanConstants& k, double lo, double hi, int count) {
  return sample(lo, hi, count, [&](double d) { return kaplanLossFromTokens(k, d); });
}

Curve kaplanComputeCurve(const KaplanConstants& k, double lo, double hi, int count) {
  return sample(lo, hi, count, [&](double flops) { return kaplanLossFromCompute(k, flops); });
}

Curve chinchillaIsoFlopCurve(const ChinchillaConstants& c, double flops, double paramsLo, double paramsHi, int count) {
  return sample(paramsLo, paramsHi, count, [&](double n) { return chinchillaIsoFlopLoss(c, flops, n); });
}

Curve chinchillaFrontierCurve(const ChinchillaConstants& c, double flopsLo, double flopsHi, int count) {
  Curve curve;
  for (double flops : logSpace(flopsLo, flopsHi, count)) {
    const ComputeOptimum o = chinchillaOptimum(c, flops);
    curve.x.push_back(o.params);  // ascending: N_opt grows with C
    curve.y.push_back(o.loss);
  }
  return curve;
}

NamedRun gpt3Run() { return NamedRun{"GPT-3 175B", 175e9, 300e9}; }

NamedRun chinchillaRun() { return NamedRun{"Chinchilla 70B", 70e9, 1.4e12}; }

}  // namespace tscope

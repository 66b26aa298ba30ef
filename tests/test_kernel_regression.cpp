// The Inside-the-block panel's numbers: softmaxWeights and weightedSum against sums written out
// here, the 1-D kernel regression against the Nadaraya-Watson formula, and one head recomputed
// stage by stage (headStages) against the forward's own attention row and head output (headMix),
// in every architecture variant; blockRows' residual against the forward's residual stream.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/core/error.h"
#include "model/core/rng.h"
#include "model/nn/backend.h"
#include "model/nn/inside_views.h"
#include "model/nn/kernel_regression.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

using namespace tscope;
using namespace tscope::testing;

TEST(KernelRegression, SoftmaxWeightsSumToOneAndMaskedKeysGetNothing) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> scores = {1.0f, -inf, 3.0f, 0.5f};
  const std::vector<float> w = softmaxWeights(scores);
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(0.5);
  EXPECT_NEAR(w[0], std::exp(1.0) / z, 1e-7);
  EXPECT_EQ(w[1], 0.0f);
  EXPECT_NEAR(w[2], std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(w[0] + w[1] + w[2] + w[3], 1.0, 1e-6);
  // Large scores do not overflow (the max is subtracted); all masked: all zero.
  EXPECT_NEAR(softmaxWeights(std::vector<float>{1000.0f, 1000.0f})[0], 0.5f, 1e-7);
  for (float x : softmaxWeights(std::vector<float>{-inf, -inf})) EXPECT_EQ(x, 0.0f);
  EXPECT_TRUE(softmaxWeights({}).empty());
}

TEST(KernelRegression, WeightedSumAveragesRowsAndSkipsZeroWeights) {
  const std::vector<float> values = {1, 2, 10, 20, NAN, NAN};  // 3 rows of width 2; the masked row holds NaN
  const std::vector<float> out = weightedSum(std::vector<float>{0.25f, 0.75f, 0.0f}, values, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0], 0.25f * 1 + 0.75f * 10);
  EXPECT_FLOAT_EQ(out[1], 0.25f * 2 + 0.75f * 20);
  EXPECT_THROW(weightedSum(std::vector<float>{0.5f, 0.5f}, std::vector<float>{1, 2, 3}, 2), Error);
}

TEST(KernelRegression, GaussianEstimateIsTheNadarayaWatsonFormula) {
  const std::vector<float> xs = {-2, -0.5f, 0.3f, 1.7f}, ys = {1, -1, 2, 0.5f};
  for (float sigma : {0.2f, 0.7f, 3.0f})
    for (float x : {-3.0f, 0.0f, 0.4f, 2.5f}) {
      double num = 0, den = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double k = std::exp(-(x - xs[i]) * (x - xs[i]) / (2.0 * sigma * sigma));
        num += k * ys[i];
        den += k;
      }
      const KernelEstimate e = kernelRegression(x, xs, ys, sigma);
      EXPECT_NEAR(e.estimate, num / den, 1e-5) << "sigma " << sigma << " x " << x;
    }
  // A tiny bandwidth picks the nearest point; a huge one averages them all.
  EXPECT_NEAR(kernelRegression(0.25f, xs, ys, 0.01f).estimate, 2.0f, 1e-5);
  EXPECT_NEAR(kernelRegression(0.25f, xs, ys, 1e4f).estimate, (1 - 1 + 2 + 0.5f) / 4, 1e-4);
  EXPECT_THROW(kernelRegression(0, xs, ys, 0), Error);
  EXPECT_THROW(kernelRegression(0, xs, std::vector<float>{1}, 1), Error);
}

TEST(KernelRegression, TopByMagnitudeAndTopNextTokens) {
  const std::vector<float> v = {0.5f, -3.0f, 2.0f, 3.0f, 0.0f};
  EXPECT_EQ(topByMagnitude(v, 3), (std::vector<int>{1, 3, 2}));
  EXPECT_EQ(topByMagnitude(v, 9).size(), 5u);
  const auto top = topNextTokens(std::vector<float>{0.0f, std::log(3.0f), 0.0f}, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_NEAR(top[0].probability, 0.6f, 1e-6);
  EXPECT_EQ(top[1].id, 0);
}

namespace {
// A forward over T tokens with the components and layer 1's internals captured.
Trace traceWithInternals(const Weights& weights, int T, int seed) {
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  TraceOptions options;
  options.components = true;
  options.internalLayers = {1};
  Trace trace;
  model.logitsFor(sequence(T, weights.config().vocab_size, seed), &trace, options);
  return trace;
}
}  // namespace

// Every head of layer 1 at every query, recomputed from the trace's q, k, v, against the forward's
// attention row and its head's slice of headMix; the largest difference over all is printed.
TEST(KernelRegression, HeadStagesReproduceTheForwardInEveryVariant) {
  const int T = 9;
  for (const ArchitectureVariant& variant : architectureVariants()) {
    const ModelConfig c = variantConfig(variant);
    const Weights weights = randomWeights(c, 11);
    const Trace trace = traceWithInternals(weights, T, 2);
    ASSERT_TRUE(trace.capturedIndex(1)) << variant.name;
    const int ci = *trace.capturedIndex(1);
    double worstWeight = 0, worstOutput = 0, worstScore = 0;
    for (int h = 0; h < c.n_head; ++h)
      for (int t = 0; t < T; ++t) {
        const HeadStages s = headStages(trace, c, 1, h, t);
        for (int j = 0; j < T; ++j) {
          worstWeight = std::max(worstWeight, (double)std::abs(s.weights[j] - trace.attnMap(ci, h)[t * T + j]));
          const float score = trace.scoreMap(ci, h)[t * T + j];
          ASSERT_EQ(std::isinf(score), std::isinf(s.scores[j])) << variant.name << " h" << h << " t" << t << " j" << j;
          if (!std::isinf(score)) worstScore = std::max(worstScore, (double)std::abs(s.scores[j] - score));
        }
        for (int d = 0; d < s.D; ++d)
          worstOutput = std::max(worstOutput, (double)std::abs(s.output[d] - trace.headMix[((size_t)1 * T + t) * c.attnDim() + h * s.D + d]));
      }
    EXPECT_LT(worstWeight, 1e-5) << variant.name;
    EXPECT_LT(worstScore, 1e-4) << variant.name;
    EXPECT_LT(worstOutput, 1e-5) << variant.name;
    std::printf("%-28s largest difference: weights %.2e, scores %.2e, head output %.2e\n", variant.name.c_str(), worstWeight, worstScore,
                worstOutput);
  }
}

// The residual entering layer 1 and leaving it, summed from components, against the forward's own
// residual stream (pre-norm variants: the sum is the stream).
TEST(KernelRegression, BlockRowsSumToTheResidualStream) {
  const int T = 7;
  for (const ArchitectureVariant& variant : architectureVariants()) {
    const ModelConfig c = variantConfig(variant);
    if (!c.pre_norm) continue;
    const Weights weights = randomWeights(c, 12);
    const Trace trace = traceWithInternals(weights, T, 3);
    if (!c.residual) {  // no sum to check: the rows say why instead
      EXPECT_NE(blockRows(trace, weights, 1, 0).note.find("no residual"), std::string::npos) << variant.name;
      continue;
    }
    double worst = 0;
    for (int t = 0; t < T; ++t) {
      const BlockRows r = blockRows(trace, weights, 1, t);
      ASSERT_EQ(r.residOut.size(), (size_t)c.n_embd) << variant.name;
      for (int k = 0; k < c.n_embd; ++k) {
        worst = std::max(worst, (double)std::abs(r.x[k] - trace.residAfterMlp[((size_t)trace.capturedIndex(0).value() * T + t) * c.n_embd + k]));
        worst =
            std::max(worst, (double)std::abs(r.residMid[k] - trace.residAfterAttn[((size_t)trace.capturedIndex(1).value() * T + t) * c.n_embd + k]));
        worst =
            std::max(worst, (double)std::abs(r.residOut[k] - trace.residAfterMlp[((size_t)trace.capturedIndex(1).value() * T + t) * c.n_embd + k]));
      }
    }
    EXPECT_LT(worst, 1e-4) << variant.name;
    std::printf("%-28s residual from components: largest difference %.2e\n", variant.name.c_str(), worst);
  }
}

// The bridge from the Gaussian kernel to the scaled dot product: keys of one norm (any norm, any
// dimension) give softmax(q.k / sigma^2) exactly; keys of unequal norms do not, and the Gaussian
// favours the key nearest the query while the dot product favours the longest one.
TEST(KernelRegression, GaussianKernelIsTheDotProductWhenKeysShareANorm) {
  const int dim = 3;
  const float sigma = 0.7f;
  const std::vector<float> query = {0.3f, -1.2f, 0.5f};
  std::vector<float> keys;
  Rng rng(5);
  for (int i = 0; i < 6; ++i) {
    float k[dim], norm = 0;
    for (float& v : k) {
      v = (float)rng.normal();
      norm += v * v;
    }
    for (float v : k) keys.push_back(2.5f * v / std::sqrt(norm));  // every key of norm 2.5
  }
  const KernelBridge equal = kernelToDotProduct(query, keys, dim, sigma);
  ASSERT_EQ(equal.gaussian.size(), 6u);
  EXPECT_LT(equal.maxDifference, 1e-6);
  // By hand for one key: softmax over -(q - k)^2 / (2 sigma^2).
  double sum = 0;
  std::vector<double> w(6);
  for (int i = 0; i < 6; ++i) {
    double d2 = 0;
    for (int c = 0; c < dim; ++c) d2 += std::pow(query[c] - keys[i * dim + c], 2);
    sum += (w[i] = std::exp(-d2 / (2 * sigma * sigma)));
  }
  EXPECT_NEAR(equal.gaussian[2], w[2] / sum, 1e-6);
  // A key near the query, one along it but four times as long: the two weightings part.
  const std::vector<float> unequal = {0.3f, -1.1f, 0.5f, 1.2f, -4.8f, 2.0f};  // the second is 4 q
  const KernelBridge parted = kernelToDotProduct(query, unequal, dim, sigma);
  EXPECT_GT(parted.gaussian[0], 0.99f);
  EXPECT_GT(parted.dot[1], 0.99f);
  EXPECT_GT(parted.maxDifference, 0.5f);
  EXPECT_THROW(kernelToDotProduct(query, unequal, dim, 0.0f), Error);
  EXPECT_THROW(kernelToDotProduct(query, std::vector<float>{1, 2}, dim, sigma), Error);
}

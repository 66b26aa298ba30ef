// The Inside-the-block panel's numbers: softmaxWeights and weightedSum against sums written out
// here, and the 1-D kernel regression against the Nadaraya-Watson formula.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/nn/kernel_regression.h"

using namespace tscope;

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

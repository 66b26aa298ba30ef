// The one host softmax and log-sum-exp (model/core/softmax.h) against sums written out here:
// probabilities sum to 1, huge logits do not overflow, -inf entries get exactly 0, the log-sum-exp
// matches a direct double computation, and the two exp modes give the bits their callers had.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "model/core/error.h"
#include "model/core/softmax.h"

using namespace tscope;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> softmaxOf(const std::vector<float>& row, const SoftmaxOptions& options = {}) {
  std::vector<float> out(row.size());
  softmax(row, out, options);
  return out;
}
}  // namespace

TEST(Softmax, SumsToOneAndFollowsTheLogits) {
  const std::vector<float> row = {0.5f, -1.25f, 3.0f, 2.0f, 0.0f, -7.5f};
  const std::vector<float> p = softmaxOf(row);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-6);
  double z = 0;
  for (float x : row) z += std::exp(static_cast<double>(x));
  for (size_t i = 0; i < row.size(); ++i) {
    EXPECT_GT(p[i], 0.0f) << i;
    EXPECT_NEAR(p[i], std::exp(static_cast<double>(row[i])) / z, 1e-7) << i;
  }
  std::vector<double> rowD(row.begin(), row.end()), pD(row.size());
  softmax(rowD, pD);
  EXPECT_NEAR(std::accumulate(pD.begin(), pD.end(), 0.0), 1.0, 1e-15);
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  // exp(1000) is inf in float and double: only the subtracted maximum keeps these finite.
  const std::vector<float> big = {1000.0f, 1001.0f, 999.0f};
  const std::vector<float> p = softmaxOf(big), shifted = softmaxOf({0.0f, 1.0f, -1.0f});
  ASSERT_TRUE(std::isinf(std::exp(1000.0)));
  for (size_t i = 0; i < big.size(); ++i) {
    EXPECT_TRUE(std::isfinite(p[i])) << i;
    EXPECT_FLOAT_EQ(p[i], shifted[i]) << i;
  }
  EXPECT_NEAR(softmaxOf({3e38f, 3e38f})[0], 0.5f, 1e-7);
  EXPECT_NEAR(softmaxOf({-3e38f, 0.0f})[1], 1.0f, 1e-7);
}

TEST(Softmax, MinusInfinityEntriesGetExactlyZero) {
  const std::vector<float> p = softmaxOf({-kInf, 1.0f, -kInf, 1.0f});
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_FLOAT_EQ(p[1], 0.5f);
  EXPECT_FLOAT_EQ(p[3], 0.5f);
  // No finite maximum (all -inf, or +inf present), or nothing at all: no distribution, zeros.
  for (float x : softmaxOf({-kInf, -kInf})) EXPECT_EQ(x, 0.0f);
  for (float x : softmaxOf({kInf, 1.0f})) EXPECT_EQ(x, 0.0f);
  EXPECT_TRUE(softmaxOf({}).empty());
  std::vector<double> masked = {-std::numeric_limits<double>::infinity(), 2.0};
  softmax(masked, masked);  // in place
  EXPECT_EQ(masked[0], 0.0);
  EXPECT_EQ(masked[1], 1.0);
  const SoftmaxNorm none = softmaxNorm(std::vector<float>{-kInf, -kInf});
  EXPECT_EQ(none.sum, 0.0);
  EXPECT_EQ(none.logSumExp(), -std::numeric_limits<double>::infinity());
}

TEST(Softmax, LogSumExpMatchesADirectDoubleSum) {
  const std::vector<float> row = {0.25f, -3.0f, 7.5f, 1.0f, -0.5f, 2.75f};
  double direct = 0;
  for (float x : row) direct += std::exp(static_cast<double>(x));
  EXPECT_NEAR(logSumExp(row), std::log(direct), 1e-13);
  const std::vector<double> rowD = {1e-3, -2.0, 4.0};
  EXPECT_NEAR(logSumExp(rowD), std::log(std::exp(1e-3) + std::exp(-2.0) + std::exp(4.0)), 1e-13);
  // Shifted by 1000 the direct sum overflows; the log-sum-exp shifts with the logits.
  std::vector<float> shifted = row;
  for (float& x : shifted) x += 1000.0f;
  double directShifted = 0;
  for (float x : shifted) directShifted += std::exp(static_cast<double>(x));
  EXPECT_TRUE(std::isinf(directShifted));
  EXPECT_NEAR(logSumExp(shifted), 1000.0 + std::log(direct), 1e-9);
  // The norm's pieces agree with it: log p = x - lse, p = exp(x - max) / sum.
  const SoftmaxNorm norm = softmaxNorm(row);
  EXPECT_EQ(norm.max, 7.5);
  for (float x : row) {
    EXPECT_NEAR(norm.logProbability(x), x - logSumExp(row), 1e-13);
    EXPECT_NEAR(norm.probability(x), std::exp(static_cast<double>(x)) / direct, 1e-15);
  }
  EXPECT_EQ(softmaxNorm(std::vector<float>{}).logSumExp(), -std::numeric_limits<double>::infinity());
}

// The bits each mode promises (what the sampler and the MoE router computed by hand before).
TEST(Softmax, ExpModesGiveTheirCallersBits) {
  const std::vector<float> row = {0.1f, 2.3f, -1.7f, 0.9f, 2.2999f, -kInf};
  const double max = 2.3f;
  // Double exp: each probability is exp(x - max) / sum in double, rounded to float once.
  double sum = 0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  const std::vector<float> p = softmaxOf(row);
  for (size_t i = 0; i < row.size(); ++i) EXPECT_EQ(p[i], static_cast<float>(std::exp(static_cast<double>(row[i]) - max) / sum)) << i;
  // Float exp at a temperature: w = expf(float((x - max) / T)), summed in double.
  const double temperature = 0.7;
  std::vector<float> w(row.size());
  double wSum = 0;
  for (size_t i = 0; i < row.size(); ++i) wSum += w[i] = std::exp(static_cast<float>((static_cast<double>(row[i]) - max) / temperature));
  const std::vector<float> q = softmaxOf(row, SoftmaxOptions{.temperature = temperature, .floatExp = true});
  for (size_t i = 0; i < row.size(); ++i) EXPECT_EQ(q[i], static_cast<float>(w[i] / wSum)) << i;
  // A temperature sharpens (T < 1) or flattens (T > 1) without moving the order.
  const std::vector<float> cold = softmaxOf(row, {.temperature = 0.1}), hot = softmaxOf(row, {.temperature = 10.0});
  EXPECT_GT(cold[1], p[1]);
  EXPECT_LT(hot[1], p[1]);
  EXPECT_GT(hot[2], p[2]);
  EXPECT_NEAR(cold[1], 1.0 / (1.0 + std::exp((2.2999 - 2.3) / 0.1) + std::exp((0.9 - 2.3) / 0.1)), 1e-4);
}

TEST(Softmax, RefusesAnOutputOfAnotherSize) {
  std::vector<float> out(2);
  EXPECT_THROW(softmax(std::vector<float>{1, 2, 3}, out), Error);
}

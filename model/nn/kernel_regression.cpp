// Softmax weights and weighted sums for the Inside-the-block panel and its kernel-regression
// example (kernel_regression.h). Sums run in double so the panel's numbers match the forward's.
#include "model/nn/kernel_regression.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

std::vector<float> softmaxWeights(std::span<const float> scores) {
  std::vector<float> weights(scores.size());
  softmax(scores, weights);
  return weights;
}

std::vector<float> weightedSum(std::span<const float> weights, std::span<const float> values, int width) {
  if (width < 0 || values.size() < weights.size() * (size_t)width)
    throw Error("weightedSum: " + std::to_string(weights.size()) + " weights need " + std::to_string(weights.size()) + " rows of " +
                std::to_string(width) + " values, got " + std::to_string(values.size()));
  std::vector<double> sum((size_t)width, 0.0);
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0.0f) continue;
    const float* row = values.data() + i * (size_t)width;
    for (int c = 0; c < width; ++c) sum[c] += (double)weights[i] * row[c];
  }
  return std::vector<float>(sum.begin(), sum.end());
}

std::vector<float> gaussianKernelScores(float query, std::span<const float> xs, float sigma) {
  if (!(sigma > 0)) throw Error("gaussianKernelScores: the bandwidth sigma must be > 0");
  std::vector<float> scores(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double d = (double)query - xs[i];
    scores[i] = (float)(-d * d / (2.0 * sigma * sigma));
  }
  return scores;
}

KernelEstimate kernelRegression(float query, std::span<const float> xs, std::span<const float> ys, float sigma) {
  if (xs.size() != ys.size()) throw Error("kernelRegression: " + std::to_string(xs.size()) + " points but " + std::to_string(ys.size()) + " values");
  KernelEstimate out;
  out.weights = softmaxWeights(gaussianKernelScores(query, xs, sigma));
  out.estimate = xs.empty() ? 0.0f : weightedSum(out.weights, ys, 1)[0];
  return out;
}

KernelBridge kernelToDotProduct(std::span<const float> query, std::span<const float> keys, int dim, float sigma) {
  if (!(sigma > 0)) throw Error("kernelToDotProduct: the bandwidth sigma must be > 0");
  if (dim < 1 || (int)query.size() != dim || keys.size() % dim != 0)
    throw Error("kernelToDotProduct: a query of " + std::to_string(query.size()) + " and keys of " + std::to_string(keys.size()) +
                " values do not make vectors of " + std::to_string(dim));
  const size_t n = keys.size() / dim;
  std::vector<float> gaussian(n), dot(n);
  for (size_t i = 0; i < n; ++i) {
    double squared = 0, product = 0;
    for (int c = 0; c < dim; ++c) {
      const double k = keys[i * dim + c], d = (double)query[c] - k;
      squared += d * d;
      product += query[c] * k;
    }
    gaussian[i] = (float)(-squared / (2.0 * sigma * sigma));
    dot[i] = (float)(product / ((double)sigma * sigma));
  }
  KernelBridge out{softmaxWeights(gaussian), softmaxWeights(dot), 0};
  for (size_t i = 0; i < n; ++i) out.maxDifference = std::max(out.maxDifference, std::abs(out.gaussian[i] - out.dot[i]));
  return out;
}

}  // namespace tscope

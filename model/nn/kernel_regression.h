// Attention as kernel regression (the lecture notes' reading of softmax attention): weights from
// scores by a softmax, then the weighted sum of values. The same two functions compute one head's
// attention on the live model (inside_views.h) and the 1-D Gaussian-kernel example beside it, so
// the panel's toy and its real head cannot disagree on the formula.
#pragma once
#include <span>
#include <vector>

namespace tscope {

// (n) w_i = exp(s_i - max s) / sum_j exp(s_j - max s), summed in double (core/softmax.h);
// -inf scores (masked keys) get weight 0. All -inf (or n = 0): all weights 0.
std::vector<float> softmaxWeights(std::span<const float> scores);

// (width) sum_i weights[i] * values[i * width + c]: the weighted average of n rows of `width`
// values (rows of a zero weight are skipped, so a masked key's row may hold anything).
std::vector<float> weightedSum(std::span<const float> weights, std::span<const float> values, int width);

// (n) the Gaussian kernel's log-weights -(x - x_i)^2 / (2 sigma^2): the "scores" of the 1-D example
// (sigma > 0; throws tscope::Error otherwise).
std::vector<float> gaussianKernelScores(float query, std::span<const float> xs, float sigma);

// The Nadaraya-Watson estimate at `query`: softmaxWeights(gaussianKernelScores) and their weighted
// sum of ys (xs and ys the same length).
struct KernelEstimate {
  std::vector<float> weights;  // (n)
  float estimate = 0;          // sum_i w_i y_i
};
KernelEstimate kernelRegression(float query, std::span<const float> xs, std::span<const float> ys, float sigma);

// The bridge from the Gaussian kernel to the scaled dot product (the notes' "fixed norm" step):
// -|q - k_i|^2 / (2 sigma^2) = q.k_i / sigma^2 - |q|^2 / (2 sigma^2) - |k_i|^2 / (2 sigma^2). The
// |q|^2 term is the same for every key and cancels in the softmax; the |k_i|^2 term cancels too
// when every key has the same norm, leaving softmax(q.k_i / sigma^2), attention's weights with
// 1/sqrt(D) in the place of 1/sigma^2. query (dim), keys (n, dim).
struct KernelBridge {
  std::vector<float> gaussian;  // (n) softmax of the Gaussian kernel's scores
  std::vector<float> dot;       // (n) softmax(q.k_i / sigma^2)
  float maxDifference = 0;      // max_i |gaussian_i - dot_i|: 0 (to rounding) when the keys' norms are equal
};
KernelBridge kernelToDotProduct(std::span<const float> query, std::span<const float> keys, int dim, float sigma);

}  // namespace tscope

// The one host softmax and log-sum-exp of a row: the maximum subtracted, exp(x - max) summed in
// double from left to right, so huge logits do not overflow and every caller gets the same bits.
// -inf entries (masked keys) get probability 0; a row whose maximum is not finite (empty, all
// -inf, or holding +inf) has no distribution: softmax writes zeros.
// Used by the samplers, beam search, MoE routing, the trace views, the reference backend and
// backward, the efficient-attention references and the CLI. Not by the vectorised float fast paths
// (Eigen in backend_cpu.cpp, backward_cpu.cpp and efficient_attention_fast.cpp; the CUDA kernels),
// which the tests check against the reference backend that uses these.
#pragma once
#include <cmath>
#include <limits>
#include <span>

namespace tscope {

// A row's maximum and sum of exp(x - max): everything its softmax and log-sum-exp need.
struct SoftmaxNorm {
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;                                                         // sum of exp(x - max), in double
  double probability(double x) const { return std::exp(x - max) / sum; }  // softmax at the entry x
  double logProbability(double x) const { return (x - max) - std::log(sum); }
  double logSumExp() const { return max + std::log(sum); }  // log sum exp(x)
};

SoftmaxNorm softmaxNorm(std::span<const float> row);
SoftmaxNorm softmaxNorm(std::span<const double> row);
inline double logSumExp(std::span<const float> row) { return softmaxNorm(row).logSumExp(); }
inline double logSumExp(std::span<const double> row) { return softmaxNorm(row).logSumExp(); }

struct SoftmaxOptions {
  double temperature = 1;  // softmax(x / temperature), each exponent formed as (x - max) / temperature
  // The exponent rounded to float and exp taken in float (the sampler's arithmetic, which the CUDA
  // sampler repeats); the sum stays double. false: exp in double, each probability rounded once.
  bool floatExp = false;
};

// out (row.size()) = softmax(row). out may be row itself.
void softmax(std::span<const float> row, std::span<float> out, const SoftmaxOptions& options = {});
void softmax(std::span<const double> row, std::span<double> out, const SoftmaxOptions& options = {});
void softmax(std::span<const double> row, std::span<float> out, const SoftmaxOptions& options = {});

}  // namespace tscope

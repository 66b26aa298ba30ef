// The one host softmax and log-sum-exp (softmax.h).
#include "model/core/softmax.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "model/core/error.h"

namespace tscope {
namespace {

template <class In>
SoftmaxNorm normOf(std::span<const In> row) {
  SoftmaxNorm norm;
  for (In x : row) norm.max = std::max(norm.max, static_cast<double>(x));
  if (norm.max == -std::numeric_limits<double>::infinity()) return norm;  // empty or all -inf: sum 0
  for (In x : row) norm.sum += std::exp(static_cast<double>(x) - norm.max);
  return norm;
}

template <class In, class Out>
void softmaxOf(std::span<const In> row, std::span<Out> out, const SoftmaxOptions& options) {
  if (out.size() != row.size()) throw Error("softmax: " + std::to_string(row.size()) + " entries into " + std::to_string(out.size()) + " outputs");
  double max = -std::numeric_limits<double>::infinity();
  for (In x : row) max = std::max(max, static_cast<double>(x));
  if (!std::isfinite(max)) {
    std::fill(out.begin(), out.end(), Out(0));
    return;
  }
  const double temperature = options.temperature;
  const bool floatExp = options.floatExp;
  auto weight = [max, temperature, floatExp](In x) -> double {
    const double exponent = temperature == 1 ? static_cast<double>(x) - max : (static_cast<double>(x) - max) / temperature;
    return floatExp ? static_cast<double>(std::exp(static_cast<float>(exponent))) : std::exp(exponent);
  };
  double sum = 0;
  if (std::is_same_v<Out, double> || floatExp) {  // each weight fits Out exactly: keep it, then divide
    for (size_t i = 0; i < row.size(); ++i) {
      const double w = weight(row[i]);  // read before out[i] is written: out may be row
      out[i] = static_cast<Out>(w);
      sum += w;
    }
    for (Out& p : out) p = static_cast<Out>(p / sum);
    return;
  }
  // A double weight rounded to float before the division would round twice: compute it again.
  for (In x : row) sum += weight(x);
  for (size_t i = 0; i < row.size(); ++i) out[i] = static_cast<Out>(weight(row[i]) / sum);
}

}  // namespace

SoftmaxNorm softmaxNorm(std::span<const float> row) { return normOf(row); }
SoftmaxNorm softmaxNorm(std::span<const double> row) { return normOf(row); }

void softmax(std::span<const float> row, std::span<float> out, const SoftmaxOptions& options) { softmaxOf(row, out, options); }
void softmax(std::span<const double> row, std::span<double> out, const SoftmaxOptions& options) { softmaxOf(row, out, options); }
void softmax(std::span<const double> row, std::span<float> out, const SoftmaxOptions& options) { softmaxOf(row, out, options); }

}  // namespace tscope

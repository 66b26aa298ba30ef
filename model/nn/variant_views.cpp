// Views of the efficient-attention variants on the live model (variant_views.h): a head's q, k, v
// out of the trace, the KL and top tokens of the next-token distribution before and after, and the
// sliding window's receptive field. Log-softmax in double so a KL near 0 does not drown in rounding.
#include "model/nn/variant_views.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

HeadQkv traceHeadQkv(const Trace& trace, const ModelConfig& config, int layer, int head) {
  const int li = trace.internalIndex(layer);
  if (li < 0) throw Error("the trace holds no internals of layer " + std::to_string(layer));
  if (head < 0 || head >= trace.H) throw Error("head " + std::to_string(head) + " is outside 0.." + std::to_string(trace.H - 1));
  // Every row: the kept positions are 0 .. Tk - 1 (ascending, so the ends tell).
  const size_t R = trace.rowPositions.size(), Tk = trace.Tk;
  if (R != Tk || R == 0 || trace.rowPositions.front() != 0 || trace.rowPositions.back() != trace.Tk - 1 || trace.Hkv <= 0)
    throw Error("the trace holds the internals of " + std::to_string(R) + " of " + std::to_string(Tk) + " rows, not every row");
  const size_t D = trace.D;
  const int kvHead = head / (trace.H / trace.Hkv);
  HeadQkv qkv;
  qkv.q = trace.q.data() + ((size_t)li * trace.H + head) * R * D;       // (R = Tk, D)
  qkv.k = trace.k.data() + ((size_t)li * trace.Hkv + kvHead) * Tk * D;  // (Tk, D)
  qkv.v = trace.v.data() + ((size_t)li * trace.Hkv + kvHead) * Tk * D;  // (Tk, D)
  qkv.n = trace.Tk;
  qkv.d = trace.D;
  qkv.causal = config.causal;
  return qkv;
}

namespace {
// log softmax(logits) (V) in double.
std::vector<double> logSoftmax(std::span<const float> logits) {
  const double logSum = logSumExp(logits);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - logSum;
  return out;
}
}  // namespace

DistributionShift distributionShift(std::span<const float> exactLogits, std::span<const float> variantLogits, int top) {
  if (exactLogits.empty() || exactLogits.size() != variantLogits.size())
    throw Error("the logits to compare have " + std::to_string(exactLogits.size()) + " and " + std::to_string(variantLogits.size()) + " entries");
  const std::vector<double> logP = logSoftmax(exactLogits), logQ = logSoftmax(variantLogits);
  DistributionShift shift;
  for (size_t i = 0; i < logP.size(); ++i) shift.kl += std::exp(logP[i]) * (logP[i] - logQ[i]);
  shift.kl = std::max(0.0, shift.kl);  // >= 0 in exact arithmetic
  shift.before = topNextTokens(exactLogits, top);
  shift.after = topNextTokens(variantLogits, top);
  return shift;
}

std::vector<int> windowReceptiveField(int window, int layers, int position) {
  std::vector<int> seen(std::max(0, layers));
  for (int l = 1; l <= layers; ++l) seen[l - 1] = (int)std::min<long long>(position + 1LL, (long long)l * (std::max(1, window) - 1) + 1);
  return seen;
}

}  // namespace tscope

// Next-token selection: the logit pipeline (softmax, temperature, top-k,
// top-p, each stage renormalised) and inverse-CDF sampling. Softmax uses (logit - max) / T formed in
// double, so tiny T or -inf logits cannot overflow; top-p sorts only as far as the nucleus reaches.
#include "model/generate/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

// --- Validation --------------------------------------------------------------------------------

const char* validateSamplingParams(const SamplingParams& params) {
  if (!(params.temperature > 0.0f) || !std::isfinite(params.temperature)) return "temperature must be a finite number > 0";
  if (params.topK < 0) return "top_k must be >= 0 (0 turns it off)";
  if (!(params.topP > 0.0f && params.topP <= 1.0f)) return "top_p must be in (0, 1] (1 turns it off)";
  return "";
}

// --- Logit pipeline ----------------------------------------------------------------------------

namespace {

// Rejects input that has no meaningful distribution: empty, NaN, +inf, or every logit -inf.
void checkLogits(std::span<const float> logits) {
  if (logits.empty()) throw Error("logits are empty");
  bool anyFinite = false;
  for (float logit : logits) {
    if (std::isnan(logit)) throw Error("logits contain NaN");
    if (logit == std::numeric_limits<float>::infinity()) throw Error("logits contain +inf");
    anyFinite = anyFinite || std::isfinite(logit);
  }
  if (!anyFinite) throw Error("logits are all -inf: no token is possible");
}

// probs = softmax(logits / temperature) = exp((logit - max) / temperature) / sum, summed in double.
// The exponent is formed in double (a tiny temperature cannot overflow it); float exp is enough,
// and is what kernels/sampling.cu computes too.
void softmaxWithTemperature(std::span<const float> logits, double temperature, std::vector<float>& probs) {
  probs.resize(logits.size());
  softmax(logits, probs, SoftmaxOptions{.temperature = temperature, .floatExp = true});
}

// out = `probs` restricted to order[0, keep) and renormalised; every other token gets exactly 0.
void keepPrefix(const std::vector<float>& probs, const std::vector<int>& order, size_t keep, std::vector<float>& out) {
  out.assign(probs.size(), 0.0f);
  double keptMass = 0;
  for (size_t r = 0; r < keep; ++r) keptMass += probs[order[r]];
  for (size_t r = 0; r < keep; ++r) out[order[r]] = static_cast<float>(probs[order[r]] / keptMass);
}

}  // namespace

void processLogits(std::span<const float> logits, const SamplingParams& params, SamplingScratch& scratch, bool sameLogits) {
  if (const char* problem = validateSamplingParams(params); *problem) throw Error(problem);
  LogitStages& stages = scratch.stages;
  const size_t vocab = logits.size();
  if (!sameLogits || stages.raw.size() != vocab) {
    scratch.rawDone = false;
    scratch.temperatureDone = 0;
    scratch.topKDone = -1;
    scratch.sortedCount = 0;
  }
  if (!scratch.rawDone) {
    checkLogits(logits);
    softmaxWithTemperature(logits, 1.0, stages.raw);
    scratch.rawDone = true;
  }
  if (scratch.temperatureDone != params.temperature) {
    if (params.temperature == 1.0f) stages.afterTemperature = stages.raw;
    else softmaxWithTemperature(logits, params.temperature, stages.afterTemperature);
    scratch.temperatureDone = params.temperature;
    scratch.topKDone = -1;
  }

  const bool topKActive = params.topK > 0 && static_cast<size_t>(params.topK) < vocab;
  const bool topPActive = params.topP < 1.0f;
  if (!topKActive && !topPActive) {
    stages.afterTopK = stages.afterTemperature;
    stages.afterTopP = stages.afterTemperature;
    scratch.topKDone = -1;
    return;
  }

  // Rank ids by logit, highest first, ties to the lower id. Temperature is a positive scale, so
  // this is also the order of every stage's probabilities. Only a prefix is ever sorted: the top k,
  // or for top-p alone, chunks growing 4x until the nucleus is complete (V = 50k, p = 0.9 sorts a
  // few thousand ids, not all of them). On the same logits the sorted prefix is kept: the order
  // does not depend on any knob.
  std::vector<int>& order = scratch.order;
  size_t& sortedCount = scratch.sortedCount;
  if (sortedCount == 0) {
    order.resize(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int>(i);
  }
  auto sortPrefixUpTo = [&](size_t end) {
    if (end <= sortedCount) return;
    auto higher = [&logits](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(sortedCount);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(end);
    if (end - sortedCount <= 1024) {
      std::partial_sort(first, last, order.end(), higher);  // a heap of the chunk: fast for small k
    } else {
      if (end < vocab) std::nth_element(first, last, order.end(), higher);
      std::sort(first, last, higher);
    }
    sortedCount = end;
  };
  const size_t candidates = topKActive ? static_cast<size_t>(params.topK) : vocab;
  const int topK = topKActive ? params.topK : 0;
  if (scratch.topKDone != topK) {
    if (topKActive) {
      sortPrefixUpTo(candidates);
      keepPrefix(stages.afterTemperature, order, candidates, stages.afterTopK);
    } else {
      stages.afterTopK = stages.afterTemperature;
    }
    scratch.topKDone = topK;
  }

  if (!topPActive) {
    stages.afterTopP = stages.afterTopK;
    return;
  }
  // Smallest prefix whose mass reaches p. The stage values are floats, so "reaches" allows 1e-6
  // of rounding; a prefix never grows past the last token that has any probability.
  const double target = static_cast<double>(params.topP) - 1e-6;
  double mass = 0;
  size_t keep = 0;
  size_t chunk = 256;
  while (keep < candidates) {
    if (keep == sortedCount) {
      sortPrefixUpTo(std::min(candidates, sortedCount + chunk));
      chunk *= 4;
    }
    if (stages.afterTopK[order[keep]] == 0.0f) break;
    mass += stages.afterTopK[order[keep]];
    ++keep;
    if (mass >= target) break;
  }
  keepPrefix(stages.afterTopK, order, keep, stages.afterTopP);
}

LogitStages processLogits(std::span<const float> logits, const SamplingParams& params) {
  SamplingScratch scratch;
  processLogits(logits, params, scratch);
  return std::move(scratch.stages);
}

// --- Drawing -----------------------------------------------------------------------------------

int sampleFromProbs(std::span<const float> probs, Rng& rng) {
  if (probs.empty()) throw Error("cannot sample from an empty distribution");
  double total = 0;
  int lastPossible = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] >= 0.0f) || !std::isfinite(probs[i])) throw Error("probabilities must be finite and >= 0");
    if (probs[i] > 0.0f) lastPossible = static_cast<int>(i);
    total += probs[i];
  }
  if (lastPossible < 0) throw Error("probabilities are all zero");

  // Inverse CDF against the actual total, so a vector that sums to 1 - 1e-7 is not biased.
  const double target = rng.uniform() * total;
  double cumulative = 0;
  for (int i = 0; i < lastPossible; ++i) {
    if (probs[i] == 0.0f) continue;
    cumulative += probs[i];
    if (target < cumulative) return i;
  }
  return lastPossible;  // also where rounding leaves target just above the summed mass
}

int argmax(std::span<const float> values) {
  if (values.empty()) throw Error("argmax of an empty vector");
  int best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (best < 0 || values[i] > values[best]) best = static_cast<int>(i);  // ties keep the lower id
  }
  if (best < 0) throw Error("argmax of an all-NaN vector");
  return best;
}

int sampleNext(std::span<const float> logits, const SamplingParams& params, Rng& rng, SamplingScratch& scratch) {
  if (params.greedy) {
    checkLogits(logits);
    return argmax(logits);
  }
  processLogits(logits, params, scratch);
  return sampleFromProbs(scratch.stages.afterTopP, rng);
}

int sampleNext(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  SamplingScratch scratch;
  return sampleNext(logits, params, rng, scratch);
}

}  // namespace tscope

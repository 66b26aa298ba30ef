// Mixture-of-experts routing on the host: top-k token choice with capacity drops (Shazeer et al.
// 2017; Switch Transformer, Fedus et al. 2021), expert choice (Zhou et al. 2022) and the Switch
// load-balancing loss. Softmaxes are core/softmax.h's (double, after subtracting the row
// maximum), so any finite logits work; capacities forgive floating-point noise (25 / 11 * 2.2 is 5, not 5 + 1e-15).
#include "model/nn/moe.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <sstream>

#include "model/core/error.h"
#include "model/core/list_text.h"
#include "model/core/softmax.h"

namespace tscope {

namespace {

std::string formatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void validateParams(int tokens, const MoeRoutingParams& params) {
  const std::string experts = std::to_string(params.experts), topK = std::to_string(params.topK);
  if (params.experts < 1) throw Error("n_experts (" + experts + ") must be at least 1");
  if (params.topK < 1) throw Error("moe_top_k (" + topK + ") must be at least 1");
  if (params.topK > params.experts) throw Error("moe_top_k (" + topK + ") must be at most n_experts (" + experts + ")");
  if (!std::isfinite(params.capacityFactor)) throw Error("moe_capacity_factor (" + formatNumber(params.capacityFactor) + ") must be finite");
  if (!std::isfinite(params.auxLossAlpha)) throw Error("moe_aux_loss_alpha (" + formatNumber(params.auxLossAlpha) + ") must be finite");
  if (tokens < 0) throw Error("tokens (" + std::to_string(tokens) + ") must not be negative");
}

// ceil(x) for x >= 0, treating values within a relative 1e-9 above an integer as that integer
// and saturating at INT_MAX.
int ceilForgivingRounding(double x) {
  const double rounded = std::ceil(x - 1e-9 * std::max(1.0, x));
  if (rounded >= static_cast<double>(std::numeric_limits<int>::max())) return std::numeric_limits<int>::max();
  return static_cast<int>(std::max(0.0, rounded));
}

}  // namespace

double cvSquared(const std::vector<float>& values) {
  if (values.empty()) return 0;
  const double n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  if (mean == 0) return 0;
  double variance = 0;
  for (float v : values) variance += (v - mean) * (v - mean);
  variance /= n;
  return variance / (mean * mean);
}

TypedRouterLogits parseRouterLogits(const std::string& text) {
  TypedRouterLogits out;
  size_t lineStart = 0;
  for (int lineNumber = 1; lineStart <= text.size(); ++lineNumber) {
    const size_t end = std::min(text.find('\n', lineStart), text.size());
    std::string line = text.substr(lineStart, end - lineStart);
    lineStart = end + 1;
    std::replace_if(
        line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; }, ',');
    std::vector<float> row;
    for (std::string_view item : splitList(line)) {
      if (item.empty()) continue;  // blanks and commas together
      const std::string word(item);
      char* stop = nullptr;
      const double value = std::strtod(word.c_str(), &stop);
      const std::string where = "line " + std::to_string(lineNumber) + ", item " + std::to_string(row.size() + 1);
      if (stop != word.c_str() + word.size()) throw Error(where + ": '" + word + "' is not a number");
      if (!std::isfinite(value) || std::abs(value) > 1e6) throw Error(where + ": " + word + " is not a finite logit (at most 1e6 in size)");
      row.push_back(static_cast<float>(value));
    }
    if (row.empty()) continue;
    if (out.tokens == 0) {
      if (row.size() < 2 || row.size() > static_cast<size_t>(kMaxTypedExperts))
        throw Error("line " + std::to_string(lineNumber) + ": " + std::to_string(row.size()) + " logits; a router needs 2 to " +
                    std::to_string(kMaxTypedExperts) + " experts");
      out.experts = static_cast<int>(row.size());
    } else if (row.size() != static_cast<size_t>(out.experts)) {
      throw Error("line " + std::to_string(lineNumber) + ": " + std::to_string(row.size()) + " logits, but the first token has " +
                  std::to_string(out.experts) + " (one per expert)");
    }
    if (++out.tokens > kMaxTypedTokens) throw Error("more than " + std::to_string(kMaxTypedTokens) + " tokens (one per line)");
    out.logits.insert(out.logits.end(), row.begin(), row.end());
  }
  if (out.tokens == 0) throw Error("no logits: type one token's router logits per line, e.g. 2.1, 0.3, 1.8");
  return out;
}

namespace {

// f_i, P_i and alpha * E * sum_i f_i P_i from the per-expert assignment counts (before drops).
void fillBalanceStatistics(const std::vector<int>& routedCount, double alpha, MoeRouting& routing) {
  const int T = routing.tokens, E = routing.experts;
  const double totalRouted = std::accumulate(routedCount.begin(), routedCount.end(), 0.0);
  double weightedSum = 0;
  for (int e = 0; e < E; ++e) {
    double probSum = 0;
    for (int t = 0; t < T; ++t) probSum += routing.routerProbs[static_cast<size_t>(t) * E + e];
    const double fraction = totalRouted > 0 ? routedCount[e] / totalRouted : 0.0;
    const double meanProb = T > 0 ? probSum / T : 0.0;
    routing.fraction[e] = static_cast<float>(fraction);
    routing.meanProb[e] = static_cast<float>(meanProb);
    weightedSum += fraction * meanProb;
  }
  routing.auxLoss = static_cast<float>(alpha * E * weightedSum);
}

// Each token takes its k highest-logit experts (ties to the lower id); gates are the softmax of
// those k logits (normalizeTopK), else their probabilities under the full softmax. Assignments fill
// experts in (token, rank) order until each holds `capacity`. Returns the assignments per expert
// before drops.
std::vector<int> routeTokenChoice(MoeRouting& routing, bool normalizeTopK) {
  const int T = routing.tokens, E = routing.experts, k = routing.topK;
  std::vector<int> routedCount(E, 0);
  std::vector<int> expertOrder(E);
  std::vector<float> chosenLogits(k), chosenGates(k);
  routing.assignments.reserve(static_cast<size_t>(T) * k);
  for (int t = 0; t < T; ++t) {
    const float* logits = routing.routerLogits.data() + static_cast<size_t>(t) * E;
    std::iota(expertOrder.begin(), expertOrder.end(), 0);
    std::partial_sort(expertOrder.begin(), expertOrder.begin() + k, expertOrder.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (int r = 0; r < k; ++r) chosenLogits[r] = logits[expertOrder[r]];
    if (normalizeTopK) softmax(std::span<const float>(chosenLogits.data(), k), std::span<float>(chosenGates.data(), k));
    else
      for (int r = 0; r < k; ++r) chosenGates[r] = routing.routerProbs[static_cast<size_t>(t) * E + expertOrder[r]];
    bool anyKept = false;
    for (int r = 0; r < k; ++r) {
      const int e = expertOrder[r];
      ++routedCount[e];
      MoeAssignment a;
      a.token = t;
      a.expert = e;
      a.gate = chosenGates[r];
      a.rank = r;
      a.dropped = routing.capacity >= 0 && routing.load[e] >= routing.capacity;
      if (!a.dropped) {
        ++routing.load[e];
        anyKept = true;
      }
      routing.assignments.push_back(a);
    }
    if (!anyKept) routing.droppedTokens.push_back(t);
  }
  return routedCount;
}

// Each expert takes the `capacity` tokens with the highest router probability S[t, e] (ties to
// the lower token id); the gate is S[t, e]. A token may be taken by several experts or by none.
// Returns the picks per expert.
std::vector<int> routeExpertChoice(MoeRouting& routing) {
  const int T = routing.tokens, E = routing.experts, capacity = routing.capacity;
  std::vector<int> tokenOrder(T);
  std::vector<bool> picked(T, false);
  routing.assignments.reserve(static_cast<size_t>(capacity) * E);
  for (int e = 0; e < E; ++e) {
    auto prob = [&](int t) { return routing.routerProbs[static_cast<size_t>(t) * E + e]; };
    std::iota(tokenOrder.begin(), tokenOrder.end(), 0);
    std::partial_sort(tokenOrder.begin(), tokenOrder.begin() + capacity, tokenOrder.end(),
                      [&](int a, int b) { return prob(a) > prob(b) || (prob(a) == prob(b) && a < b); });
    for (int r = 0; r < capacity; ++r) {
      const int t = tokenOrder[r];
      MoeAssignment a;
      a.token = t;
      a.expert = e;
      a.gate = prob(t);
      a.rank = r;
      routing.assignments.push_back(a);
      picked[t] = true;
    }
    routing.load[e] = capacity;
  }
  for (int t = 0; t < T; ++t)
    if (!picked[t]) routing.droppedTokens.push_back(t);
  return routing.load;
}

}  // namespace

MoeRoutingParams moeRoutingParams(const ModelConfig& config) {
  MoeRoutingParams params;
  params.experts = config.n_experts;
  params.topK = config.moe_top_k;
  params.capacityFactor = config.moe_capacity_factor;
  params.expertChoice = config.moe_routing == MoeRoutingKind::ExpertChoice;
  params.auxLossAlpha = config.moe_aux_loss_alpha;
  params.normalizeTopK = config.moe_normalize_top_k;
  return params;
}

int expertCapacity(int tokens, const MoeRoutingParams& params) {
  validateParams(tokens, params);
  if (params.expertChoice) {
    // An expert can take each token at most once; with no factor every expert may take them all.
    if (params.capacityFactor <= 0) return tokens;
    const double capacity = static_cast<double>(tokens) * params.topK / params.experts * params.capacityFactor;
    return std::min(tokens, ceilForgivingRounding(capacity));
  }
  if (params.capacityFactor <= 0) return -1;
  return ceilForgivingRounding(static_cast<double>(tokens) / params.experts * params.capacityFactor);
}

MoeRouting routeTokens(const std::vector<float>& routerLogits, int tokens, const MoeRoutingParams& params) {
  validateParams(tokens, params);
  const int E = params.experts;
  const size_t expectedSize = static_cast<size_t>(tokens) * E;
  if (routerLogits.size() != expectedSize)
    throw Error("router logits size (" + std::to_string(routerLogits.size()) + ") must be tokens * n_experts (" + std::to_string(tokens) + " * " +
                std::to_string(E) + " = " + std::to_string(expectedSize) + ")");
  for (size_t i = 0; i < routerLogits.size(); ++i) {
    if (!std::isfinite(routerLogits[i]))
      throw Error("router logit of token " + std::to_string(i / E) + ", expert " + std::to_string(i % E) + " must be finite (got " +
                  formatNumber(routerLogits[i]) + ")");
  }

  MoeRouting routing;
  routing.tokens = tokens;
  routing.experts = E;
  routing.topK = params.topK;
  routing.capacity = expertCapacity(tokens, params);
  routing.routerLogits = routerLogits;
  routing.routerProbs.resize(expectedSize);
  for (int t = 0; t < tokens; ++t)
    softmax(std::span<const float>(routerLogits.data() + static_cast<size_t>(t) * E, E),
            std::span<float>(routing.routerProbs.data() + static_cast<size_t>(t) * E, E));
  routing.load.assign(E, 0);
  routing.fraction.assign(E, 0.0f);
  routing.meanProb.assign(E, 0.0f);
  if (tokens == 0) return routing;

  const std::vector<int> routedCount = params.expertChoice ? routeExpertChoice(routing) : routeTokenChoice(routing, params.normalizeTopK);
  fillBalanceStatistics(routedCount, params.auxLossAlpha, routing);
  return routing;
}

}  // namespace tscope

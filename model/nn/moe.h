// Mixture-of-experts routing as a pure host function: from router logits to each token's chosen
// experts, gates, capacity drops, per-expert load and the Switch Transformer load-balancing loss.
// Token choice: G(x) = softmax(KeepTopK(h, k)) (Shazeer et al. 2017; Switch, Fedus et al. 2021
// for k = 1), or KeepTopK(softmax(h), k) unrenormalised (Qwen1.5-MoE). Expert choice: each expert
// takes its top tokens (Zhou et al. 2022).
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"

namespace tscope {

struct MoeRoutingParams {
  int experts = 8;               // E
  int topK = 2;                  // k: experts per token (token choice); average experts per token (expert choice)
  double capacityFactor = 1.25;  // <= 0: no capacity limit (token choice only)
  bool expertChoice = false;     // experts pick their top tokens instead of tokens picking experts
  double auxLossAlpha = 0.01;    // alpha of the load-balancing loss
  // Token choice: true = gates softmax over the k chosen logits (sum 1); false = the full softmax's
  // probabilities of the k chosen experts, unrenormalised (Qwen1.5-MoE's norm_topk_prob false).
  bool normalizeTopK = true;
  // Every knob equal: the same routing (prefix reuse and continued generation depend on it).
  bool operator==(const MoeRoutingParams&) const = default;
};

// The routing a config's MoE layers are built with (its n_experts, moe_top_k, capacity factor,
// routing kind and aux-loss alpha).
MoeRoutingParams moeRoutingParams(const ModelConfig& config);

// Expert capacity for `tokens` tokens:
//   token choice:  ceil(tokens / E * capacityFactor)  (no limit when capacityFactor <= 0)
//   expert choice: ceil(tokens * k / E * capacityFactor), at most `tokens`
int expertCapacity(int tokens, const MoeRoutingParams& params);

// One routing decision: a (token, expert) assignment.
struct MoeAssignment {
  int token = 0;
  int expert = 0;
  float gate = 0;        // weight of this expert's output in the token's sum
  int rank = 0;          // 0 = the token's first choice (token choice); the expert's pick order (expert choice)
  bool dropped = false;  // over capacity: not computed, contributes nothing
};

struct MoeRouting {
  int tokens = 0, experts = 0, topK = 0, capacity = 0;  // capacity -1 = unlimited
  std::vector<float> routerLogits;                      // (T, E) as given
  std::vector<float> routerProbs;                       // (T, E) softmax over all experts
  std::vector<MoeAssignment> assignments;               // token choice: T * k in (token, rank) order; expert choice: by (expert, pick order)
  std::vector<int> load;                                // (E) assignments kept (not dropped) per expert
  std::vector<float> fraction;                          // (E) f_i: fraction of routed assignments sent to expert i (before drops; sums to 1)
  std::vector<float> meanProb;                          // (E) P_i: mean router probability of expert i over tokens
  float auxLoss = 0;                                    // alpha * E * sum_i f_i * P_i  (= alpha under uniform routing)
  std::vector<int> droppedTokens;                       // tokens with no kept assignment (they pass through on the residual)
  std::vector<float> sharedExpertGates;  // (T) models with a shared expert: its sigmoid gate per token (filled by the forward); else empty
};

// CV(x)^2, the squared coefficient of variation of E values: their variance (over E, not E - 1)
// over their mean squared; 0 for equal values, E - 1 when one holds everything. 0 when the mean is 0.
// The lecture's alternative load-balancing loss is alpha CV(f_1, ..., f_E)^2 (its appendix A7); on
// the fractions f_i it has no gradient (they are counts), so Shazeer et al. 2017 ("Outrageously Large
// Neural Networks", eq. 6) take it over each expert's importance, its summed gate values, whose CV is
// that of P_i.
double cvSquared(const std::vector<float>& values);

// Router logits typed by hand (the Experts panel's router by hand): one token per line, its E logits
// separated by commas or blanks, e.g. the lecture's "2.1, 0.3, 1.8, 0.1, 3.2, 0.5, 1.1, 0.8". Blank
// lines are skipped. Returns (T, E) row-major with tokens = T, experts = E. Throws tscope::Error, one
// line naming the line and the item: not a number, not finite, lines of different lengths, fewer than
// 2 or more than kMaxTypedExperts experts, more than kMaxTypedTokens tokens, no token at all.
constexpr int kMaxTypedExperts = 64, kMaxTypedTokens = 64;
struct TypedRouterLogits {
  std::vector<float> logits;
  int tokens = 0, experts = 0;
};
TypedRouterLogits parseRouterLogits(const std::string& text);

// Routes T tokens given their router logits (T, E) row-major. Token choice assigns in token
// order, each token's choices in rank order, dropping an assignment when its expert is full.
// Ties in logits go to the lower expert id (and, for expert choice, the lower token id).
// Throws tscope::Error when k < 1 or k > E, E < 1, or the logits are not finite.
MoeRouting routeTokens(const std::vector<float>& routerLogits, int tokens, const MoeRoutingParams& params);

}  // namespace tscope

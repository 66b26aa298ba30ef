// Fuzzes the router logits a lecturer types into the Experts panel's router by hand: an accepted
// text is (tokens, experts) within the limits, every logit finite, and routing it (top-2 with a
// capacity, as the panel does) gives each token its k assignments with gates in [0, 1] that sum to 1.
#include <cmath>
#include <string>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/nn/moe.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TypedRouterLogits typed;
  try {
    typed = parseRouterLogits(text);
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(typed.tokens >= 1 && typed.tokens <= kMaxTypedTokens, "tokens out of range");
  FUZZ_CHECK(typed.experts >= 2 && typed.experts <= kMaxTypedExperts, "experts out of range");
  FUZZ_CHECK(typed.logits.size() == static_cast<size_t>(typed.tokens) * typed.experts, "logits size");
  for (float v : typed.logits) FUZZ_CHECK(std::isfinite(v), "a non-finite logit was accepted");
  MoeRoutingParams params;
  params.experts = typed.experts;
  params.topK = 2;
  params.capacityFactor = 1.25;
  const MoeRouting r = routeTokens(typed.logits, typed.tokens, params);
  FUZZ_CHECK(r.assignments.size() == static_cast<size_t>(typed.tokens) * 2, "assignments per token");
  for (int t = 0; t < typed.tokens; ++t) {
    const double sum = r.assignments[(size_t)t * 2].gate + r.assignments[(size_t)t * 2 + 1].gate;
    FUZZ_CHECK(std::abs(sum - 1) < 1e-4, "gates do not sum to 1");
  }
  return 0;
}

// Names, knobs and knob rules of the attention variants (attention_variant.h).
#include "model/core/attention_variant.h"

#include <array>
#include <limits>
#include <tuple>
#include <nlohmann/json.hpp>

namespace tscope {
namespace {

constexpr std::array<const char*, 7> kVariantNames = {"exact", "flash", "window", "lsh", "linformer", "linear", "performer"};
constexpr std::array<const char*, 2> kProjectionNames = {"pool", "gaussian"};

std::string rangeProblem(const char* knob, int value, int lo, int hi) {
  if (value >= lo && value <= hi) return "";
  std::string range = hi == std::numeric_limits<int>::max() ? ">= " + std::to_string(lo) : std::to_string(lo) + " .. " + std::to_string(hi);
  return std::string(knob) + " must be " + range + ", not " + std::to_string(value);
}

}  // namespace

const char* attentionVariantName(AttentionVariant variant) { return kVariantNames[static_cast<size_t>(variant)]; }

std::optional<AttentionVariant> attentionVariantFromName(std::string_view name) {
  for (AttentionVariant v : allAttentionVariants())
    if (name == attentionVariantName(v)) return v;
  return std::nullopt;
}

std::vector<AttentionVariant> allAttentionVariants() {
  return {AttentionVariant::Exact,     AttentionVariant::Flash,  AttentionVariant::Window,   AttentionVariant::Lsh,
          AttentionVariant::Linformer, AttentionVariant::Linear, AttentionVariant::Performer};
}

const char* linformerProjectionName(LinformerProjection projection) { return kProjectionNames[static_cast<size_t>(projection)]; }

std::optional<LinformerProjection> linformerProjectionFromName(std::string_view name) {
  for (LinformerProjection p : {LinformerProjection::Pool, LinformerProjection::Gaussian})
    if (name == linformerProjectionName(p)) return p;
  return std::nullopt;
}

const std::vector<AttentionKnob>& attentionKnobs() {
  static const std::vector<AttentionKnob> kKnobs = {
      {"tile", AttentionVariant::Flash, &AttentionVariantParams::tile},
      {"window", AttentionVariant::Window, &AttentionVariantParams::window},
      {"buckets", AttentionVariant::Lsh, &AttentionVariantParams::buckets},
      {"rounds", AttentionVariant::Lsh, &AttentionVariantParams::rounds},
      {"chunk", AttentionVariant::Lsh, &AttentionVariantParams::chunk},
      {"projected", AttentionVariant::Linformer, &AttentionVariantParams::projected},
      {"features", AttentionVariant::Performer, &AttentionVariantParams::features},
  };
  return kKnobs;
}

bool isExactVariant(AttentionVariant variant) { return variant == AttentionVariant::Exact || variant == AttentionVariant::Flash; }

std::string attentionVariantProblem(const AttentionVariantParams& p, int n) {
  constexpr int kNoLimit = std::numeric_limits<int>::max();
  if (n < 1) return "attention needs n >= 1 tokens, not " + std::to_string(n);
  switch (p.variant) {
    case AttentionVariant::Exact: return "";
    case AttentionVariant::Flash: return rangeProblem("flash tile", p.tile, 1, kNoLimit);
    case AttentionVariant::Window: return rangeProblem("window", p.window, 1, kNoLimit);
    case AttentionVariant::Lsh:
      for (std::string problem : {rangeProblem("lsh buckets", p.buckets, 1, 1024), rangeProblem("lsh rounds", p.rounds, 1, 16),
                                  rangeProblem("lsh chunk", p.chunk, 1, kNoLimit)})
        if (!problem.empty()) return problem;
      return "";
    case AttentionVariant::Linformer: {
      // projected above n is clamped to n (a projection to more rows than tokens adds nothing).
      std::string problem = rangeProblem("linformer projected", p.projected, 1, kNoLimit);
      if (!problem.empty()) return problem;
      if ((p.linformerE == nullptr) != (p.linformerF == nullptr)) return "linformer learned projections need both E and F (one of them is missing)";
      if (p.linformerColumns < 0) return "linformer linformerColumns must be >= 0, not " + std::to_string(p.linformerColumns);
      const bool pooledColumns = p.linformerE == nullptr && p.linformerProjection == LinformerProjection::Pool && p.linformerColumns > 0;
      if ((p.linformerE != nullptr || pooledColumns) && p.linformerColumns < n)
        return "linformer linformerColumns must be >= n = " + std::to_string(n) + ", not " + std::to_string(p.linformerColumns);
      return "";
    }
    case AttentionVariant::Linear: return "";
    case AttentionVariant::Performer: return rangeProblem("performer features", p.features, 1, 4096);
  }
  return "unknown attention variant " + std::to_string(static_cast<int>(p.variant));
}

nlohmann::json attentionVariantKnobsJson(const AttentionVariantParams& p) {
  nlohmann::json knobs = nlohmann::json::object();
  for (const AttentionKnob& k : attentionKnobs())
    if (k.variant == p.variant) knobs[k.name] = p.*(k.member);
  if (p.variant == AttentionVariant::Linformer) knobs["projection"] = linformerProjectionName(p.linformerProjection);
  if (p.variant == AttentionVariant::Lsh || p.variant == AttentionVariant::Performer ||
      (p.variant == AttentionVariant::Linformer && p.linformerProjection == LinformerProjection::Gaussian))
    knobs["seed"] = p.seed;
  return knobs;
}

bool operator==(const AttentionVariantParams& a, const AttentionVariantParams& b) {
  auto knobs = [](const AttentionVariantParams& p) {
    return std::tie(p.variant, p.tile, p.window, p.buckets, p.rounds, p.chunk, p.projected, p.features, p.seed, p.linformerProjection, p.linformerE,
                    p.linformerF, p.linformerColumns);
  };
  return knobs(a) == knobs(b);
}

}  // namespace tscope

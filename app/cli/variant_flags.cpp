// The efficient-attention knob flags, parsed once for every command that takes them: one table
// of flag -> the variant reading it -> its AttentionVariantParams member.
#include "app/cli/variant_flags.h"

#include <climits>
#include <cstdint>

namespace tscope::cli {
namespace {

struct KnobFlag {
  const char* flag;
  AttentionVariant variant;
  int AttentionVariantParams::*member;
};
constexpr KnobFlag kKnobs[] = {
    {"tile", AttentionVariant::Flash, &AttentionVariantParams::tile},
    {"window", AttentionVariant::Window, &AttentionVariantParams::window},
    {"buckets", AttentionVariant::Lsh, &AttentionVariantParams::buckets},
    {"rounds", AttentionVariant::Lsh, &AttentionVariantParams::rounds},
    {"chunk", AttentionVariant::Lsh, &AttentionVariantParams::chunk},
    {"projected", AttentionVariant::Linformer, &AttentionVariantParams::projected},
    {"features", AttentionVariant::Performer, &AttentionVariantParams::features},
};

bool drawsFromSeed(const AttentionVariantParams& params, AttentionVariant variant) {
  return variant == AttentionVariant::Lsh || variant == AttentionVariant::Performer ||
         (variant == AttentionVariant::Linformer && params.linformerProjection == LinformerProjection::Gaussian);
}

}  // namespace

void addVariantKnobFlags(std::set<std::string>& valueFlags) {
  for (const KnobFlag& knob : kKnobs) valueFlags.insert(knob.flag);
  valueFlags.insert({"projection", "seed"});
}

AttentionVariantParams parseVariantKnobs(const Args& args) {
  AttentionVariantParams params;
  for (const KnobFlag& knob : kKnobs) params.*knob.member = static_cast<int>(args.integer(knob.flag, params.*knob.member, INT32_MIN, INT32_MAX));
  params.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  if (args.has("projection")) {
    const std::string name = args.str("projection");
    const auto projection = linformerProjectionFromName(name);
    if (!projection) throw UsageError("--projection: unknown linformer projection '" + name + "' (one of pool, gaussian)");
    params.linformerProjection = *projection;
  }
  return params;
}

bool anyVariantKnobFlag(const Args& args) {
  for (const KnobFlag& knob : kKnobs)
    if (args.has(knob.flag)) return true;
  return args.has("projection");
}

AttentionVariant parseVariantName(const std::string& flag, const std::string& name) {
  if (const auto variant = attentionVariantFromName(name)) return *variant;
  std::string known;
  for (AttentionVariant v : allAttentionVariants()) known += std::string(known.empty() ? "" : ", ") + attentionVariantName(v);
  throw UsageError("--" + flag + ": unknown variant '" + name + "' (one of " + known + ")");
}

nlohmann::json variantKnobsJson(const AttentionVariantParams& params, AttentionVariant variant) {
  nlohmann::json knobs = nlohmann::json::object();
  for (const KnobFlag& knob : kKnobs)
    if (knob.variant == variant) knobs[knob.flag] = params.*knob.member;
  if (variant == AttentionVariant::Linformer) knobs["projection"] = linformerProjectionName(params.linformerProjection);
  if (drawsFromSeed(params, variant)) knobs["seed"] = params.seed;
  return knobs;
}

}  // namespace tscope::cli

// The efficient-attention knob flags, parsed once for every command that takes them, from the
// engine's table of knobs (attentionKnobs: flag name -> the variant reading it -> its member).
#include "app/cli/variant_flags.h"

#include <climits>
#include <cstdint>

namespace tscope::cli {

void addVariantKnobFlags(std::set<std::string>& valueFlags) {
  for (const AttentionKnob& knob : attentionKnobs()) valueFlags.insert(knob.name);
  valueFlags.insert({"projection", "seed"});
}

AttentionVariantParams parseVariantKnobs(const Args& args) {
  AttentionVariantParams params;
  for (const AttentionKnob& knob : attentionKnobs())
    params.*knob.member = static_cast<int>(args.integer(knob.name, params.*knob.member, INT32_MIN, INT32_MAX));
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
  for (const AttentionKnob& knob : attentionKnobs())
    if (args.has(knob.name)) return true;
  return args.has("projection");
}

AttentionVariant parseVariantName(const std::string& flag, const std::string& name) {
  if (const auto variant = attentionVariantFromName(name)) return *variant;
  std::string known;
  for (AttentionVariant v : allAttentionVariants()) known += std::string(known.empty() ? "" : ", ") + attentionVariantName(v);
  throw UsageError("--" + flag + ": unknown variant '" + name + "' (one of " + known + ")");
}

}  // namespace tscope::cli

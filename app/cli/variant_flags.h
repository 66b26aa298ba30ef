// The efficient-attention flags tscope-cli's attention-bench and forward --dump share: the variant
// names, the knob flags (--tile --window --buckets --rounds --chunk --projected --features
// --projection --seed) into AttentionVariantParams (their JSON form is attentionVariantKnobsJson).
#pragma once
#include <set>
#include <string>

#include "app/common/args.h"
#include "model/nn/efficient_attention.h"

namespace tscope::cli {

// Adds the knob flags (value flags, seed included) to a command's declared flags.
void addVariantKnobFlags(std::set<std::string>& valueFlags);

// The knobs from the flags (each absent flag keeps AttentionVariantParams' default; --seed
// defaults to 1); the variant is left Exact. Throws UsageError on a value that is not an integer
// or an unknown --projection; the ranges are attentionVariantProblem's to judge.
AttentionVariantParams parseVariantKnobs(const Args& args);

// Whether any knob flag but --seed was given.
bool anyVariantKnobFlag(const Args& args);

// `name` as a variant; UsageError "<flag>: unknown variant 'x' (one of exact, ...)" otherwise.
AttentionVariant parseVariantName(const std::string& flag, const std::string& name);

}  // namespace tscope::cli

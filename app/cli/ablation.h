// The ablation flags forward and generate share: --ablate L.H[,L.H...] (L.mlp for a feed-forward
// output), --ablate-mode zero|mean|patch (default zero) and --patch-source TEXT (the second prompt a
// patch copies from, tokenized like --text). parseInterventions names a bad item in one line.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "app/common/args.h"
#include "model/io/model_io.h"
#include "model/nn/intervention.h"

namespace tscope {
class Transformer;
}

namespace tscope::cli {

// `flags` plus the ablation flags, for a command's Args.
std::set<std::string> withAblationFlags(std::set<std::string> flags);

struct Ablation {
  std::string text;  // --ablate as given
  AblationKind kind = AblationKind::Zero;
  std::vector<InterventionSpec> specs;  // empty: no ablation asked
  std::vector<int> sourceIds;           // Patch: the source prompt's tokens (at most n_ctx)
  bool empty() const { return specs.empty(); }
};

// Reads the flags. UsageError for an unknown mode, --ablate-mode or --patch-source without
// --ablate, patch without --patch-source (or --patch-source with another mode), an empty --ablate;
// tscope::Error (one line naming the item) for a spec that does not fit the model, or an empty
// source prompt.
Ablation parseAblation(const Args& args, const LoadedModel& model);

// Resolves the ablation's values for `promptIds` (means from a clean run of it, patches from a
// clean run of the source) and sets them on `transformer` for every later forward. Returns what
// the JSON output reports: {ablate, mode, items: [{layer, head | "mlp"}], source_ids (patch)}.
nlohmann::json applyAblation(const Ablation& ablation, Transformer& transformer, std::span<const int> promptIds);

}  // namespace tscope::cli

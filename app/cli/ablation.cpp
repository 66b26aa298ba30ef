// The --ablate flags: parsing (the model's own one-line errors for bad specs) and applying them
// through resolveInterventions and Transformer::setInterventions.
#include "app/cli/ablation.h"

#include <cstdio>

#include "app/cli/cli_common.h"
#include "model/core/error.h"
#include "model/nn/transformer.h"

using nlohmann::json;

namespace tscope::cli {

std::set<std::string> withAblationFlags(std::set<std::string> flags) {
  flags.insert({"ablate", "ablate-mode", "patch-source"});
  return flags;
}

namespace {

AblationKind kindFromName(const std::string& name) {
  AblationKind kind;
  if (!ablationKindFromName(name, kind)) throw UsageError("--ablate-mode must be zero, mean or patch (got '" + name + "')");
  return kind;
}

}  // namespace

Ablation parseAblation(const Args& args, const LoadedModel& model) {
  Ablation ablation;
  if (!args.has("ablate")) {
    for (const char* flag : {"ablate-mode", "patch-source"})
      if (args.has(flag)) throw UsageError(std::string("--") + flag + " needs --ablate");
    return ablation;
  }
  ablation.text = args.str("ablate");
  ablation.kind = kindFromName(args.str("ablate-mode", "zero"));
  const bool patch = ablation.kind == AblationKind::Patch;
  if (patch && !args.has("patch-source")) throw UsageError("--ablate-mode patch needs --patch-source TEXT (the prompt to patch from)");
  if (!patch && args.has("patch-source")) throw UsageError("--patch-source is only for --ablate-mode patch");
  if (ablation.text.empty()) throw UsageError("--ablate needs at least one L.H or L.mlp (e.g. --ablate 1.0,1.mlp)");
  const ModelConfig& config = model.weights.config();
  try {
    ablation.specs = parseInterventions(ablation.text, ablation.kind, config);
  } catch (const Error& e) {
    throw Error(std::string("--ablate: ") + e.what());
  }
  if (ablation.specs.empty()) throw UsageError("--ablate needs at least one L.H or L.mlp (got '" + ablation.text + "')");
  if (patch) {
    ablation.sourceIds = requireTokenizer(model).encode(args.str("patch-source"));
    if (ablation.sourceIds.empty()) throw Error("the --patch-source prompt is empty (no tokens): give some text");
    const size_t context = static_cast<size_t>(config.n_positions);
    if (ablation.sourceIds.size() > context) {  // patches copy positions 0.. of the prompt: keep the first n_ctx
      std::fprintf(stderr, "tscope-cli: the --patch-source prompt is %zu tokens but the model's context holds %zu: using the first %zu\n",
                   ablation.sourceIds.size(), context, context);
      ablation.sourceIds.resize(context);
    }
  }
  return ablation;
}

json applyAblation(const Ablation& ablation, Transformer& transformer, std::span<const int> promptIds) {
  transformer.setInterventions(resolveInterventions(transformer, ablation.specs, promptIds, ablation.sourceIds));
  json items = json::array();
  for (const InterventionSpec& spec : ablation.specs) {
    items.push_back({{"layer", spec.layer}, {"head", spec.isMlp() ? json("mlp") : json(spec.head)}});
    if (spec.cross) items.back()["cross"] = true;
  }
  json out = {{"ablate", formatInterventions(ablation.specs)}, {"mode", ablationKindName(ablation.kind)}, {"items", items}};
  if (ablation.kind == AblationKind::Patch) out["source_ids"] = ablation.sourceIds;
  return out;
}

}  // namespace tscope::cli

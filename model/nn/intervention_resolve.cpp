// resolveInterventions (intervention.h): the replacement values of mean ablations and patches,
// from clean runs of the prompt and of the source prompt through the model.
#include <algorithm>

#include "model/core/error.h"
#include "model/nn/intervention.h"
#include "model/nn/transformer.h"

namespace tscope {

namespace {

// A clean run of `ids` keeping every layer's components only.
Trace componentsOf(Transformer& model, std::span<const int> ids) {
  TraceOptions options = TraceOptions::nothing();
  options.components = true;
  Trace trace;
  model.logitsFor(ids, &trace, options);
  return trace;
}

}  // namespace

Interventions resolveInterventions(Transformer& model, const std::vector<InterventionSpec>& specs, std::span<const int> promptIds,
                                   std::span<const int> sourceIds) {
  const ModelConfig& config = model.config();
  const int C = config.n_embd, A = config.attnDim(), D = config.headDim();
  Interventions out;
  for (const InterventionSpec& spec : specs)
    if (std::string problem = interventionProblem(spec, config); !problem.empty()) throw Error("intervention " + problem);
  const bool needMean = usesKind(specs, AblationKind::Mean), needPatch = usesKind(specs, AblationKind::Patch);
  if (needMean && promptIds.empty()) throw Error("mean ablation needs a prompt to average over");
  if (needPatch && sourceIds.empty()) throw Error("patching needs a source prompt: type the second prompt to take the values from");
  // The clean runs, without the model's current interventions.
  Interventions current = model.interventions();
  model.setInterventions({});
  Trace prompt, source;
  try {
    if (needMean) prompt = componentsOf(model, promptIds);
    if (needPatch) source = componentsOf(model, sourceIds);
  } catch (...) {
    model.setInterventions(std::move(current));
    throw;
  }
  model.setInterventions(std::move(current));

  for (const InterventionSpec& spec : specs) {
    Interventions::Edit e;
    e.spec = spec;
    e.width = spec.isMlp() ? C : D;
    const int column = spec.isMlp() ? 0 : spec.head * D;
    auto rowsOf = [&](const Trace& t) {  // (T, width): this component's rows of a clean run
      const std::vector<float>& all = spec.isMlp() ? t.mlpOut : spec.cross ? t.crossMix : t.headMix;
      std::vector<float> rows((size_t)t.T * e.width);
      for (int r = 0; r < t.T; ++r)
        std::copy_n(all.data() + ((size_t)spec.layer * t.T + r) * (spec.isMlp() ? C : A) + column, e.width, rows.data() + (size_t)r * e.width);
      return rows;
    };
    if (spec.kind == AblationKind::Mean) {
      const std::vector<float> rows = rowsOf(prompt);
      e.values.assign(e.width, 0.0f);
      for (int w = 0; w < e.width; ++w) {
        double sum = 0;
        for (int r = 0; r < prompt.T; ++r) sum += rows[(size_t)r * e.width + w];
        e.values[w] = static_cast<float>(sum / prompt.T);
      }
    } else if (spec.kind == AblationKind::Patch) {
      e.values = rowsOf(source);
      e.positions = source.T;
    }
    out.edits.push_back(std::move(e));
  }
  return out;
}

}  // namespace tscope

// Interventions in the session (the Inside-the-block panel's toggles): resolved on the worker from
// the request's specs (means over the prompt, patches from the source prompt) and set on the
// model for every forward of the request; the prompt's clean logits for the before / after view.
#include <algorithm>

#include "app/session/session.h"
#include "model/core/error.h"

namespace tscope::gui {

void Session::applyInterventions(const Request& request, std::span<const int> ids, Snapshot& snapshot) {
  if (request.interventions.empty()) {
    transformer_->setInterventions({});
    return;
  }
  InterventionKey key;
  key.specs = request.interventions;
  if (usesKind(key.specs, AblationKind::Mean)) key.meanIds.assign(ids.begin(), ids.end());
  if (usesKind(key.specs, AblationKind::Patch)) {
    key.sourceIds = model_.tokenizer->encode(request.patchSource);
    // Positions past the context cannot be patched: keep the source's first n_positions tokens.
    key.sourceIds.resize(std::min<size_t>(key.sourceIds.size(), config().n_positions));
    snapshot.patchSourceIds = key.sourceIds;
  }
  if (!(key == resolvedKey_) || resolved_.empty()) {
    transformer_->setInterventions({});  // a failed resolution leaves none set, not stale ones
    resolved_ = resolveInterventions(*transformer_, key.specs, key.meanIds, key.sourceIds);
    resolvedKey_ = std::move(key);
  }
  transformer_->setInterventions(resolved_);
}

std::vector<float> Session::cleanLogits(std::span<const int> ids) {
  Interventions active = transformer_->interventions();
  transformer_->setInterventions({});
  try {
    std::vector<float> logits = clean_->run(ids, TraceOptions::nothing()).logits;
    transformer_->setInterventions(std::move(active));
    return logits;
  } catch (...) {
    transformer_->setInterventions(std::move(active));
    throw;
  }
}

}  // namespace tscope::gui

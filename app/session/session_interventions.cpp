// Interventions in the session (the Inside-the-block panel's toggles): resolved on the worker from
// the request's specs (means over the prompt, patches from the source prompt) and set on the
// model for every forward of the request; the prompt's clean logits for the before / after view;
// and the Efficient-attention panel's variant logits (the prompt once more with a variant).
#include <algorithm>

#include "app/session/session.h"
#include "model/core/error.h"

namespace tscope::session {

void Session::applyInterventions(const Request& request, std::span<const int> ids, Snapshot& snapshot) {
  if (request.interventions.empty()) {
    transformer_->setInterventions({});
    return;
  }
  InterventionKey key;
  key.specs = request.interventions;
  if (usesKind(key.specs, AblationKind::Mean)) key.meanIds.assign(ids.begin(), ids.end());
  if (usesKind(key.specs, AblationKind::Patch)) {
    key.sourceIds = tokenizer_->encode(request.patchSource);
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

namespace {

// `run`'s logits with the model's interventions taken off for the call (put back however it ends).
template <class Run>
std::vector<float> withoutInterventions(Transformer& model, Run&& run) {
  Interventions active = model.interventions();
  model.setInterventions({});
  try {
    std::vector<float> logits = run();
    model.setInterventions(std::move(active));
    return logits;
  } catch (...) {
    model.setInterventions(std::move(active));
    throw;
  }
}

}  // namespace

std::vector<float> Session::cleanLogits(std::span<const int> ids) {
  return withoutInterventions(*transformer_, [&] { return clean_->run(ids, TraceOptions::nothing()).logits; });
}

std::vector<float> Session::cleanLogits(std::span<const float> image) {
  return withoutInterventions(*transformer_, [&] { return clean_->runImage(image, TraceOptions::nothing()).logits; });
}

// The Efficient-attention panel's "after": the prompt once more with the variant in place of exact
// attention (with the same interventions). A bad knob or layer is a note, not an error: the panel
// still shows the exact model.
void Session::variantLogits(const Request& request, Snapshot& snapshot) {
  const AttentionVariantParams& params = *request.attentionVariant;
  const int n = static_cast<int>(snapshot.ids.size()), L = config().n_layer;
  if (request.variantLayer < -1 || request.variantLayer >= L) {
    snapshot.variantNote = "layer " + std::to_string(request.variantLayer) + " is outside 0.." + std::to_string(L - 1);
    return;
  }
  if (std::string problem = attentionVariantProblem(params, n); !problem.empty()) {
    snapshot.variantNote = std::move(problem);
    return;
  }
  transformer_->setAttentionVariant(params, request.variantLayer);
  try {
    snapshot.variantLogits = variant_->run(snapshot.ids, TraceOptions::nothing()).logits;
  } catch (const Cancelled&) {
    transformer_->setAttentionVariant(std::nullopt);
    throw;
  } catch (const std::exception& e) {
    snapshot.variantNote = e.what();
  }
  transformer_->setAttentionVariant(std::nullopt);
}

}  // namespace tscope::session

// Image models in the session (docs/VISION.md): the request's image through the model as a prompt's
// tokens go through a text model, so the Attention, Inside and Residual panels show patches as
// tokens; the class probabilities are the sampling stages' distribution.
#include <algorithm>

#include "app/session/session.h"
#include "model/core/error.h"
#include "model/nn/vision_views.h"

namespace tscope::session {

void Session::imageForward(const Request& request, Snapshot& snapshot) {
  const ModelConfig& c = config();
  if (request.image.empty()) throw Error("an image model reads a picture: draw a digit or open an image in the Vision panel");
  if (usesKind(request.interventions, AblationKind::Mean) || usesKind(request.interventions, AblationKind::Patch))
    throw Error("an image model takes zero ablations of heads and MLPs (mean and patch ablations read a text prompt)");
  if (request.whatIfs.has(WhatIfKind::Shuffle))
    throw Error("the shuffle what-if reorders a prompt's tokens: mask patches in the Vision panel instead");
  const std::vector<float> pixels = maskImagePatches(c, request.image, request.maskedPatches);  // checks the image's size
  snapshot.ids = imageTokenIds(c);
  snapshot.tokenText = imageTokenLabels(c);
  const int T = static_cast<int>(snapshot.ids.size());
  setStage(ComputeProgress::Stage::Forward);
  applyInterventions(request, snapshot.ids, snapshot);
  transformer_->setWhatIfs(request.whatIfs);
  TraceOptions options = sessionTraceOptions(c, T);
  options.focusLayer = request.focusLayer;
  options.memoryCapBytes = request.mapMemoryBytes;
  options.components = request.components;
  if (request.inspectLayer >= 0 && request.inspectLayer < c.n_layer) options.internalLayers = {request.inspectLayer};
  if (request.inspectRow >= 0) options.componentRows = {std::min(request.inspectRow, T - 1)};
  PromptForward prompt = prompt_->runImage(pixels, options);
  // The before: the whole picture, no ablation.
  if (!transformer_->interventions().empty() || !request.maskedPatches.empty())
    snapshot.cleanLogits = cleanLogits(std::span<const float>(request.image));
  focusMaps(request, prompt.trace, snapshot);
  std::vector<float>().swap(prompt.trace.attnInputs);
  snapshot.trace = std::move(prompt.trace);
  snapshot.attention = std::move(prompt.attention);
  snapshot.forwardMs = snapshot.trace.forwardMs;
  snapshot.tokensPerSecond = T / (snapshot.forwardMs / 1e3);
  samplingStage(request, prompt.logits, snapshot, 0);
}

}  // namespace tscope::session

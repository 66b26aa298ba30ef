// The worker thread behind the UI: tokenize, the prompt's forward with its trace (reusing the
// unchanged prefix), the sampling stages, and optional beam search and KV-cache timing, published
// as one immutable Snapshot. Every forward reports its layers and stops when a newer request waits.
#include "app/session/session.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "model/select/backend_select.h"
#include "model/nn/trace_views.h"
#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/core/units.h"
#include "model/generate/generate.h"

namespace tscope::session {

namespace {
std::atomic<uint64_t> sessionsMade{0};
}  // namespace

Session::Session(LoadedModel model, const std::string& backendName)
    : serial_(++sessionsMade), model_(std::move(model)), tokenizer_(std::move(model_.tokenizer)), backendChoice_(backendName) {
  // Leave one core to the UI thread (and the GL driver) so frames stay smooth while the model runs.
  const int cores = makeCpuBackend()->threadCount();
  backend_ = makeBackend(backendName, std::max(1, cores - 1), &backendNote_);
  transformer_ = std::make_unique<Transformer>(model_.weights, *backend_);
  transformer_->setLayerCallback([this](int done, int layers) {
    worker_.setProgress(done, layers);
    return !worker_.cancelToken().cancelled();
  });
  if (config().masked_lm && tokenizer_) maskedTokens_ = findMaskedLmTokens(*tokenizer_);
  prompt_ = std::make_unique<IncrementalForward>(*transformer_);
  clean_ = std::make_unique<IncrementalForward>(*transformer_);
  variant_ = std::make_unique<IncrementalForward>(*transformer_);
  worker_.start({[this](Request& request) { run(request); },
                 {},
                 [this](const std::string&) { setStage(ComputeProgress::Stage::Idle); }});  // no snapshot: the next request tries again
}

int Session::stopId() const {
  if (config().isEncoderDecoder()) return config().eos_token_id;
  return tokenizer_ ? tokenizer_->eotId() : -1;
}

void Session::encodeSource(const Request& request, Snapshot& snapshot) {
  const ModelConfig& c = config();
  if (!c.isEncoderDecoder()) return;
  ContextFit fit = fitToContext(tokenizer_->encode(request.source), c.n_positions);
  if (fit.kept.empty()) throw Error("the source is empty: type the text to translate");
  if (!encodedSource_ || *encodedSource_ != fit.kept) {
    auto encoder = std::make_shared<EncoderTrace>();
    encodedSource_.reset();  // until the encode below succeeds
    transformer_->encode(fit.kept, encoder.get());
    encodedSource_ = fit.kept;
    encodedDropped_ = fit.dropped.size();
    encoder_ = std::move(encoder);
    // Everything the decoder kept was computed against the old source.
    prompt_->reset();
    clean_->reset();
    variant_->reset();
    generation_.reset();
  }
  snapshot.sourceIds = *encodedSource_;
  snapshot.sourceText.clear();
  for (int id : snapshot.sourceIds) snapshot.sourceText.push_back(tokenizer_->tokenText(id));
  snapshot.droppedSourceTokens = encodedDropped_;
  snapshot.encoder = encoder_;
}

std::string Session::backendDescription() const {
  if (backend_->name() == "cuda") return backendNote_.empty() ? "CUDA" : backendNote_;
  const int threads = backend_->threadCount();
  std::string why = "CPU chosen";
  if (backendNote_.rfind("CPU: ", 0) == 0) why = backendNote_.substr(5);                                // "no CUDA device (...)"
  else if (backendNote_.rfind("CPU (", 0) == 0) why = backendNote_.substr(5, backendNote_.size() - 6);  // "no CUDA in this build"
  return "CPU (Eigen, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + "; " + why + ")";
}

Session::~Session() = default;  // worker_ goes first: it cancels the running request and joins

ViewNeeds panelNeeds(const AppState& state, const ModelConfig& config) {
  ViewNeeds needs;
  needs.focusLayer = std::clamp(state.layer, 0, config.n_layer - 1);
  needs.mapMemoryBytes = (size_t)std::clamp(state.mapMemoryMiB, Preferences::kMinMapMemoryMiB, Preferences::kMaxMapMemoryMiB) << 20;
  const PanelInfo& panel = panelInfo(state.panel);
  // A panel that needs the components inspects its query row (the last token when none is
  // selected: the largest row); one that needs a layer's q, k, v reads every row; others need none.
  needs.components = panel.has(kNeedsComponents);
  if (panel.has(kNeedsComponents)) {
    needs.inspectLayer = state.layer;
    needs.inspectRow = state.token < 0 ? std::numeric_limits<int>::max() : state.token;
  } else if (panel.has(kNeedsLayerQkv)) {
    needs.inspectLayer = state.layer;
  }
  if (panel.has(kNeedsVariant)) {
    needs.attentionVariant = state.attentionVariant;
    needs.variantLayer = state.variantAllLayers ? -1 : state.layer;
  }
  return needs;
}

Request requestFor(const AppState& state, const ModelConfig& config) {
  Request request;
  static_cast<ModelInputs&>(request) = state;
  static_cast<SessionScratch&>(request) = state;
  static_cast<ViewNeeds&>(request) = panelNeeds(state, config);
  return request;
}

std::optional<MoeRoutingParams> moeRoutingFor(const ModelConfig& config, const ForwardInputs& inputs) {
  if (!config.isMoe()) return std::nullopt;
  MoeRoutingParams moe = moeRoutingParams(config);
  if (inputs.moeTopK > 0) moe.topK = inputs.moeTopK;
  if (inputs.moeCapacityFactor >= 0) moe.capacityFactor = inputs.moeCapacityFactor;
  moe.expertChoice = inputs.moeExpertChoice;
  return moe;
}

void Session::post(Request request) {
  if (request.generateTokens > 0) stopGeneration_ = false;  // a Stop pressed earlier is not for this one
  worker_.post(std::move(request));
}

void Session::run(const Request& request) {
  auto snapshot = compute(request, computed_ + 1);
  setStage(ComputeProgress::Stage::Idle);
  if (!snapshot) return;  // a newer request stopped it: that one is next
  ++computed_;
  lastComputed_ = snapshot;
  worker_.publish(std::move(snapshot));
}

const char* ComputeProgress::stageName() const {
  switch (stage) {
    case Stage::Idle: return "idle";
    case Stage::Forward: return "forward";
    case Stage::BeamSearch: return "beam search";
    case Stage::KvCacheTiming: return "KV-cache timing";
  }
  return "";
}

ComputeProgress Session::progress() const {
  ComputeProgress p;
  p.stage = static_cast<ComputeProgress::Stage>(stage_.load());
  const WorkProgress layers = worker_.progress();
  p.layersDone = layers.done;
  p.layers = layers.total;
  return p;
}

void Session::setStage(ComputeProgress::Stage stage) {
  worker_.setProgress(0, worker_.progress().total);
  stage_ = static_cast<int>(stage);
}

std::optional<Snapshot::LayerMaps> Snapshot::maps(int layer) const {
  if (const std::optional<int> index = trace.capturedIndex(layer); index && !attention.empty()) return LayerMaps{&attention, *index};
  if (layer == focusLayer && !focusAttention.empty()) return LayerMaps{&focusAttention, 0};
  return std::nullopt;
}

std::string Snapshot::mapsMissing(int layer) const {
  if (maps(layer)) return "";
  if (!error.empty()) return error;
  if (layer < 0 || layer >= trace.L) return "layer " + std::to_string(layer) + " is outside this model's 0.." + std::to_string(trace.L - 1);
  const size_t one = layerMapBytes(trace.H, trace.T, trace.Tk);
  if (one > request.mapMemoryBytes)
    return "layer " + std::to_string(layer) + "'s maps at " + std::to_string(trace.T) + " tokens take " + formatBytes(one) +
           ", over the map memory cap of " + formatBytes(request.mapMemoryBytes) + " (raise it in the Attention panel)";
  return "layer " + std::to_string(layer) + "'s maps are being computed";
}

// The focus layer's maps when the cap left them out of the prompt's trace: computed alone from its
// kept attention inputs (the same attention call as the forward), reused while nothing they
// depend on changed.
void Session::focusMaps(const Request& request, const Trace& trace, Snapshot& snapshot) {
  const int layer = request.focusLayer;
  if (layer < 0 || trace.capturedIndex(layer) || !trace.inputIndex(layer)) return;
  FocusKey key{snapshot.ids, layer, transformer_->interventions(), snapshot.moeRouting, trace.inputLayers};
  if (!(key == focusKey_) || focusMaps_.empty()) {
    focusMaps_.clear();
    focusKey_ = {};
    Trace maps;
    maps.T = maps.Tk = trace.T;
    maps.H = trace.H;
    maps.layers = {layer};
    transformer_->layerMaps(trace, layer, maps.attn, maps.scores);
    focusMaps_.append(maps);
    focusKey_ = std::move(key);
  }
  snapshot.focusAttention = focusMaps_;
  snapshot.focusLayer = layer;
}

const Session::Tokenized& Session::tokenize(const Request& request) {
  if (tokenized_ && tokenized_->prompt == request.prompt && tokenized_->generated == static_cast<const SessionScratch&>(request) &&
      tokenized_->whatIfs == request.whatIfs)
    return *tokenized_;
  tokenized_.reset();  // until this one is done
  Tokenized t{request.prompt, request, request.whatIfs, fitPrompt(promptIds(request)), {}, {}, {}};
  // The shuffle what-if reorders the tokens the model reads (and every panel shows).
  if (request.whatIfs.has(WhatIfKind::Shuffle)) t.fit.kept = applyShuffle(request.whatIfs, t.fit.kept, &t.shuffleOrder);
  for (int id : t.fit.kept) t.tokenText.push_back(tokenizer_->tokenText(id));
  const size_t shownFrom = t.fit.dropped.size() - std::min(t.fit.dropped.size(), Snapshot::kMaxDroppedShown);
  for (size_t i = shownFrom; i < t.fit.dropped.size(); ++i) t.droppedText.push_back(tokenizer_->tokenText(t.fit.dropped[i]));
  return tokenized_.emplace(std::move(t));
}

TraceOptions sessionTraceOptions(const ModelConfig& config, int tokens) {
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 5;
  // Large vocabularies: the lens at every position would dominate the forward.
  options.logitLensLastOnly = (size_t)config.vocab_size * config.n_embd * tokens > (size_t)400'000'000;
  return options;
}

std::shared_ptr<Snapshot> Session::compute(const Request& posted, uint64_t id) {
  if (posted.generateTokens == 0 && lastComputed_ && lastComputed_->error.empty() && sameForward(lastComputed_->request, posted))
    return afterForward(posted, id);
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->id = id;
  if (posted.generateTokens > 0 && config().isImage()) {
    snapshot->request = posted;
    snapshot->error = "an image model classifies a picture: it generates no tokens";
    return snapshot;
  }
  const Request request = posted.generateTokens > 0 ? runGeneration(posted, *snapshot) : posted;  // Step / Generate N first
  snapshot->request = request;
  return runStages(snapshot, [&] {
    const ModelConfig& c = config();
    if (c.isImage()) return imageForward(request, *snapshot);
    if (!tokenizer_) throw Error("this model has no tokenizer: " + model_.tokenizerNote);
    const Tokenized& tokens = tokenize(request);
    snapshot->ids = tokens.fit.kept;
    snapshot->droppedIds = tokens.fit.dropped;
    snapshot->tokenText = tokens.tokenText;
    snapshot->droppedText = tokens.droppedText;
    snapshot->shuffleOrder = tokens.shuffleOrder;
    if (snapshot->ids.empty()) throw Error("the prompt is empty: type some text");
    snapshot->moeRouting = moeRoutingFor(c, request);
    if (snapshot->moeRouting) transformer_->setMoeRouting(*snapshot->moeRouting);
    setStage(ComputeProgress::Stage::Forward);
    encodeSource(request, *snapshot);
    applyInterventions(request, snapshot->ids, *snapshot);
    transformer_->setWhatIfs(request.whatIfs);
    TraceOptions options = sessionTraceOptions(c, (int)snapshot->ids.size());
    options.focusLayer = request.focusLayer;
    options.memoryCapBytes = request.mapMemoryBytes;
    options.components = request.components;
    if (request.inspectLayer >= 0 && request.inspectLayer < c.n_layer) options.internalLayers = {request.inspectLayer};
    if (request.inspectRow >= 0) options.componentRows = {std::min(request.inspectRow, (int)snapshot->ids.size() - 1)};
    PromptForward prompt = prompt_->run(snapshot->ids, options);
    if (!transformer_->interventions().empty()) snapshot->cleanLogits = cleanLogits(snapshot->ids);
    // The prompt's forward keeps the last row's logits; a target is short (at most n_ctx tokens)
    // and runs whole anyway, so one more forward gives every row's.
    if (c.isEncoderDecoder())
      snapshot->targetProbabilities = sequenceTokenProbabilities(transformer_->logitsFor(snapshot->ids), snapshot->ids, c.vocab_size);
    if (c.masked_lm) fillStage(*snapshot);
    if (request.attentionVariant) variantLogits(request, *snapshot);
    focusMaps(request, prompt.trace, *snapshot);
    // Kept by prompt_ for the next focus; the panels read the maps. Released, not cleared: a cleared
    // vector keeps its capacity (tens of MiB on a long prompt) for as long as the snapshot lives.
    std::vector<float>().swap(prompt.trace.attnInputs);
    snapshot->trace = std::move(prompt.trace);
    snapshot->attention = std::move(prompt.attention);
    snapshot->reusedTokens = prompt.reusedTokens;
    snapshot->forwardMs = snapshot->trace.forwardMs;
    snapshot->tokensPerSecond = (snapshot->ids.size() - prompt.reusedTokens) / (snapshot->forwardMs / 1e3);
    snapshot->kvCacheBytes = (size_t)kvCacheBytesPerToken(c, 4) * snapshot->ids.size();
    samplingStage(request, prompt.logits, *snapshot, 0);
    beamStage(request, *snapshot);
    kvTimingStage(request, *snapshot);
  });
}

}  // namespace tscope::session

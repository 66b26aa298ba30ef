// The stages after the prompt's forward: the sampling pipeline, beam search and the KV-cache
// timing. A request that changes only their inputs (a temperature, top-k or top-p drag, the beam
// width) starts from the last snapshot and runs only the stages whose inputs changed.
#include <algorithm>
#include <chrono>

#include "app/session/session.h"
#include "model/core/error.h"

namespace tscope::session {

bool sameForward(const Request& a, const Request& b) {
  return static_cast<const ForwardInputs&>(a) == b && static_cast<const SessionScratch&>(a) == b && static_cast<const ViewNeeds&>(a) == b;
}

std::shared_ptr<Snapshot> Session::afterForward(const Request& request, uint64_t id) {
  const Snapshot& last = *lastComputed_;
  auto snapshot = std::make_shared<Snapshot>(last);  // the maps' rows are shared, not copied
  snapshot->id = id;
  snapshot->request = request;
  snapshot->generation.reset();
  // No forward ran: the status bar says so instead of showing the last one's time.
  snapshot->reusedTokens = static_cast<int>(snapshot->ids.size());
  snapshot->forwardMs = 0;
  snapshot->tokensPerSecond = 0;
  return runStages(snapshot, [&] {
    if (!(request.sampling == last.request.sampling)) {
      const size_t V = static_cast<size_t>(config().vocab_size);  // the trace keeps the last row's logits (or every row's)
      if (last.trace.logits.size() < V) throw Error("the last forward kept no logits to sample from");
      const std::span<const float> rows(last.trace.logits);  // an image model's classes are [CLS]'s row, the first
      samplingStage(request, config().isImage() ? rows.first(V) : rows.last(V), *snapshot, last.id);
    }
    if (request.beamWidth != last.request.beamWidth || request.beamSteps != last.request.beamSteps) {
      snapshot->beam.reset();
      beamStage(request, *snapshot);
    }
    if (request.measureKvCache != last.request.measureKvCache || request.withoutCacheBudgetMs != last.request.withoutCacheBudgetMs) {
      snapshot->kvTiming.reset();
      kvTimingStage(request, *snapshot);
    }
  });
}

void Session::fillStage(Snapshot& snapshot) {
  std::vector<int> masks;
  for (int t = 0; t < static_cast<int>(snapshot.ids.size()); ++t)
    if (snapshot.ids[t] == maskedTokens_.mask) masks.push_back(t);
  // The prompt's forward keeps the last row's logits; a masked text is short (at most n_ctx tokens),
  // so one more forward gives every row's.
  if (!masks.empty())
    snapshot.maskFills = fillFromLogits(transformer_->logitsFor(snapshot.ids), config().vocab_size, masks, maskedTokens_, Snapshot::kFillCandidates);
}

void Session::samplingStage(const Request& request, std::span<const float> logits, Snapshot& snapshot, uint64_t from) {
  if (config().masked_lm) return;  // it predicts no next token: fillStage reads its masks
  if (const char* msg = validateSamplingParams(request.sampling); msg && *msg) throw Error(msg);
  // snapshot.stages is then a copy of exactly what sampling_ describes: it becomes the scratch's.
  const bool reuse = from != 0 && from == samplingFor_;
  samplingFor_ = 0;
  std::swap(sampling_.stages, snapshot.stages);
  try {
    processLogits(logits, request.sampling, sampling_, reuse);
  } catch (...) {
    std::swap(sampling_.stages, snapshot.stages);  // the snapshot keeps the stages it had
    throw;
  }
  std::swap(sampling_.stages, snapshot.stages);
  samplingFor_ = snapshot.id;
}

void Session::beamStage(const Request& request, Snapshot& snapshot) {
  if (request.beamWidth <= 0 || config().masked_lm || config().isImage()) return;
  const int steps = std::min(request.beamSteps, config().n_positions - (int)snapshot.ids.size());
  if (steps <= 0) return;
  setStage(ComputeProgress::Stage::BeamSearch);
  TransformerBeamModel beamModel(*transformer_, 2 * request.beamWidth, (int)snapshot.ids.size() + steps);
  snapshot.beam = beamSearch(beamModel, snapshot.ids, request.beamWidth, steps, stopId());
}

void Session::kvTimingStage(const Request& request, Snapshot& snapshot) {
  if (!request.measureKvCache || config().masked_lm || config().isImage()) return;
  // The first new token comes from the prompt's forward; the decode steps after it are timed,
  // so there must be room for two. A full context gives a timing of no tokens (the panel says why).
  const ModelConfig& c = config();
  const int steps = std::min(16, c.n_positions - (int)snapshot.ids.size());
  KvCacheTiming timing;
  if (steps >= 2) {
    setStage(ComputeProgress::Stage::KvCacheTiming);
    SamplingParams greedy;
    greedy.greedy = true;
    const auto withCache = generate(*transformer_, snapshot.ids, steps, greedy);
    timing.tokens = withCache.decodeSteps;
    timing.withCacheMsPerToken = withCache.decodeMs / std::max(1, withCache.decodeSteps);
    // Without a cache every new token reruns the whole sequence: the same tokens, as many as
    // the time budget allows (at least one).
    std::vector<int> sequence = snapshot.ids;
    const auto t0 = std::chrono::steady_clock::now();
    double ms = 0;
    for (int i = 0; i + 1 < (int)withCache.ids.size() && (i == 0 || ms < request.withoutCacheBudgetMs); ++i) {
      sequence.push_back(withCache.ids[i]);
      transformer_->logitsFor(sequence);
      ++timing.withoutCacheTokens;
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    timing.withoutCacheMsPerToken = ms / std::max(1, timing.withoutCacheTokens);
  }
  snapshot.kvTiming = timing;
}

}  // namespace tscope::session

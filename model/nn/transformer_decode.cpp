// Decoding by recorded steps (transformer.h): one decode step issued as backend ops that read the
// token and position from the backend's step state, recorded once (a CUDA graph) and replayed per
// token. Split from transformer.cpp.
#include <algorithm>
#include <vector>

#include "model/core/error.h"
#include "model/nn/transformer.h"

namespace tscope {

bool Transformer::canRecordSteps() const {
  return backend_->canRecordSteps() && !config_.isMoe() && !config_.isEncoderDecoder() && !config_.hasTokenTypes() && !config_.isImage() &&
         interventions_.empty() && !variant_ && !whatIfs_.changeForward() && !config_.hasVariantAttention();
}

// One decode step as backend ops reading the token and position from the backend's step state:
// the same blocks as forward(), then the unembedding and the sampler. Recorded once per cache and
// sampling setting, replayed per token.
void Transformer::issueStep(KVCache& cache, const SamplingParams& params) {
  const int C = config_.n_embd, V = config_.vocab_size;
  AttentionShape shape = attentionShape(1, cache.capacity() - 1, cache);
  shape.stepPosition = true;
  backend_->embedStep(residual_.data(), wte_, positions_, C);
  if (config_.embedding_norm) block_.embeddingNorm(residual_.data(), normed_.data(), lnEmbWeight_, lnEmbBias_, 1);
  const bool finalNormed = runBlocks(1, shape, cache, nullptr, TraceOptions::nothing(), nullptr);
  const float* finalIn = block_.unembeddingInput(residual_.data(), normed_.data(), finalNormed, lnfWeight_, lnfBias_, 1, head_, headScratch_.data());
  block_.logits(logitsBuf_.data(), finalIn, unembedding_, unembeddingPacked_, head_, 1);
  backend_->sampleStep(logitsBuf_.data(), V, params);
}

std::vector<int> Transformer::decodeRecorded(KVCache& cache, int token, int count, const SamplingParams& params, Rng& rng, int stopId) {
  if (!canRecordSteps()) throw Error("decode steps cannot be recorded with the " + backend_->name() + " backend for this model");
  if (const char* problem = validateSamplingParams(params); *problem) throw Error(problem);
  const int V = config_.vocab_size;
  if (token < 0 || token >= V) throw Error("token id " + std::to_string(token) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  count = std::min(count, cache.capacity() - cache.length());
  std::vector<int> sampled;
  if (count <= 0) return sampled;
  ensureScratch(1);
  // The recording bakes in the cache's memory, the sampling settings and the buffers: record again
  // when any of them changed. The first step then runs unrecorded (it sizes every scratch area the
  // recording will use, since nothing may grow while recording) and is a real step.
  RecordedStep key{cache.keys(0), cache.values(0), cache.capacity(),   params.temperature,        params.topK,
                   params.topP,   params.greedy,   scratchGeneration_, backend_->recordingCount()};
  backend_->setStep(token, cache.length(), rng);
  if (!(recorded_ == key)) {
    recorded_ = RecordedStep{};
    issueStep(cache, params);
    const int first = backend_->stepResult(&rng);
    cache.advance(1);
    sampled.push_back(first);
    if (first == stopId || count == 1) return sampled;
    backend_->beginRecording();
    try {
      issueStep(cache, params);
    } catch (...) {
      try {
        backend_->endRecording();
      } catch (...) {  // the first error is the one to report
      }
      throw;
    }
    backend_->endRecording();
    key.backendRecording = backend_->recordingCount();
    recorded_ = key;
  }
  sampled.reserve(count);
  while (static_cast<int>(sampled.size()) < count) {
    const int next = backend_->replayStep(&rng);
    cache.advance(1);
    sampled.push_back(next);
    if (next == stopId) break;
  }
  return sampled;
}

}  // namespace tscope

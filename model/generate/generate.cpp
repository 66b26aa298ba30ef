// Decoding over the transformer: a Generation continued a few tokens at a time (the host loop, or
// the backend's recorded steps), generate() as one Generation, and the beam-search slots.
#include "model/generate/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

const char* generationStopName(GenerationStop stop) {
  switch (stop) {
    case GenerationStop::EndOfText: return "end_of_text";
    case GenerationStop::ContextFull: return "context_full";
    default: return "none";
  }
}

std::string continuationProblem(const ModelConfig& config) {
  if (!config.masked_lm) return "";
  return "this is a masked language model: it reads the whole text at once and fills in [MASK]s, it does not continue a text "
         "(use tscope-cli fill, or the Fill in the blank panel)";
}

namespace {

std::vector<int> checkedPrompt(const Transformer& model, std::span<const int> prompt, const SamplingParams& params) {
  if (std::string problem = continuationProblem(model.config()); !problem.empty()) throw Error(problem);
  if (const char* msg = validateSamplingParams(params); msg && *msg) throw Error(msg);
  if (prompt.empty()) throw Error("the prompt is empty (no tokens)");
  const int context = model.config().n_positions, V = model.config().vocab_size;
  if (static_cast<int>(prompt.size()) > context)
    throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds at most " + std::to_string(context));
  for (int id : prompt)
    if (id < 0 || id >= V) throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  return {prompt.begin(), prompt.end()};
}

// The cache holds the prompt and at most the context; 0 (or anything larger) means the context.
int cacheCapacity(const Transformer& model, size_t promptTokens, int capacity) {
  const int context = model.config().n_positions;
  if (capacity <= 0 || capacity > context) return context;
  return std::max(capacity, static_cast<int>(promptTokens));
}

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

Generation::Generation(Transformer& model, std::span<const int> prompt, const SamplingParams& params, int stopId, int capacity)
    : model_(model),
      params_(params),
      stopId_(stopId),
      prompt_(checkedPrompt(model, prompt, params)),
      cache_(model.backend(), model.config(), cacheCapacity(model, prompt.size(), capacity)),
      rng_(params.seed) {
  const auto t0 = Clock::now();
  model_.forward(prompt_, cache_, logits_, false);
  prefillMs_ = msSince(t0);
  logitsFresh_ = true;
  updateStop();
}

void Generation::updateStop() {
  if (!ids_.empty() && ids_.back() == stopId_) stopped_ = GenerationStop::EndOfText;
  else if (prompt_.size() + ids_.size() >= static_cast<size_t>(model_.config().n_positions)) stopped_ = GenerationStop::ContextFull;
}

void Generation::drawFromHostLogits() {
  const int token = sampleNext(logits_, params_, rng_, scratch_);
  if (params_.greedy) {
    lastProbability_ = static_cast<float>(softmaxNorm(logits_).probability(logits_[token]));  // token: the argmax
  } else {
    const std::vector<float>& final = scratch_.stages.afterTopP;
    lastProbability_ = static_cast<size_t>(token) < final.size() ? final[token] : std::nanf("");
  }
  ids_.push_back(token);
  logitsFresh_ = false;
}

int Generation::next(int count) {
  if (count < 0) throw Error("the number of tokens to generate must be >= 0 (got " + std::to_string(count) + ")");
  const auto t0 = Clock::now();
  const int context = model_.config().n_positions;
  bool recorded = false;
  int drawn = 0;
  while (drawn < count && stopped_ == GenerationStop::None) {
    if (!logitsFresh_) {
      // Feed the newest token: the cache then holds everything drawn so far.
      if (cache_.length() >= cache_.capacity()) break;  // a cache smaller than the context is full
      if (model_.canRecordSteps()) {
        // The backend feeds, samples and repeats (CUDA graphs): the same tokens, one wait each.
        const int room = context - static_cast<int>(prompt_.size() + ids_.size());
        const std::vector<int> more = model_.decodeRecorded(cache_, ids_.back(), std::min(count - drawn, room), params_, rng_, stopId_);
        recorded = true;
        if (more.empty()) break;
        ids_.insert(ids_.end(), more.begin(), more.end());
        drawn += static_cast<int>(more.size());
        decodeSteps_ += static_cast<int>(more.size());
        lastProbability_ = std::nanf("");
        updateStop();
        continue;
      }
      const int newest[1] = {ids_.back()};
      model_.forward(newest, cache_, logits_, false);
      ++decodeSteps_;
      logitsFresh_ = true;
    }
    drawFromHostLogits();
    ++drawn;
    updateStop();
  }
  if (recorded) model_.backend().sync();
  decodeMs_ += msSince(t0);
  return drawn;
}

GenerationResult generate(Transformer& model, std::span<const int> prompt, int maxNew, const SamplingParams& params, int stopId) {
  if (maxNew < 0) throw Error("max-new must be >= 0");
  Generation generation(model, prompt, params, stopId, static_cast<int>(std::min<size_t>(prompt.size() + maxNew, 1u << 30)));
  generation.next(maxNew);
  GenerationResult result;
  result.ids = generation.ids();
  result.prefillMs = generation.prefillMs();
  result.decodeMs = generation.decodeMs();
  result.decodeSteps = generation.decodeSteps();
  result.stopped = generation.stopped();
  return result;
}

TransformerBeamModel::TransformerBeamModel(Transformer& model, int slots, int capacity) : model_(model) {
  for (int i = 0; i < slots; ++i) caches_.push_back(std::make_unique<KVCache>(model.backend(), model.config(), capacity));
}

int TransformerBeamModel::vocabSize() const { return model_.config().vocab_size; }

void TransformerBeamModel::copySlot(int from, int to) {
  if (from != to) caches_.at(to)->copyFrom(*caches_.at(from));
}

void TransformerBeamModel::feed(int slot, std::span<const int> tokens, std::vector<float>& logits) {
  model_.forward(tokens, *caches_.at(slot), logits, false);
}

}  // namespace tscope

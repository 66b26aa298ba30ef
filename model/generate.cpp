// Decoding loops over the transformer (sampling and the beam-search slots).
#include "model/generate.h"

#include <algorithm>
#include <chrono>

#include "model/error.h"

namespace tscope {

ContextFit fitToContext(std::vector<int> ids, int context) {
  ContextFit fit;
  const size_t keep = std::min(ids.size(), static_cast<size_t>(std::max(0, context)));
  fit.dropped.assign(ids.begin(), ids.end() - keep);
  ids.erase(ids.begin(), ids.end() - keep);
  fit.kept = std::move(ids);
  return fit;
}

GenerationResult generate(Transformer& model, std::span<const int> prompt, int maxNew, const SamplingParams& params, int stopId) {
  if (const char* msg = validateSamplingParams(params); msg && *msg) throw Error(msg);
  if (maxNew < 0) throw Error("max-new must be >= 0");
  if (prompt.empty()) throw Error("the prompt is empty (no tokens)");
  const int context = model.config().n_positions;
  if (static_cast<int>(prompt.size()) > context)
    throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds at most " + std::to_string(context));
  KVCache cache(model.backend(), model.config(), std::min<int>(context, static_cast<int>(prompt.size()) + maxNew));
  Rng rng(params.seed);
  GenerationResult result;
  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  model.forward(prompt, cache, logits, false);
  auto t1 = std::chrono::steady_clock::now();
  result.prefillMs = std::chrono::duration<double, std::milli>(t1 - t0).count();
  result.ids.reserve(maxNew);
  if (model.canRecordSteps() && maxNew > 1 && cache.length() < cache.capacity()) {
    // The backend samples and replays recorded steps (CUDA graphs): the same tokens, one wait each.
    const int first = sampleNext(logits, params, rng);
    result.ids.push_back(first);
    if (first != stopId) {
      const std::vector<int> rest = model.decodeRecorded(cache, first, maxNew - 1, params, rng, stopId);
      result.ids.insert(result.ids.end(), rest.begin(), rest.end());
      result.decodeSteps = static_cast<int>(rest.size());
    }
    model.backend().sync();
    result.decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    return result;
  }
  for (int step = 0; step < maxNew; ++step) {
    const int next = sampleNext(logits, params, rng);
    result.ids.push_back(next);
    if (next == stopId || step + 1 == maxNew || cache.length() >= cache.capacity()) break;
    const int one[1] = {next};
    model.forward(one, cache, logits, false);
    ++result.decodeSteps;
  }
  result.decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
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

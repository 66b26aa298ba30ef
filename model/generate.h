// Text generation on a Transformer: sampled/greedy decoding with the KV cache, and the adapter
// that lets beam search run one KV cache per hypothesis slot.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "model/kv_cache.h"
#include "model/sampling.h"
#include "model/transformer.h"

namespace tscope {

// A prompt longer than the model's context: the app and the CLI run its last `context` tokens and
// report the earlier ones as dropped (one implementation, so both keep the same tokens).
struct ContextFit {
  std::vector<int> kept;     // the last min(T, context) tokens
  std::vector<int> dropped;  // the tokens before them, in order (empty when the prompt fits)
};
ContextFit fitToContext(std::vector<int> ids, int context);

struct GenerationResult {
  std::vector<int> ids;     // the new tokens only
  double prefillMs = 0;     // forward over the prompt
  double decodeMs = 0;      // all decode steps together
  int decodeSteps = 0;
};

// Runs the prompt once, then samples up to maxNew tokens one at a time through the KV cache.
// Stops early at `stopId` (>= 0) or when the context is full. Throws tscope::Error if the prompt
// alone does not fit the context or the parameters are invalid.
GenerationResult generate(Transformer& model, std::span<const int> prompt, int maxNew, const SamplingParams& params, int stopId = -1);

// Beam search's view of a transformer: `slots` KV caches, one per hypothesis.
class TransformerBeamModel : public BeamModel {
 public:
  // Each cache holds `capacity` tokens (0 = the whole context).
  TransformerBeamModel(Transformer& model, int slots, int capacity = 0);
  int vocabSize() const override;
  int slotCount() const override { return static_cast<int>(caches_.size()); }
  void copySlot(int from, int to) override;
  void feed(int slot, std::span<const int> tokens, std::vector<float>& logits) override;

 private:
  Transformer& model_;
  std::vector<std::unique_ptr<KVCache>> caches_;
};

}  // namespace tscope

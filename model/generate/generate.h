// Text generation on a Transformer: sampled/greedy decoding with the KV cache (a Generation that
// can be continued a few tokens at a time, so the app's Step and the CLI draw the same tokens from
// one random stream), and the adapter that lets beam search run one KV cache per hypothesis slot.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/nn/kv_cache.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"

namespace tscope {

// Why a Generation makes no more tokens.
enum class GenerationStop {
  None,         // it can go on
  EndOfText,    // it drew the stop token
  ContextFull,  // prompt + generated tokens fill the model's context
};
const char* generationStopName(GenerationStop stop);  // "none", "end_of_text", "context_full"

// "" when the model continues a text token by token, else one line why not: a masked language
// model (BERT) sees its whole input at once and fills [MASK]s instead.
std::string continuationProblem(const ModelConfig& config);

// One generation: the prompt's KV cache, one random stream Rng(params.seed), and the tokens drawn
// so far. next(a) then next(b) draws exactly the tokens one next(a + b) draws: the cache holds
// every token but the newest, which the next call feeds first. The sequence never outgrows the
// context: prompt + generated tokens <= n_positions (a prompt that fills it gets no new token).
class Generation {
 public:
  // Runs the prompt (1..n_positions tokens). `capacity` bounds the cache (prompt + the tokens that
  // will be asked for; 0 = the whole context). Throws tscope::Error for an empty or too long
  // prompt, an id outside the vocabulary or invalid sampling parameters.
  Generation(Transformer& model, std::span<const int> prompt, const SamplingParams& params, int stopId = -1, int capacity = 0);

  // Draws up to `count` more tokens (fewer at the stop token or a full context) and returns how
  // many it drew. Uses the backend's recorded steps when it has them (the same tokens).
  int next(int count);

  const std::vector<int>& prompt() const { return prompt_; }
  const std::vector<int>& ids() const { return ids_; }  // every token drawn so far
  const SamplingParams& params() const { return params_; }
  GenerationStop stopped() const { return stopped_; }
  // The probability the newest token had in the distribution it was drawn from (greedy: the
  // softmax; sampled: the final stage), or NaN when the backend drew it (recorded steps).
  float lastProbability() const { return lastProbability_; }
  double prefillMs() const { return prefillMs_; }   // forward over the prompt
  double decodeMs() const { return decodeMs_; }     // every next() together
  int decodeSteps() const { return decodeSteps_; }  // single-token forwards so far

 private:
  void drawFromHostLogits();
  void updateStop();

  Transformer& model_;
  SamplingParams params_;
  int stopId_;
  std::vector<int> prompt_;
  std::vector<int> ids_;
  KVCache cache_;  // prompt + every drawn token but the newest
  Rng rng_;
  std::vector<float> logits_;  // (V) after the last token fed, while logitsFresh_
  bool logitsFresh_ = false;
  SamplingScratch scratch_;
  GenerationStop stopped_ = GenerationStop::None;
  float lastProbability_ = 0;
  double prefillMs_ = 0, decodeMs_ = 0;
  int decodeSteps_ = 0;
};

struct GenerationResult {
  std::vector<int> ids;  // the new tokens only
  double prefillMs = 0;  // forward over the prompt
  double decodeMs = 0;   // all decode steps together
  int decodeSteps = 0;
  GenerationStop stopped = GenerationStop::None;  // why it made fewer than maxNew (None: it made them all)
};

// One Generation run for maxNew tokens: stops early at `stopId` (>= 0) or when prompt + new tokens
// fill the context. Throws tscope::Error if the prompt alone does not fit the context or the
// parameters are invalid.
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

// Next-token selection: a logit-processing pipeline whose every stage can be read out
// (softmax of raw logits, after temperature, after top-k, after top-p), seeded sampling, greedy,
// and beam search that keeps the whole tree of expanded hypotheses for display.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/core/rng.h"  // Rng, the seeded generator sampling draws from

namespace tscope {

struct SamplingParams {
  float temperature = 1.0f;  // > 0; ignored when greedy
  int topK = 0;              // 0 = off; else keep the k most probable tokens
  float topP = 1.0f;         // in (0, 1]; 1 = off; keep the smallest set with mass >= p
  bool greedy = false;
  uint64_t seed = 0;
  bool operator==(const SamplingParams&) const = default;
};

// Returns "" if usable, else one line naming the field and the rule.
const char* validateSamplingParams(const SamplingParams& params);

// Probability distributions (V) after each stage of the pipeline. Filtered tokens have
// probability exactly 0; every stage sums to 1.
struct LogitStages {
  std::vector<float> raw;               // softmax(logits)
  std::vector<float> afterTemperature;  // softmax(logits / temperature)
  std::vector<float> afterTopK;         // renormalised over the top k
  std::vector<float> afterTopP;         // renormalised over the nucleus: the final distribution
};
LogitStages processLogits(std::span<const float> logits, const SamplingParams& params);

// Draws one id from a probability vector (must sum to ~1) with one uniform draw.
int sampleFromProbs(std::span<const float> probs, Rng& rng);
int argmax(std::span<const float> values);

// Picks the next token: argmax when greedy, else a draw from processLogits(...).afterTopP.
int sampleNext(std::span<const float> logits, const SamplingParams& params, Rng& rng);

// Reusable buffers so a decode loop can run the pipeline without allocating once they hold V, and
// what they hold for a caller that runs it again on the same logits (a temperature, top-k or top-p
// drag): the stages that knob does not change are kept, and the ids sorted so far stay sorted.
struct SamplingScratch {
  LogitStages stages;
  std::vector<int> order;     // (V) token ids by logit, highest first (only the prefix that was needed)
  size_t sortedCount = 0;     // order[0, sortedCount) is sorted
  bool rawDone = false;       // stages.raw holds softmax(logits) (the logits were checked)
  float temperatureDone = 0;  // stages.afterTemperature holds the softmax at this temperature (0: none)
  int topKDone = -1;          // stages.afterTopK holds the top-k stage of this k after it (-1: none)
};
// sameLogits: the caller passes the logits of scratch's last call again (the stages and the order
// kept from it are reused); false starts afresh. Every stage comes out bit for bit as afresh.
void processLogits(std::span<const float> logits, const SamplingParams& params, SamplingScratch& scratch, bool sameLogits = false);
int sampleNext(std::span<const float> logits, const SamplingParams& params, Rng& rng, SamplingScratch& scratch);

// --- Beam search -------------------------------------------------------------------------------

// What beam search needs from a model: numbered slots, each holding one hypothesis' state
// (for the transformer: its own KV cache). Feeding tokens appends them to a slot's state.
class BeamModel {
 public:
  virtual ~BeamModel() = default;
  virtual int vocabSize() const = 0;
  virtual int slotCount() const = 0;
  // Makes slot `to` an exact copy of slot `from`.
  virtual void copySlot(int from, int to) = 0;
  // Appends `tokens` to slot `slot` and writes the logits (V) that follow the last one.
  virtual void feed(int slot, std::span<const int> tokens, std::vector<float>& logits) = 0;
};

struct BeamNode {
  int parent = -1;         // index into BeamResult::nodes, -1 for the root (the prompt)
  int token = -1;          // token appended at this node (-1 at the root)
  int depth = 0;           // number of generated tokens
  float tokenLogProb = 0;  // log p(token | parent's sequence)
  float logProb = 0;       // cumulative log-probability of the generated tokens
  bool kept = false;       // survived into the beam at its depth
  bool inBest = false;     // lies on the returned best sequence
};

struct BeamResult {
  std::vector<BeamNode> nodes;  // node 0 is the root; every expanded candidate follows
  std::vector<int> bestTokens;  // generated tokens of the best hypothesis
  float bestLogProb = 0;
  std::vector<std::vector<int>> finalBeams;  // the width-B beam at the end, best first
  std::vector<float> finalLogProbs;
};

// Standard beam search over `maxNew` steps keeping `width` hypotheses (the model needs at least
// 2 * width slots). Each step expands every kept hypothesis by its top `width` tokens, records
// all of those candidates in the tree, and keeps the `width` best by cumulative log-probability.
// A hypothesis that emits `eosId` (if >= 0) is finished and stays as it is.
BeamResult beamSearch(BeamModel& model, std::span<const int> prompt, int width, int maxNew, int eosId = -1);

}  // namespace tscope

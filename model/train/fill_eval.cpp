// Held-out fill-in accuracy of a masked LM beside the unigram and left-context baselines (fill_eval.h).
#include "model/train/fill_eval.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "model/core/error.h"
#include "model/core/rng.h"
#include "model/nn/transformer.h"
#include "model/train/masked_lm.h"

namespace tscope {

namespace {

int argmaxSkipping(const float* row, int V, const MaskedLmTokens& specials) {
  int best = -1;
  for (int v = 0; v < V; ++v)
    if (!specials.isSpecial(v) && (best < 0 || row[v] > row[best])) best = v;
  return best;
}

int mostFrequent(const std::vector<int>& ids, int V) {
  std::vector<long> counts(V, 0);
  for (int id : ids) ++counts[id];
  return static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
}

}  // namespace

FillEval evaluateFill(const LoadedModel& masked, const LoadedModel* causal, const TextCorpus& corpus, int maxWindows, uint64_t seed,
                      Backend& backend) {
  const ModelConfig& c = masked.weights.config();
  if (!masked.tokenizer) throw Error(masked.path + ": has no tokenizer");
  const MaskedLmTokens specials = findMaskedLmTokens(*masked.tokenizer);
  if (!c.masked_lm || !specials.complete())
    throw Error(masked.path + ": not a masked language model with [CLS], [SEP] and [MASK] tokens (brown-bert, or a BERT checkpoint)");
  const std::vector<int> held = masked.tokenizer->encode(corpus.validation);
  FillEval eval;
  eval.hasCausal = causal != nullptr;
  if (causal) {
    if (!causal->weights.config().causal || causal->weights.config().masked_lm || causal->weights.config().isEncoderDecoder())
      throw Error(causal->path + ": the baseline must be a causal decoder (it predicts each token from the words before it)");
    if (!causal->tokenizer || causal->tokenizer->encode(corpus.validation) != held)
      throw Error(causal->path + ": its tokenizer cuts the held-out text differently from " + masked.path + "'s, so their tokens cannot be compared");
  }
  eval.unigramId = mostFrequent(masked.tokenizer->encode(corpus.train), c.vocab_size);
  eval.unigramToken = masked.tokenizer->tokenBytes(eval.unigramId);
  const int n = c.n_positions - 2;
  if (causal && causal->weights.config().n_positions < n) throw Error(causal->path + ": its context is shorter than the masked model's windows");
  Transformer maskedModel(masked.weights, backend);
  std::optional<Transformer> causalModel;
  if (causal) causalModel.emplace(causal->weights, backend);
  Rng rng(seed);
  for (size_t start = 0; start + n <= held.size() && eval.windows < maxWindows; start += n, ++eval.windows) {
    const std::vector<int> text(held.begin() + start, held.begin() + start + n);
    std::vector<int> inputs(n + 2), targets(n + 2);
    std::vector<uint8_t> chosen(n + 2);
    maskWindow(text, specials, c.vocab_size, rng, inputs.data(), targets.data(), chosen.data());
    chosen[1] = 0;  // the first token has nothing on its left for the causal model
    for (int t = 2; t <= n; ++t) inputs[t] = chosen[t] ? specials.mask : targets[t];
    if (std::count(chosen.begin(), chosen.end(), 1) == 0) continue;
    const std::vector<float> logits = maskedModel.logitsFor(inputs);
    std::vector<float> next;
    if (causalModel) next = causalModel->logitsFor(text);  // (n, V'): row i predicts text token i + 1
    const int Vc = causal ? causal->weights.config().vocab_size : 0;
    for (int t = 2; t <= n; ++t) {
      if (!chosen[t]) continue;
      ++eval.tokens;
      eval.maskedCorrect += argmaxSkipping(logits.data() + (size_t)t * c.vocab_size, c.vocab_size, specials) == targets[t];
      eval.unigramCorrect += targets[t] == eval.unigramId;
      if (causalModel) eval.causalCorrect += argmaxSkipping(next.data() + (size_t)(t - 2) * Vc, Vc, MaskedLmTokens{}) == targets[t];
    }
  }
  if (eval.tokens == 0) throw Error("the held-out text is shorter than one window of " + std::to_string(n) + " tokens");
  return eval;
}

}  // namespace tscope

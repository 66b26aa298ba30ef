// How well a masked language model fills held-out blanks, beside two baselines (issue #33): the most
// frequent token of the training text (the unigram guess) and a causal model that sees only the
// words to the left (brown-small predicting the same tokens as next tokens). The point of
// bidirectionality, in one number: `tscope-cli fill-eval`, assets/models/README.md.
//
// The held-out text is the validation split training used (brownTextCorpus), encoded with the
// masked model's tokenizer, cut into windows of n_positions - 2 tokens; in each window 15% of the
// positions after the first are chosen (Rng(seed)), every chosen one replaced by [MASK] (no random
// or kept tokens: this is a test, not training), and the masked model's top-1 filler (special tokens
// left out) is compared with the hidden token. The causal model reads the window's tokens before a
// chosen position, unmasked, and its next-token top-1 is compared with the same token.
#pragma once
#include <cstdint>
#include <string>

#include "model/io/model_io.h"
#include "model/nn/backend.h"
#include "model/train/text_source.h"

namespace tscope {

struct FillEval {
  long tokens = 0;  // hidden tokens scored
  int windows = 0;
  long maskedCorrect = 0;   // the masked model's top-1 was the hidden token
  long unigramCorrect = 0;  // the hidden token was the training text's most frequent token
  long causalCorrect = 0;   // the causal model's next-token top-1 was it (when one was given)
  int unigramId = -1;
  std::string unigramToken;
  bool hasCausal = false;
};

// Throws tscope::Error in one line: a model that is not a masked LM, a causal model that is not
// causal or whose tokenizer encodes the text differently, no tokenizer, the corpus missing.
FillEval evaluateFill(const LoadedModel& masked, const LoadedModel* causal, const TextCorpus& corpus, int maxWindows, uint64_t seed,
                      Backend& backend);

}  // namespace tscope

// How well an encoder-decoder model translates spelled-out dates (seq2seq_dates.h) on held-out
// dates it never trained on: exact match of its greedy translation, and where its cross-attention
// looks: the share of target characters whose strongest source position (mean over the heads of a
// decoder layer, or of every layer, teacher forced) lies in the span of the words that character
// comes from. Measured: every character with a span except the century's second digit, which the
// first decides (1 -> 9, 2 -> 0 for 1900-2099), so the decoder has no reason to look for it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/nn/transformer.h"

namespace tscope {

struct DateTranslationScore {
  int examples = 0;
  int exact = 0;                  // greedy translations equal to the target (then the end token)
  std::vector<double> alignment;  // (L) per decoder layer: aligned characters / characters measured
  double alignmentAllLayers = 0;  // the same for the mean over every layer's heads
  int alignedCharacters = 0;      // characters measured, over all examples (the denominator)
  // (L, kDateTargetLength) the same share per target position (-1: not measured: the dashes and the
  // century's second digit).
  std::vector<std::vector<double>> alignmentByPosition;
  std::vector<std::string> wrong;  // up to 5 "source -> output (expected target)" lines
  double exactMatch() const { return examples ? (double)exact / examples : 0; }
  double bestAlignment() const;    // the largest of alignment (0 when empty)
  int bestAlignmentLayer() const;  // its layer (-1 when empty)
};

// `examples` held-out dates drawn from Rng(seed) (randomDateExample(rng, true)). Throws
// tscope::Error when the model is not an encoder-decoder over the dates vocabulary.
DateTranslationScore scoreDateTranslation(Transformer& model, int examples, uint64_t seed);
// Throws tscope::Error (one line) unless `config` is a dates encoder-decoder (scoreDateTranslation's
// requirement, checked before any work).
void requireDatesModel(const ModelConfig& config);

// The greedy translation of `source` (decoded characters, without the start and end tokens): at most
// kDateTargetLength + 1 steps, stopping at the end token.
std::string translateDate(Transformer& model, const std::string& source);

}  // namespace tscope

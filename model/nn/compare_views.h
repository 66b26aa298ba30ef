// Two forwards side by side (the Compare panel, tscope-cli compare-forward): the divergence of
// their next-token distributions, each head's attention entropy and its distance to the two
// patterns a lecturer points at (previous token, first token), and the difference of two maps,
// directly when the two sides have as many tokens, or aligned by character spans when two
// tokenizers cut the same text differently.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/nn/trace.h"

namespace tscope {

// KL(P || Q) in nats, P and Q the softmaxes of two logit rows over the same vocabulary. Throws
// tscope::Error when the rows differ in length or are empty.
double klDivergence(std::span<const float> logitsP, std::span<const float> logitsQ);

// One head's map (T, T) of probabilities, in three numbers (each the mean over the T rows):
// entropy, -sum p log p in nats (0: one key; log n: uniform over n keys); previousToken and
// firstToken, the total variation distance 1/2 sum |p - e| to the row e that puts everything on
// the key before the query (row 0: on itself) or on the first key (0: exactly that pattern, 1: none
// of its mass there).
struct HeadPattern {
  double entropy = 0;
  double previousToken = 0;
  double firstToken = 0;
};
HeadPattern headPattern(const float* map, int T);
// (H) every head of captured layer `layerIndex`.
std::vector<HeadPattern> layerPatterns(const AttentionRows& maps, int layerIndex);

// Byte spans of a tokenization: token i covers text bytes [begin, end).
struct TokenSpan {
  size_t begin = 0, end = 0;
  bool operator==(const TokenSpan&) const = default;
};
// The spans of consecutive tokens whose texts are `pieces` (each token's decoded bytes, in order).
std::vector<TokenSpan> spansOf(const std::vector<std::string>& pieces);

// The right map (Tr, Tr) seen through the left tokenization (Tl tokens): row i is the right row of
// the token holding the last byte of left token i; the right key k's probability goes to the left
// token holding right token k's first byte. Both span lists must cover the same text. Throws
// tscope::Error when they do not (different lengths in bytes) or a span is empty.
std::vector<float> alignedMap(const float* right, const std::vector<TokenSpan>& rightSpans, const std::vector<TokenSpan>& leftSpans);

// What the difference view of two sides shows: right - left over the left's T x T, or why none.
struct MapDifference {
  std::vector<float> difference;  // (T, T) empty when there is none
  std::vector<float> right;       // (T, T) the right map as subtracted (alignedMap's when aligned); empty with difference
  bool aligned = false;           // the right map went through alignedMap (two tokenizations of one text)
  double maxAbs = 0;              // the largest |difference|
  std::string note;               // how the two were lined up, or why there is no difference
};
// `left` (Tl, Tl), `right` (Tr, Tr) probabilities; spans (may be empty) for the alignment when
// Tl != Tr: both are given and cover the same text. `sameTokens`: the two sides' ids agree.
MapDifference mapDifference(std::span<const float> left, int Tl, std::span<const float> right, int Tr, bool sameTokens,
                            const std::vector<TokenSpan>& leftSpans = {}, const std::vector<TokenSpan>& rightSpans = {});

}  // namespace tscope

// scoreDateTranslation (dates_score.h): greedy decoding with the decoder's KV cache after one encode
// per example, then one teacher-forced forward over "^" + target with the cross-attention captured.
#include "model/train/dates_score.h"

#include <algorithm>

#include "model/core/error.h"
#include "model/train/seq2seq_dates.h"

namespace tscope {

namespace {

constexpr int kCenturySecondDigit = 1;  // "YYYY-MM-DD" position the first digit decides: not measured

// The source position with the most attention in row t of the mean of `maps` (each (T, S)).
int strongestSource(const std::vector<const float*>& maps, int t, int S) {
  int best = 0;
  double bestMass = -1;
  for (int j = 0; j < S; ++j) {
    double mass = 0;
    for (const float* map : maps) mass += map[(size_t)t * S + j];
    if (mass > bestMass) {
      bestMass = mass;
      best = j;
    }
  }
  return best;
}

}  // namespace

double DateTranslationScore::bestAlignment() const { return alignment.empty() ? 0 : *std::max_element(alignment.begin(), alignment.end()); }

int DateTranslationScore::bestAlignmentLayer() const {
  if (alignment.empty()) return -1;
  return static_cast<int>(std::max_element(alignment.begin(), alignment.end()) - alignment.begin());
}

std::string translateDate(Transformer& model, const std::string& source) {
  requireDatesModel(model.config());
  model.encode(dateCharacterIds(source));
  const int V = model.config().vocab_size;
  KVCache cache(model.backend(), model.config(), kDateTargetLength + 2);
  std::vector<float> logits;
  std::string out;
  int token = kDateDecoderStartId;
  for (int step = 0; step <= kDateTargetLength; ++step) {
    model.forward(std::span<const int>(&token, 1), cache, logits, false);
    token = static_cast<int>(std::max_element(logits.begin(), logits.begin() + V) - logits.begin());
    if (token == kDateEndId) break;
    out += dateTaskCharacters()[token];
  }
  return out;
}

DateTranslationScore scoreDateTranslation(Transformer& model, int examples, uint64_t seed) {
  requireDatesModel(model.config());
  const int L = model.config().n_layer, H = model.config().n_head;
  DateTranslationScore score;
  score.alignment.assign(L, 0.0);
  std::vector<int> aligned(L, 0), spans(kDateTargetLength, 0);
  int alignedAll = 0;
  std::vector<std::vector<int>> alignedAt(L, std::vector<int>(kDateTargetLength, 0));
  Rng rng(seed);
  TraceOptions options = TraceOptions::nothing();
  options.attention = true;
  options.layers = {};  // every layer
  for (int e = 0; e < examples; ++e) {
    const DateExample example = randomDateExample(rng, true);
    const std::string output = translateDate(model, example.source);
    ++score.examples;
    if (output == example.target) ++score.exact;
    else if (score.wrong.size() < 5) score.wrong.push_back(example.source + " -> " + output + " (expected " + example.target + ")");
    // Teacher forced: row t reads "^" + target[0..t-1] and predicts target[t].
    const std::vector<int> inputs = dateCharacterIds("^" + example.target.substr(0, kDateTargetLength - 1));
    Trace trace;
    model.logitsFor(inputs, &trace, options);  // the source is still encoded
    const int T = trace.T, S = trace.S;
    for (int t = 0; t < T; ++t) {
      const AlignmentSpan span = example.alignment[t];
      if (span.empty() || t == kCenturySecondDigit) continue;
      ++score.alignedCharacters;
      ++spans[t];
      auto inSpan = [&](int j) { return (size_t)j >= span.offset && (size_t)j < span.offset + span.length; };
      std::vector<const float*> every;
      for (int li = 0; li < static_cast<int>(trace.layers.size()); ++li) {
        std::vector<const float*> heads;
        for (int h = 0; h < H; ++h) heads.push_back(trace.crossMap(li, h));
        every.insert(every.end(), heads.begin(), heads.end());
        if (inSpan(strongestSource(heads, t, S))) {
          ++aligned[trace.layers[li]];
          ++alignedAt[trace.layers[li]][t];
        }
      }
      if (inSpan(strongestSource(every, t, S))) ++alignedAll;
    }
  }
  score.alignmentAllLayers = score.alignedCharacters ? (double)alignedAll / score.alignedCharacters : 0;
  score.alignmentByPosition.assign(L, std::vector<double>(kDateTargetLength, -1.0));
  for (int l = 0; l < L; ++l) {
    score.alignment[l] = score.alignedCharacters ? (double)aligned[l] / score.alignedCharacters : 0;
    for (int t = 0; t < kDateTargetLength; ++t)
      if (spans[t] > 0) score.alignmentByPosition[l][t] = (double)alignedAt[l][t] / spans[t];
  }
  return score;
}

void requireDatesModel(const ModelConfig& c) {
  if (!c.isEncoderDecoder() || c.vocab_size != kDateVocabSize || c.decoder_start_token_id != kDateDecoderStartId || c.eos_token_id != kDateEndId)
    throw Error("scoring dates needs an encoder-decoder model over the dates vocabulary (" + std::to_string(kDateVocabSize) +
                " characters, ^ and $ as decoder start and end)");
}

}  // namespace tscope

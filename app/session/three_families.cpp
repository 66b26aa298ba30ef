#include "app/session/three_families.h"

#include <algorithm>
#include <filesystem>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/generate/fill_mask.h"
#include "model/io/model_io.h"
#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "model/train/dates_score.h"

namespace tscope::session {

namespace {

// The lecture's examples (the Transformer lecture's "three families" slide) and what each shipped
// model is given for them: brown-small has no [START] token and its BPE cuts "cat" at the end of a
// text as the start of a longer word, so it continues the slide's sentence a little further;
// dates-encdec's text-to-text task is spelled-out dates to ISO dates (docs/ENCODER_DECODER.md).
constexpr const char* kGptInput = "The cat sat on the";
constexpr const char* kBertInput = "The cat [MASK] on [MASK] mat.";
constexpr const char* kT5Input = "the twelfth of march nineteen ninety one";

std::vector<FamilyCandidate> topCandidates(std::span<const float> logits, const Tokenizer& tokenizer, int k) {
  std::vector<float> p(logits.size());
  softmax(logits, p);
  std::vector<int> order(p.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  k = std::min<int>(k, static_cast<int>(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return p[a] > p[b]; });
  std::vector<FamilyCandidate> top;
  for (int i = 0; i < k; ++i) top.push_back({tokenizer.tokenText(order[i]), p[order[i]]});
  return top;
}

void runGpt(FamilyExample& e, const LoadedModel& model, Backend& backend, int k) {
  if (!model.tokenizer) throw Error(model.path + ": no tokenizer");
  if (!model.weights.config().causal) throw Error(model.path + ": not a decoder-only model");
  Transformer transformer(model.weights, backend);
  const std::vector<int> ids = model.tokenizer->encode(e.input);
  const std::vector<float> logits = transformer.logitsFor(ids);
  const int V = model.weights.config().vocab_size;
  e.slots.push_back(topCandidates(std::span<const float>(logits).last(V), *model.tokenizer, k));
  e.output = e.input + e.slots[0][0].token;
}

void runBert(FamilyExample& e, const LoadedModel& model, Backend& backend, int k) {
  if (!model.tokenizer) throw Error(model.path + ": no tokenizer");
  const ModelConfig& c = model.weights.config();
  const MaskedLmTokens specials = findMaskedLmTokens(*model.tokenizer);
  if (const std::string problem = fillProblem(c, specials); !problem.empty()) throw Error(model.path + ": " + problem);
  const MaskedText text = encodeMaskedText(*model.tokenizer, specials, e.input);
  Transformer transformer(model.weights, backend);
  const std::vector<float> logits = transformer.logitsFor(text.ids);
  std::vector<std::string> best;
  for (const MaskFill& fill : fillFromLogits(logits, c.vocab_size, text.maskPositions, specials, k)) {
    std::vector<FamilyCandidate> top;
    for (const FillCandidate& candidate : fill.top) top.push_back({model.tokenizer->tokenText(candidate.id), candidate.p});
    best.push_back(top.empty() ? std::string() : top[0].token);
    e.slots.push_back(std::move(top));
  }
  e.output = textWithFills(text, best);
}

void runT5(FamilyExample& e, const LoadedModel& model, Backend& backend) {
  requireDatesModel(model.weights.config());
  Transformer transformer(model.weights, backend);
  e.output = translateDate(transformer, e.input);
}

FamilyExample gptExample() {
  FamilyExample e;
  e.family = "decoder-only (GPT)";
  e.model = "brown-small";
  e.lecture = "[START] The cat → sat";
  e.input = kGptInput;
  e.mask = FamilyMask::Causal;
  e.maskText = "causal: each token sees itself and the tokens before it";
  e.objective = "the next token: L = − Σₜ log p(xₜ₊₁ | x₁ … xₜ)";
  return e;
}

FamilyExample bertExample() {
  FamilyExample e;
  e.family = "encoder-only (BERT)";
  e.model = "brown-bert";
  e.lecture = "The cat [MASK] on [MASK] mat → sat, the";
  e.input = kBertInput;
  e.mask = FamilyMask::Bidirectional;
  e.maskText = "none: every token sees the whole text, left and right";
  e.objective = "the hidden tokens (15% chosen): L = − Σₜ∈masked log p(xₜ | the rest of the text)";
  return e;
}

FamilyExample t5Example() {
  FamilyExample e;
  e.family = "encoder-decoder (T5)";
  e.model = "dates-encdec";
  e.lecture = "text to text: \"Translate EN-DE: …\", \"Summarize: …\"";
  e.input = kT5Input;
  e.mask = FamilyMask::EncoderDecoder;
  e.maskText = "encoder none, decoder causal, cross-attention from every target token to every source token";
  e.objective = "the target given the source: L = − Σₜ log p(yₜ | y₁ … yₜ₋₁, source)";
  return e;
}

}  // namespace

std::vector<FamilyExample> runThreeFamilies(const std::string& modelsDir, int topK) {
  std::vector<FamilyExample> examples = {gptExample(), bertExample(), t5Example()};
  auto backend = makeCpuBackend(1);
  for (size_t i = 0; i < examples.size(); ++i) {
    FamilyExample& e = examples[i];
    try {
      const LoadedModel model = loadModel((std::filesystem::path(modelsDir) / e.model).string());
      if (i == 0) runGpt(e, model, *backend, topK);
      else if (i == 1) runBert(e, model, *backend, topK);
      else runT5(e, model, *backend);
    } catch (const std::exception& error) {
      e.error = error.what();
      e.slots.clear();
      e.output.clear();
    }
  }
  return examples;
}

const char* toString(FamilyMask mask) {
  switch (mask) {
    case FamilyMask::Causal: return "causal";
    case FamilyMask::Bidirectional: return "bidirectional";
    case FamilyMask::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

nlohmann::json familiesJson(const std::vector<FamilyExample>& examples) {
  nlohmann::json out = nlohmann::json::array();
  for (const FamilyExample& e : examples) {
    nlohmann::json slots = nlohmann::json::array();
    for (const auto& slot : e.slots) {
      nlohmann::json top = nlohmann::json::array();
      for (const FamilyCandidate& c : slot) top.push_back({{"token", c.token}, {"p", c.p}});
      slots.push_back(top);
    }
    out.push_back({{"family", e.family},
                   {"model", e.model},
                   {"lecture", e.lecture},
                   {"input", e.input},
                   {"output", e.output},
                   {"top", slots},
                   {"mask", toString(e.mask)},
                   {"mask_text", e.maskText},
                   {"objective", e.objective},
                   {"error", e.error}});
  }
  return out;
}

}  // namespace tscope::session

// The Next-token panel's Step and Generate N on the worker thread: the engine's Generation (the
// code `tscope-cli generate` runs), kept between requests so that each Step continues the same
// random stream, drawn one token at a time so the panel can show progress and stop it. The new
// tokens travel as ids beside the prompt text, so nothing is re-tokenized.
#include <algorithm>

#include "model/core/error.h"
#include "app/session/session.h"

namespace tscope::session {

namespace {

bool sameSampling(const SamplingParams& a, const SamplingParams& b) {
  return a.temperature == b.temperature && a.topK == b.topK && a.topP == b.topP && a.greedy == b.greedy && a.seed == b.seed;
}

// True while the prompt is still generatedFrom followed by the generated tokens' text.
bool keepsGeneratedIds(const Request& request, const Tokenizer& tokenizer) {
  if (request.generatedIds.empty() || request.prompt.compare(0, request.generatedFrom.size(), request.generatedFrom) != 0) return false;
  try {
    return request.prompt.size() > request.generatedFrom.size() &&
           request.prompt.substr(request.generatedFrom.size()) == tokenizer.decode(request.generatedIds);
  } catch (const Error&) {
    return false;  // an id outside this model's vocabulary (another model's session): use the text
  }
}

}  // namespace

std::vector<int> Session::promptIds(const Request& request) const {
  const Tokenizer& tokenizer = *tokenizer_;
  // Masked language models: [CLS] prompt [SEP], each "[MASK]" written in it the mask token, whole
  // (the front of a text cannot be dropped: every prediction reads both sides).
  if (config().masked_lm) {
    if (std::string problem = fillProblem(config(), maskedTokens_); !problem.empty()) throw Error(problem);
    MaskedText text = encodeMaskedText(tokenizer, maskedTokens_, request.prompt);
    if (std::string problem = contextProblem(text, config().n_positions); !problem.empty()) throw Error(problem);
    return std::move(text.ids);
  }
  // Encoder-decoder models: the decoder reads the start token, then the target so far.
  std::vector<int> ids;
  if (config().isEncoderDecoder()) ids.push_back(config().decoder_start_token_id);
  const bool kept = keepsGeneratedIds(request, tokenizer);
  const std::vector<int> text = tokenizer.encode(kept ? request.generatedFrom : request.prompt);
  ids.insert(ids.end(), text.begin(), text.end());
  if (kept) ids.insert(ids.end(), request.generatedIds.begin(), request.generatedIds.end());
  return ids;
}

ContextFit Session::fitPrompt(std::vector<int> ids) const {
  return fitToContext(std::move(ids), config().n_positions, config().isEncoderDecoder() ? 1 : 0);
}

Request Session::runGeneration(const Request& request, Snapshot& snapshot) {
  GenerationReport report;
  report.promptBefore = request.prompt;
  report.asked = request.generateTokens;
  report.greedy = request.sampling.greedy;
  Request result = request;
  result.generateTokens = 0;
  generationDone_ = 0;
  generationAsked_ = request.generateTokens;
  try {
    if (!tokenizer_) throw Error("this model has no tokenizer: " + model_.tokenizerNote);
    const Tokenizer& tokenizer = *tokenizer_;
    const ModelConfig& c = config();
    const std::vector<int> ids = promptIds(request);
    const std::optional<MoeRoutingParams> moe = moeRoutingFor(c, request);
    if (moe) transformer_->setMoeRouting(*moe);
    encodeSource(request, snapshot);  // may drop generation_ (another source)
    const std::vector<int> kept = fitPrompt(ids).kept;
    if (request.whatIfs.has(WhatIfKind::Shuffle))
      throw Error("the shuffle what-if is on: turn it off to generate (it reorders the prompt, not the tokens generated after it)");
    applyInterventions(request, kept, snapshot);
    transformer_->setWhatIfs(request.whatIfs);
    // Continue the kept stream when this prompt is where it left off, with the same knobs.
    bool continues = generation_ && sameSampling(generation_->params(), request.sampling) && generationMoe_ == moe &&
                     transformer_->interventions() == generationInterventions_ && transformer_->whatIfs() == generationWhatIfs_ &&
                     ids.size() == generationStart_.size() + generation_->ids().size();
    continues = continues && std::equal(generationStart_.begin(), generationStart_.end(), ids.begin()) &&
                std::equal(generation_->ids().begin(), generation_->ids().end(), ids.begin() + generationStart_.size());
    if (!continues) {
      generation_.reset();  // its cache goes before the new one is made
      generation_ = std::make_unique<Generation>(*transformer_, kept, request.sampling, stopId());
      generationStart_ = ids;
      generationMoe_ = moe;
      generationInterventions_ = transformer_->interventions();
      generationWhatIfs_ = transformer_->whatIfs();
    }
    const size_t before = generation_->ids().size();
    while (static_cast<int>(generation_->ids().size() - before) < request.generateTokens && generation_->stopped() == GenerationStop::None) {
      if (stopGeneration_) {
        report.stopReason = "generation stopped";
        break;
      }
      if (newerRequestWaiting()) {
        report.stopReason = "generation stopped: the prompt or a knob changed";
        report.superseded = true;
        break;
      }
      if (generation_->next(1) == 0) break;
      generationDone_ = static_cast<int>(generation_->ids().size() - before);
    }
    report.newIds.assign(generation_->ids().begin() + static_cast<long>(before), generation_->ids().end());
    report.streamTokens = static_cast<int>(generation_->ids().size());
    report.lastProbability = generation_->lastProbability();
    if (generation_->stopped() == GenerationStop::EndOfText) report.stopReason = "the model drew the end-of-text token: generation stopped";
    else if (generation_->stopped() == GenerationStop::ContextFull && static_cast<int>(report.newIds.size()) < report.asked)
      report.stopReason = "the context (" + std::to_string(c.n_positions) + " tokens) is full: generation stopped";
    if (!report.newIds.empty()) {
      if (!keepsGeneratedIds(request, tokenizer)) {
        result.generatedFrom = request.prompt;
        result.generatedIds.clear();
      }
      result.generatedIds.insert(result.generatedIds.end(), report.newIds.begin(), report.newIds.end());
      result.prompt = request.prompt + tokenizer.decode(report.newIds);
    }
  } catch (const std::exception& e) {
    generation_.reset();  // a half-run step leaves nothing to continue
    report.stopReason = std::string("cannot generate: ") + e.what();
  }
  generationAsked_ = 0;
  snapshot.generation = std::move(report);
  return result;
}

}  // namespace tscope::session

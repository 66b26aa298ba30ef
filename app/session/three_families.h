// The lecture's three families side by side (issue #33): decoder-only GPT (brown-small), encoder-only
// BERT (brown-bert) and encoder-decoder T5 (dates-encdec), each run live on the lecture's example
// input, with its attention mask pattern and its training objective. The Architecture panel's
// "Three families" view and `tscope-cli families` show the same JSON (familiesJson).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tscope::session {

// Which query-key pairs a family's attention allows (drawn as a small grid in the panel).
enum class FamilyMask {
  Causal,         // decoder-only: a token sees itself and the tokens before it
  Bidirectional,  // encoder-only: every token sees every token
  EncoderDecoder  // encoder bidirectional, decoder causal, cross-attention from every target to every source token
};

struct FamilyCandidate {
  std::string token;
  double p = 0;
};

struct FamilyExample {
  std::string family;                               // "decoder-only (GPT)"
  std::string model;                                // the shipped model's name
  std::string lecture;                              // the lecture's example, as the slide writes it
  std::string input;                                // what the model is given
  std::string output;                               // what it produces: the most probable next token, the filled sentence, the translation
  std::vector<std::vector<FamilyCandidate>> slots;  // the top candidates at each predicted place (next token; each [MASK])
  FamilyMask mask = FamilyMask::Causal;
  std::string maskText;   // the mask in words
  std::string objective;  // the training loss, as a formula
  std::string error;      // one line when the model cannot be loaded or run (the other fields but output stay)
};

// Loads the three shipped models from `modelsDir` (assets/models) and runs each on its example on the
// CPU. A model that is missing or fails gives its example an error line; the others still run.
std::vector<FamilyExample> runThreeFamilies(const std::string& modelsDir, int topK = 3);

const char* toString(FamilyMask mask);
nlohmann::json familiesJson(const std::vector<FamilyExample>& examples);

}  // namespace tscope::session

// tscope-cli fill: a masked language model's predictions for each [MASK] of a text (fill_mask.h).
#include <climits>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/session/three_families.h"
#include "model/core/error.h"
#include "model/generate/fill_mask.h"
#include "model/nn/transformer.h"
#include "model/train/fill_eval.h"
#include "model/train/trainer.h"

namespace tscope::cli {

using nlohmann::json;

int runFill(const Argv& argv) {
  Args args("fill", argv, {"model", "text", "text-file", "top", "backend", "threads"}, {});
  if (args.has("text") == args.has("text-file")) throw UsageError("give exactly one of --text and --text-file");
  LoadedModel model = loadModel(args.str("model"));
  const Tokenizer& tokenizer = requireTokenizer(model);
  const ModelConfig& c = model.weights.config();
  const MaskedLmTokens specials = findMaskedLmTokens(tokenizer);
  if (const std::string problem = fillProblem(c, specials); !problem.empty()) throw Error(model.path + ": " + problem);
  const MaskedText text = encodeMaskedText(tokenizer, specials, inputText(args, "text"));
  requireMask(text);
  if (const std::string problem = contextProblem(text, c.n_positions); !problem.empty()) throw Error(problem);
  const int top = static_cast<int>(args.integer("top", 10, 1, 1000));
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  const std::vector<float> logits = transformer.logitsFor(text.ids);
  json masks = json::array();
  for (const MaskFill& fill : fillFromLogits(logits, c.vocab_size, text.maskPositions, specials, top)) {
    json candidates = json::array();
    for (const FillCandidate& candidate : fill.top)
      candidates.push_back({{"token", tokenizer.tokenBytes(candidate.id)}, {"id", candidate.id}, {"p", candidate.p}});
    masks.push_back({{"position", fill.position}, {"top", candidates}});
  }
  json out = {{"model", model.path}, {"ids", text.ids}, {"tokens", tokensJson(model, text.ids)}, {"masks", masks}};
  if (c.hasTokenTypes()) out["token_types"] = tokenTypes(c, text.ids.data(), text.ids.size());  // BERT's segments, counted from [SEP]
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

int runFillEval(const Argv& argv) {
  Args args("fill-eval", argv, {"model", "causal", "windows", "seed", "backend", "threads"}, {});
  const LoadedModel masked = loadModel(args.str("model"));
  std::optional<LoadedModel> causal;
  if (args.has("causal")) causal.emplace(loadModel(args.str("causal")));
  const int windows = static_cast<int>(args.integer("windows", 1000, 1, 1000000));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  const TextCorpus corpus = brownTextCorpus(parseDataSpec("brown"));
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  const FillEval eval = evaluateFill(masked, causal ? &*causal : nullptr, corpus, windows, seed, *backend);
  const double n = static_cast<double>(eval.tokens);
  json out = {{"model", masked.path},
              {"held_out", "Brown validation documents (" + std::to_string(corpus.validationDocuments) + ")"},
              {"windows", eval.windows},
              {"tokens", eval.tokens},
              {"masked_accuracy", eval.maskedCorrect / n},
              {"unigram_token", eval.unigramToken},
              {"unigram_accuracy", eval.unigramCorrect / n}};
  if (causal) {
    out["causal_model"] = causal->path;
    out["causal_accuracy"] = eval.causalCorrect / n;
  }
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

// The lecture's three families on the three shipped models (three_families.h). Exits non-zero when
// any of them could not run (its error line is in the JSON and on stderr).
int runFamilies(const Argv& argv) {
  Args args("families", argv, {"models", "top"}, {});
  const std::string models = args.str("models", std::string(TSCOPE_SOURCE_DIR) + "/assets/models");
  const int top = static_cast<int>(args.integer("top", 3, 1, 100));
  const std::vector<session::FamilyExample> examples = session::runThreeFamilies(models, top);
  print(json{{"models", models}, {"families", session::familiesJson(examples)}});
  int failed = 0;
  for (const session::FamilyExample& e : examples)
    if (!e.error.empty()) {
      std::fprintf(stderr, "tscope-cli families: %s: %s\n", e.model.c_str(), e.error.c_str());
      ++failed;
    }
  return failed ? 1 : 0;
}

}  // namespace tscope::cli

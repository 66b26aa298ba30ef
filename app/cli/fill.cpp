// tscope-cli fill: a masked language model's predictions for each [MASK] of a text (fill_mask.h).
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "model/core/error.h"
#include "model/generate/fill_mask.h"
#include "model/nn/transformer.h"

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
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

}  // namespace tscope::cli

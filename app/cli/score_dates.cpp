// tscope-cli score-dates: a dates encoder-decoder's exact match on held-out dates and where its
// cross-attention looks (model/train/dates_score.h), as JSON.
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "model/train/dates_score.h"

using nlohmann::json;

namespace tscope::cli {

int runScoreDates(const Argv& argv) {
  Args args("score-dates", argv, {"model", "examples", "seed", "backend", "threads"}, {});
  LoadedModel model = loadModel(args.str("model"));
  const int examples = static_cast<int>(args.integer("examples", 500, 1, 100000));
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  requireDatesModel(model.weights.config());  // before the backend's note: one line for one failure
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  const DateTranslationScore score = scoreDateTranslation(transformer, examples, seed);
  json out = {{"model", model.path},
              {"examples", score.examples},
              {"exact_match", score.exactMatch()},
              {"aligned_characters", score.alignedCharacters},
              {"alignment_per_layer", score.alignment},
              {"alignment_all_layers", score.alignmentAllLayers},
              {"alignment_per_layer_and_position", score.alignmentByPosition},
              {"best_alignment", score.bestAlignment()},
              {"best_alignment_layer", score.bestAlignmentLayer()},
              {"wrong", score.wrong}};
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

}  // namespace tscope::cli

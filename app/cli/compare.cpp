// tscope-cli compare: trains several presets one after another (the same progress line as train,
// one per run) and writes the training comparison the Training panel opens (model/train/comparison.h)
// atomically to --out. Ctrl-C stops between steps and writes nothing (exit 130): a comparison file
// always holds every run it was asked for.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/common/args.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "model/core/error.h"
#include "model/train/comparison.h"
#include "model/train/train_presets.h"

using nlohmann::json;

namespace tscope::cli {

int runCompare(const Argv& argv) {
  Args args("compare", argv, {"presets", "steps", "threads", "title", "description", "out"}, {});
  requireUtf8Flags(argv);  // the comparison file keeps the title, description and command line as JSON
  const std::string out = args.str("out");
  requireWritableOutput(out, false);
  std::vector<std::string> keys = args.list("presets", "");
  if (!args.has("presets") || keys.empty()) throw UsageError("--presets needs a list of training presets, e.g. copy,reverse");
  for (const std::string& key : keys) {
    if (key.empty()) throw UsageError("--presets has an empty name in '" + args.str("presets") + "'");
    if (!findTrainPreset(key)) {
      std::string known;
      for (const TrainPreset& preset : trainPresets()) known += (known.empty() ? "" : ", ") + preset.key;
      throw UsageError("unknown training preset '" + oneLine(key, 64) + "' (one of: " + known + ")");
    }
  }
  ComparisonOptions options;
  options.maxSteps = static_cast<int>(args.integer("steps", 0, 1, 100000000));
  options.threads = static_cast<int>(args.integer("threads", 0, 0, 1024));
  options.title = args.str("title", "");
  options.description = args.str("description", "");
  options.command = commandLine("compare", argv);
  options.machine = describeMachine();
  options.date = todayUtc();
  options.cancel = &stopOnInterrupt();

  std::unique_ptr<ProgressLine> progress;
  int shown = -1;
  double tokens = 0, seconds = 0;  // of the run shown
  const int runs = static_cast<int>(keys.size());
  const TrainingComparison comparison = runComparison(keys, options, [&](int run, const Trainer& trainer) {
    if (run != shown) {
      if (progress) progress->finish();
      progress =
          std::make_unique<ProgressLine>(trainer.config().maxSteps, keys[run] + " " + std::to_string(run + 1) + "/" + std::to_string(runs) + " ");
      shown = run;
      tokens = seconds = 0;
    }
    const StepReport& step = trainer.history().steps.back();
    tokens += step.tokens;
    seconds += step.seconds;
    progress->update(trainer, seconds > 0 ? tokens / seconds : 0, trainer.done());
  });
  if (progress) progress->finish();
  if (options.cancel->load()) {
    std::fprintf(stderr, "interrupted during run %zu of %d: nothing written to %s\n", comparison.runs.size() + 1, runs, out.c_str());
    return 130;
  }
  saveComparison(comparison, out);
  json summary = json::array();
  for (const ComparedRun& run : comparison.runs) {
    json record = {{"label", run.label},           {"name", run.name},       {"steps", run.trainLoss.size()},
                   {"parameters", run.parameters}, {"seconds", run.seconds}, {"tokens_per_second", run.tokensPerSecond}};
    if (!run.valLoss.empty()) {
      record["val_loss"] = run.valLoss.back();
      record["best_val_loss"] = *std::min_element(run.valLoss.begin(), run.valLoss.end());
    }
    summary.push_back(record);
  }
  print({{"out", out}, {"runs", summary}});
  return 0;
}

}  // namespace tscope::cli

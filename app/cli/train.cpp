// tscope-cli train: runs a Trainer with a progress line on stderr (a bar with loss, tokens/s and
// ETA, redrawn in place on a terminal, one line per ~5% otherwise), validation at intervals,
// checkpoints (every file written to a temporary name, flushed and renamed) and Ctrl-C handling:
// the step in progress finishes, a checkpoint is written, and the run can be resumed.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/common/args.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/cli_common.h"
#include "model/select/backend_select.h"
#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope::cli {

int runTrain(const Argv& argv) {
  Args args("train", argv, {"config", "data", "out", "steps", "threads", "backend"}, {"resume", "quiet"});
  requireUtf8Flags(argv);  // the checkpoint keeps them as JSON: refused now, not after training
  const std::string out = args.str("out");
  requireWritableOutput(out, true);
  std::string backendNote;
  std::unique_ptr<Trainer> trainer;
  if (args.has("resume")) {
    if (args.has("config") || args.has("data")) throw UsageError("--resume continues the run saved in --out; --config and --data come from it");
    trainer = Trainer::resume(out, chooseTrainingDevice(args.str("backend", "auto"), &backendNote));
    // A new length changes the learning-rate schedule; say so rather than silently differ.
    const int savedSteps = trainer->config().maxSteps;
    if (args.integer("steps", savedSteps, 1, 100000000) != savedSteps)
      throw UsageError("--steps with --resume would change the learning-rate schedule of the saved run (" + std::to_string(savedSteps) +
                       " steps); resume without --steps");
    if (args.has("threads")) throw UsageError("--threads with --resume: the run keeps its thread count (exact resume)");
  } else {
    TrainConfig config = loadTrainConfig(args.str("config"));
    config.maxSteps = static_cast<int>(args.integer("steps", config.maxSteps, 1, 100000000));
    config.warmupSteps = std::min(config.warmupSteps, config.maxSteps);
    config.threads = static_cast<int>(args.integer("threads", config.threads, 0, 1024));
    if (fs::exists(fs::path(out) / "train_state.safetensors"))
      throw UsageError(out + " already holds a training run: pass --resume to continue it, or choose another --out");
    const DataSpec data = parseDataSpec(args.str("data"));
    trainer = std::make_unique<Trainer>(config, data, chooseTrainingDevice(args.str("backend", "auto"), &backendNote));
  }
  const TrainConfig& config = trainer->config();
  const bool quiet = args.has("quiet");
  if (!quiet && trainer->backendName() != "cuda" && !backendNote.empty())
    std::fprintf(stderr, "tscope-cli: training on the %s\n", backendNote.c_str());
  if (!quiet)
    std::fprintf(stderr, "%s\nmodel: %lld parameters; %d steps of %d x %d tokens%s\n", trainer->data().describe().c_str(),
                 (long long)countParameters(config.model).total, config.maxSteps, config.batch, config.seqLen,
                 trainer->stepsDone() > 0 ? (", resuming after step " + std::to_string(trainer->stepsDone())).c_str() : "");

  const std::atomic<bool>& interrupted = stopOnInterrupt();
  ProgressLine progress(config.maxSteps);
  double tokens = 0, seconds = 0;
  const int startStep = trainer->stepsDone();
  while (!trainer->done() && !interrupted) {
    const StepReport step = trainer->step();
    tokens += step.tokens;
    seconds += step.seconds;
    const int done = trainer->stepsDone();
    const bool last = trainer->done();
    if ((config.evalEvery > 0 && done % config.evalEvery == 0) || last) trainer->evaluate();
    if ((config.checkpointEvery > 0 && done % config.checkpointEvery == 0) || last) trainer->saveCheckpoint(out);
    if (!quiet) progress.update(*trainer, seconds > 0 ? tokens / seconds : 0, last);
  }
  if (!quiet) progress.finish();
  if (interrupted) {
    trainer->saveCheckpoint(out);
    std::fprintf(stderr, "interrupted after step %d: checkpoint written to %s (continue with --resume)\n", trainer->stepsDone(), out.c_str());
  }
  json result = {{"out", out},
                 {"steps", trainer->stepsDone()},
                 {"steps_this_run", trainer->stepsDone() - startStep},
                 {"train_loss", recentLoss(trainer->history(), 20)},
                 {"seconds", trainer->totalSeconds()},
                 {"tokens_per_second", seconds > 0 ? tokens / seconds : 0},
                 {"parameters", countParameters(config.model).total},
                 {"data", toString(trainer->dataSpec())},
                 {"backend", trainer->backendName()},
                 {"interrupted", interrupted.load()}};
  if (!trainer->history().evals.empty()) result["val_loss"] = trainer->history().evals.back().loss;
  if (const char* accuracy = accuracyKey(trainer->config().model); accuracy && !trainer->history().evals.empty())
    result[std::string("val_") + accuracy] = trainer->history().evals.back().accuracy;
  print(result);
  return interrupted ? 130 : 0;
}

}  // namespace tscope::cli

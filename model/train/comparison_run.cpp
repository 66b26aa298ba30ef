// Runs a training comparison (comparison.h): each preset's Trainer in turn on the CPU, with the
// evaluation schedule tscope-cli train uses (every evalEvery steps and at the end), recording the
// curves and the costs of each run.
#include <cmath>
#include <utility>

#include "model/core/error.h"
#include "model/core/weights.h"
#include "model/train/comparison.h"
#include "model/train/train_presets.h"

namespace tscope {

namespace {

ComparedRun trainOne(const TrainPreset& preset, int index, const ComparisonOptions& options, const ComparisonProgress& progress, bool* cancelled) {
  TrainConfig config = options.maxSteps > 0 ? configWithSteps(preset.config, options.maxSteps) : preset.config;
  if (options.threads > 0) config.threads = options.threads;
  Trainer trainer(config, preset.data);
  ComparedRun run;
  run.label = preset.key;
  run.name = preset.name;
  run.data = toString(preset.data);
  double tokens = 0, seconds = 0;
  while (!trainer.done()) {
    if (options.cancel && options.cancel->load()) {
      *cancelled = true;
      return run;
    }
    const StepReport step = trainer.step();
    if (!std::isfinite(step.loss))
      throw Error(preset.key + ": the loss is not finite at step " + std::to_string(step.step) + " (lower the learning rate)");
    run.trainLoss.push_back(static_cast<float>(step.loss));
    tokens += step.tokens;
    seconds += step.seconds;
    const int done = trainer.stepsDone();
    const int every = trainer.config().evalEvery;
    if ((every > 0 && done % every == 0) || trainer.done()) {
      const EvalReport eval = trainer.evaluate();
      if (!std::isfinite(eval.loss)) throw Error(preset.key + ": the validation loss is not finite at step " + std::to_string(done));
      run.evalSteps.push_back(done);
      run.valLoss.push_back(static_cast<float>(eval.loss));
    }
    if (progress) progress(index, trainer);
  }
  run.config = trainer.config();
  for (const ParamSpec& spec : parameterLayout(run.config.model)) run.parameters += static_cast<int64_t>(spec.numel());
  run.seconds = trainer.totalSeconds();
  run.tokensPerSecond = seconds > 0 ? tokens / seconds : 0;
  return run;
}

}  // namespace

TrainingComparison runComparison(const std::vector<std::string>& presetKeys, const ComparisonOptions& options, const ComparisonProgress& progress) {
  if (presetKeys.empty()) throw Error("a comparison needs at least one preset");
  if (presetKeys.size() > static_cast<size_t>(kMaxComparedRuns))
    throw Error(std::to_string(presetKeys.size()) + " presets: a comparison holds at most " + std::to_string(kMaxComparedRuns));
  std::vector<const TrainPreset*> presets;
  for (const std::string& key : presetKeys) {
    const TrainPreset* preset = findTrainPreset(key);
    if (!preset) throw Error("unknown training preset '" + key + "'");
    presets.push_back(preset);
  }
  TrainingComparison comparison{options.title, options.description, options.command, options.machine, options.date, {}};
  for (size_t i = 0; i < presets.size(); ++i) {
    bool cancelled = false;
    ComparedRun run = trainOne(*presets[i], static_cast<int>(i), options, progress, &cancelled);
    if (cancelled) break;
    comparison.runs.push_back(std::move(run));
  }
  return comparison;
}

}  // namespace tscope

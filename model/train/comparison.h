// Training comparisons: the same kind of small run trained with several presets one after another
// (e.g. exact, Linformer, linear and sliding-window attention on Brown), their loss curves and costs
// kept in one JSON file ("tscope-training-comparison") that the Training panel opens without retraining.
// The format and its validation are comparison.cpp (no Trainer, so the fuzzer links it alone);
// running the presets is comparison_run.cpp.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/train/trainer.h"

namespace tscope {

struct ComparedRun {   // one training run of the comparison
  std::string label;   // the preset key, e.g. "brown-linear"
  std::string name;    // the preset's display name
  TrainConfig config;  // as the Trainer resolved it (model.vocab_size, n_positions from the data)
  std::string data;    // the data spec as text (the --data syntax, data.h), e.g. "brown:vocab=1024"
  int64_t parameters = 0;
  std::vector<float> trainLoss;  // (steps) loss of each optimizer step
  std::vector<int> evalSteps;    // (evals) steps done at each validation, increasing, 1..steps
  std::vector<float> valLoss;    // (evals)
  double seconds = 0, tokensPerSecond = 0;
};

struct TrainingComparison {
  std::string title, description;  // what the comparison shows (one line, and a few sentences)
  std::string command;             // the command that made it
  std::string machine, date;       // where and when, e.g. "2 vCPU AMD EPYC, Debian 12", "2026-11-24"
  std::vector<ComparedRun> runs;
};

constexpr int kMaxComparedRuns = 16;
constexpr uintmax_t kMaxComparisonFileBytes = 64u << 20;

// {"format": "tscope-training-comparison", "version": 1, "title", "description", "command", "machine",
//  "date", "runs": [{"label", "name", "data", "train_config", "parameters", "train_loss", "eval_steps",
//  "val_loss", "seconds", "tokens_per_second"}]}
nlohmann::json comparisonToJson(const TrainingComparison& comparison);
// Throws tscope::Error, one line naming the problem: wrong format or version, no runs or more than
// kMaxComparedRuns, array lengths that disagree, eval steps not increasing or beyond the run,
// non-finite numbers, an invalid train_config or data spec.
TrainingComparison comparisonFromJson(const nlohmann::json& json);
// Reads and checks a file (at most kMaxComparisonFileBytes); errors name the file.
TrainingComparison loadComparison(const std::string& path);
// Writes through a temporary name, flush and rename: a kill leaves the old file or the new one.
void saveComparison(const TrainingComparison& comparison, const std::string& path);

// The run a preset describes, shortened or lengthened to `steps`: the warm-up clamped to the run and
// the evaluation interval scaled with it (as many validation points as the preset makes).
TrainConfig configWithSteps(const TrainConfig& preset, int steps);

struct ComparisonOptions {
  int maxSteps = 0;                                        // > 0: every run this many steps (configWithSteps); 0: each preset's own
  int threads = 0;                                         // > 0: training threads of every run; 0: each preset's own
  std::string title, description, command, machine, date;  // copied into the comparison
  const std::atomic<bool>* cancel = nullptr;               // set: stop between steps (the unfinished run is dropped)
};
// Called after every optimizer step with the index of the run (0-based) and its trainer.
using ComparisonProgress = std::function<void(int run, const Trainer& trainer)>;

// Trains each preset one after another on the CPU, evaluating every evalEvery steps and at the end.
// Throws tscope::Error for an empty list, more than kMaxComparedRuns, an unknown preset key (before
// any training) or a run whose loss is not finite. Cancelled: the finished runs only.
TrainingComparison runComparison(const std::vector<std::string>& presetKeys, const ComparisonOptions& options,
                                 const ComparisonProgress& progress = {});

// A one-line machine description for ComparisonOptions::machine ("N cores, CPU model, OS").
std::string describeMachine();
// Today's date in UTC, "YYYY-MM-DD" (for the date field of result files).
std::string todayUtc();

}  // namespace tscope

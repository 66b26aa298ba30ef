// Scaling sweeps: a grid of model sizes x token budgets, each a normal tscope training run (the
// Trainer, with its checkpoints), run one after another; the finished runs' summaries kept in the
// sweep's own file so a sweep is resumed, extended or reopened without retraining anything, and so
// the scaling lab (model/theory/scaling_fit.h) fits the laws to them.
//
// A sweep directory:
//   DIR/sweep.json        {"format": "tscope-sweep", "version": 1, "spec": {...}, "runs": [finished
//                          run summaries], "machine", "date", "command"}; rewritten (temporary name,
//                          flush, rename) after every finished run and every extension
//   DIR/runs/<name>/      the run's checkpoint: a model directory tscope opens, plus train_state
//                          (kept after the run finishes, so the models can be looked at)
// The shipped sweeps (assets/sweeps/*/sweep.json) are the file alone: every run finished, no runs/.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/theory/scaling_fit.h"
#include "model/train/trainer.h"

namespace tscope {

// One model size of the grid; everything else of the model comes from SweepSpec::base.model.
struct SweepSize {
  int nLayer = 2;
  int dModel = 64;
  int nHead = 4;             // d_model must divide by it
  float maxLr = 0;           // > 0: this size's peak learning rate; 0: the base config's
  std::string name() const;  // "L2-d64"
};

struct SweepSpec {
  std::string title;        // one line, e.g. "Brown, 5 sizes x 3 budgets"
  std::string description;  // a few sentences: what it measures
  DataSpec data;            // e.g. brown:vocab=1024, text:path=notes.txt, addition:digits=3
  TrainConfig base;         // the run config of every run but the size and the steps; each run sets
                            // n_layer, n_embd, n_head, d_ff = 0 (4 n_embd) and n_kv_head = 0
                            // (no grouped queries) from its SweepSize
  std::vector<SweepSize> sizes;
  std::vector<int64_t> tokens;  // token budgets: a run's steps = max(1, round(tokens / (batch * seqLen * accumulation)))
  bool totalParams = false;     // which N the fits use: false non-embedding (Kaplan's), true all parameters (Hoffmann's)
  int taskExamples = 0;         // synthetic tasks: held-out examples scored for exact match at the end (0: none)
};

// "" or one line naming the field and the rule it breaks: no sizes or budgets, a size twice, a
// budget twice, more than kMaxSweepRuns runs, a size the model config rejects, a budget under one step.
constexpr int kMaxSweepRuns = 64;
std::string validateSweepSpec(const SweepSpec& spec);

// A planned run: its name ("L2-d64-1M"), size, budget and the full run config.
struct SweepRunPlan {
  std::string name;
  SweepSize size;
  int64_t tokens = 0;  // the budget asked for
  TrainConfig config;  // base with the size, the steps and the size's lr; warm-up clamped to the run
};
// Every run of the grid, cheapest (fewest training FLOP) first, so early points span all sizes.
std::vector<SweepRunPlan> planSweep(const SweepSpec& spec);

// Exact match on a synthetic task's held-out examples: the answer decoded greedily from the prompt,
// and the per-token loss and accuracy of the answer tokens (teacher forced).
struct TaskScores {
  int examples = 0;
  double exactMatch = 0;           // share of examples whose whole answer is right
  double answerTokenLoss = 0;      // mean nats per answer token
  double answerTokenAccuracy = 0;  // share of answer tokens the argmax gets right (teacher forced)
};

struct SweepRunResult {
  std::string name;
  SweepSize size;
  int64_t tokens = 0;  // tokens trained on (steps x batch x seqLen x accumulation)
  int steps = 0;
  int64_t paramsNonEmbedding = 0, paramsTotal = 0;
  double trainLoss = 0;        // mean loss of the last max(1, steps / 20) steps
  double valLoss = 0;          // validation loss at the end
  std::vector<int> evalSteps;  // the validation curve
  std::vector<float> evalLoss;
  double seconds = 0, tokensPerSecond = 0;
  std::optional<TaskScores> task;  // synthetic tasks with taskExamples > 0
};

struct SweepResults {
  SweepSpec spec;
  std::vector<SweepRunResult> runs;  // finished runs, in the order they finished
  std::string machine, date, command;
  const SweepRunResult* find(const std::string& runName) const;
};

// The spec alone (the "spec" member of sweep.json; also what `tscope-cli sweep --spec FILE` reads).
nlohmann::json sweepSpecToJson(const SweepSpec& spec);
SweepSpec sweepSpecFromJson(const nlohmann::json& json);  // throws like sweepFromJson

// "L2-d64" (heads: d_model / 16, at least 1) or "L2-d64-h4"; throws tscope::Error naming the text.
SweepSize parseSweepSize(const std::string& text);
// "250K", "1M", "1.5M", "2000000" -> tokens; throws tscope::Error naming the text.
int64_t parseTokenCount(const std::string& text);

nlohmann::json sweepToJson(const SweepResults& sweep);
// Throws tscope::Error with one line naming the field: wrong format or version, an invalid spec,
// a run not in the spec's grid or twice, non-finite numbers, array lengths that disagree.
SweepResults sweepFromJson(const nlohmann::json& json);
// A sweep directory (its sweep.json) or a sweep.json file; errors name the file. At most 16 MB.
SweepResults loadSweep(const std::string& path);
void saveSweep(const SweepResults& sweep, const std::string& path);  // atomic

// The scaling points of the finished runs (N by spec.totalParams, D = tokens, L = valLoss).
std::vector<ScalingPoint> sweepPoints(const SweepResults& sweep);
// One row per finished run: name,n_layer,d_model,n_head,params_non_embedding,params_total,tokens,
// steps,flops,train_loss,val_loss,seconds,tokens_per_second[,exact_match,answer_token_loss,answer_token_accuracy].
std::string sweepRunsCsv(const SweepResults& sweep);

// Writes a new sweep directory (throws if DIR/sweep.json exists: open it instead).
void createSweep(const std::string& dir, const SweepSpec& spec, const std::string& command = "");
// Adds sizes and budgets to an existing sweep (the grid grows; finished runs stay); throws when the
// result is invalid. Returns the new spec.
SweepSpec extendSweep(const std::string& dir, const std::vector<SweepSize>& sizes, const std::vector<int64_t>& tokens);

// A run in progress.
struct SweepActiveRun {
  std::string name;
  int step = 0, steps = 0;
  double lastLoss = 0;  // its latest step loss
};

struct SweepStatus {
  int runsDone = 0, runs = 0;          // finished runs / runs in the grid
  std::string current;                 // the first run in progress ("" between runs and when done)
  int step = 0, steps = 0;             // of the current run
  bool done = false;                   // every run of the grid finished
  double lastLoss = 0;                 // the current run's latest step loss
  std::vector<SweepActiveRun> active;  // every run in progress (more than one when runs train at once)
};

// How a SweepRunner trains. On the CPU the runs go one after another (each already uses every
// core); on a GPU small models leave most of it idle, so several runs train at once, each on its own
// thread with its own device (its own CUDA stream and cuBLAS handle).
struct SweepRunOptions {
  int threads = 0;  // > 0: every run's CPU training threads
  // Makes one run's device (backend_select.h's makeTrainingDevice: the GPU); null, or null made:
  // the Trainer's own CPU device with `threads` (bit-reproducible).
  std::function<std::unique_ptr<Device>()> device;
  int parallel = 1;  // runs trained at once (>= 1), each on its own thread and device
};
// The runs a GPU trains at once unless told otherwise.
constexpr int kGpuParallelRuns = 8;

// Runs a sweep directory's unfinished runs, one optimizer step at a time, so a caller can pause
// between any two steps (the CLI loops; the app's SweepSession steps it on its worker thread).
class SweepRunner {
 public:
  // Opens DIR/sweep.json.
  explicit SweepRunner(const std::string& dir, SweepRunOptions options = {});
  ~SweepRunner();
  // One step of every run in progress (up to options.parallel, at once): starts the next unfinished
  // runs (each resumed from DIR/runs/<name>/ when a checkpoint is there), steps, checkpoints every
  // base.checkpointEvery steps, and when a run is done evaluates it, scores the task, keeps the
  // checkpoint and appends the summary to sweep.json (only this thread writes it).
  SweepStatus step();
  // Writes the checkpoints of the runs in progress now (before a pause or exit).
  void checkpoint();
  SweepStatus status() const;
  const SweepResults& results() const;  // the finished runs so far
  const Trainer* current() const;       // the first run in progress, or null
  int parallel() const;                 // the runs trained at once

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The scores of a model on a synthetic task (exact match needs a prompt/answer split: the task's
// scored tokens are the answer). Throws tscope::Error for a task without one.
TaskScores scoreTask(const Weights& weights, const TaskSpec& task, int examples, uint64_t seed);

// Ready-made sweeps: "brown" (the default: 5 sizes spanning 30x non-embedding parameters x 3 budgets
// on Brown, about 30 minutes on a 2-core CPU), "addition" (emergence: sizes on multi-digit
// addition, exact match against per-token loss), "tiny" (seconds; for tests and a first look).
struct SweepPreset {
  std::string key, name, description;
  SweepSpec spec;
};
const std::vector<SweepPreset>& sweepPresets();
const SweepPreset* findSweepPreset(const std::string& key);

// The sweeps shipped in assets/sweeps/ (name -> path of its sweep.json), e.g. "brown", "addition";
// only those whose file is there.
std::vector<std::pair<std::string, std::string>> shippedSweeps();

}  // namespace tscope

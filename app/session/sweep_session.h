// The scaling lab's session behind the Scaling panel's "Your runs" tab: a Worker (worker.h) whose
// thread owns a SweepRunner (model/train/sweep.h), takes commands in order (open, start a preset,
// pause, resume, extend), takes one optimizer step of the sweep as its idle work, and publishes an
// immutable SweepView. The laws are refitted (fitSweep, with its bootstrap) on the worker only when
// a run finishes; the UI thread never fits or trains.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "app/session/worker.h"
#include "model/theory/scaling_fit.h"
#include "model/train/sweep.h"

namespace tscope::session {

enum class SweepState { Empty, Viewing, Running, Paused, Done, Error };
const char* toString(SweepState state);  // "no sweep", "shown", "running", ...

struct SweepView {
  uint64_t version = 0;  // increases with every publication
  SweepState status = SweepState::Empty;
  std::string message;                            // one line: what is happening, or what went wrong (status Error)
  std::string path;                               // the sweep on screen: its directory, or the sweep.json of a read-only one
  bool readOnly = false;                          // a shipped sweep (or a bare sweep.json with no runs/ beside it): shown, never run
  std::shared_ptr<const SweepResults> results;    // the finished runs so far (null: nothing open)
  std::shared_ptr<const SweepFits> fits;          // fitSweep of the finished points (null: fewer than 2 runs)
  uint64_t fitsVersion = 0;                       // increases with every refit (the panel's caches key on it)
  int runsDone = 0, runs = 0;                     // finished / in the grid
  std::string current;                            // the (first) run in progress ("" between runs and when done)
  int step = 0, steps = 0;                        // of the current run
  std::vector<SweepActiveRun> active;             // every run in progress (several at once on a GPU)
  std::string device;                             // what trains: "CPU, one run at a time" or "CUDA: ..., 8 runs at once"
  double runEtaSeconds = 0, sweepEtaSeconds = 0;  // from the recent steps' FLOP rate
  std::vector<float> currentLoss;                 // (steps done) the current run's loss at each step
};

// Where "Start preset" writes a new sweep: $TSCOPE_SWEEPS_DIR/<preset>-<date-time> when that is set,
// else $HOME/.local/share/tscope/sweeps/<preset>-<date-time> (the current folder with no HOME).
std::string defaultSweepDir(const std::string& presetKey);

class SweepSession {
 public:
  static constexpr int kBootstrapSamples = 200;

  SweepSession();
  ~SweepSession();
  SweepSession(const SweepSession&) = delete;
  SweepSession& operator=(const SweepSession&) = delete;

  // Shows a sweep directory or sweep.json (errors: one line in the view; the sweep on screen stays,
  // and a running one runs on).
  // A directory with unfinished runs opens paused: resume() runs them.
  void open(const std::string& path);
  // Writes a new sweep of the preset into `dir` (createSweep; must not exist yet) and runs it.
  // textFile: "" the preset's own data, else a UTF-8 text file that replaces Brown (text presets only).
  void start(const std::string& presetKey, const std::string& dir, const std::string& textFile = "");
  void pause();   // checkpoints the current run
  void resume();  // runs the unfinished runs of the sweep on screen (not a read-only one)
  // Adds sizes and budgets to the sweep on screen (extendSweep) and, when it was running, runs on.
  void extend(std::vector<SweepSize> sizes, std::vector<int64_t> tokens);
  std::shared_ptr<const SweepView> latest() const { return worker_.latest(); }
  // A command waits or is handled (an open with its fit, a start, an extend); training steps do not count.
  bool busy() const { return worker_.busy(); }

 private:
  enum class CommandKind { Open, Start, Pause, Resume, Extend };
  struct Command {
    CommandKind kind = CommandKind::Pause;
    std::string path, preset;      // Open: path; Start: preset and directory
    std::string textFile;          // Start: the text file replacing the preset's Brown ("" none)
    std::vector<SweepSize> sizes;  // Extend
    std::vector<int64_t> tokens;   // Extend
  };
  void handle(Command& command);
  bool stepIfRunning();  // the worker's idle work: one step of the sweep while running
  void fail(const std::string& message);
  void show(const std::string& path);
  void runFrom(const std::string& dir);  // a runner on the directory, then running
  void afterStep(const SweepStatus& status);
  void refit(std::shared_ptr<const SweepResults> results);  // shown, and the laws fitted to them
  void publish(bool force);

  // Worker-only state.
  std::unique_ptr<SweepRunner> runner_;
  SweepRunOptions runOptions_;  // made once (the GPU probed once): CPU threads, or a device per run
  bool runOptionsMade_ = false;
  std::string dir_;  // the directory of the sweep on screen ("" for a read-only file)
  bool running_ = false;
  SweepView view_;                                     // the next view to publish
  std::deque<std::pair<double, double>> recentSteps_;  // (seconds, training FLOP) of the last steps
  std::chrono::steady_clock::time_point lastStepEnd_, lastPublish_;

  // Last: its destructor joins the thread (after the step or command it is in) before anything above goes.
  Worker<Command, SweepView> worker_{WorkerPolicy::Queue};
};

}  // namespace tscope::session

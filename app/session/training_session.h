// The training session behind the Training panel: a Worker (worker.h) whose thread owns a Trainer,
// takes commands from the UI (start, pause, resume, stop, reset, save) in order, trains between
// them, and publishes an immutable TrainingView the UI reads once per frame. Every few steps
// it runs the current weights on the data's probe sequence with a Trace and keeps the attention
// maps and expert load as a timeline the UI scrubs through. The UI thread never runs model math.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "app/session/worker.h"
#include "model/train/trainer.h"

namespace tscope::session {

enum class TrainingStatus { Idle, Preparing, Running, Paused, Done, Error };
const char* toString(TrainingStatus status);  // "idle", "preparing data", ...
// All cores but one for training (the sweeps' too), so the UI and the explorer's model thread stay responsive.
int trainingThreads();

// One point of the timeline: what the model did with the probe sequence after `step` steps.
struct TrainingSnapshot {
  int step = 0;
  double trainLoss = std::numeric_limits<double>::quiet_NaN();  // mean of the last few steps (NaN at step 0)
  double valLoss = std::numeric_limits<double>::quiet_NaN();    // the latest validation loss so far
  double accuracy = -1;                                         // a masked LM's latest masked-token accuracy on validation (-1: not a masked LM)
  int L = 0, H = 0, T = 0;
  std::vector<float> attention;   // (L, H, T, T) post-softmax on the probe (0 where masked)
  int experts = 0;                // E; 0 for a dense model
  std::vector<float> expertLoad;  // (L, E) share of the probe's routed assignments sent to each expert
  const float* attnMap(int layer, int head) const { return attention.data() + ((size_t)layer * H + head) * T * T; }
};

struct TrainingView {
  uint64_t version = 0;  // increases with every publication
  TrainingStatus status = TrainingStatus::Idle;
  std::string message;  // one line: what is happening, or what went wrong
  std::string runName;  // the preset this run started from (perhaps edited)
  TrainConfig config;   // as the Trainer resolved it (vocabulary and positions from the data)
  DataSpec data;
  std::string dataDescription;
  int64_t parameters = 0;
  int threads = 0;  // threads the training uses
  int stepsDone = 0, totalSteps = 0;
  double tokensPerSecond = 0, etaSeconds = 0, elapsedSeconds = 0;
  std::vector<float> trainLoss;          // (steps done) loss of each optimizer step
  std::vector<float> learningRate;       // (steps done)
  std::vector<int> evalSteps;            // (evals) step of each validation
  std::vector<float> valLoss;            // (evals)
  std::vector<float> accuracy;           // (evals) a masked LM's share of hidden tokens right, an image model's of test images; else empty
  std::vector<std::string> probeTokens;  // (T) printable text of each probe token
  std::string probeText;                 // the probe decoded (a prompt for the explorer)
  std::vector<std::shared_ptr<const TrainingSnapshot>> timeline;  // ascending steps, at most kMaxSnapshots (fewer for big maps)
  uint64_t saveCount = 0;                                         // saves finished (successful or not)
  std::string savedDir, saveError;                                // of the last save; saveError "" when it worked
};

struct TrainingStart {
  std::string name;
  TrainConfig config;
  DataSpec data;
  int pauseAtStep = 0;  // > 0: pause once this many steps are done (deterministic screenshots)
};

class TrainingSession {
 public:
  static constexpr size_t kMaxSnapshots = 200;

  TrainingSession();
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  void start(TrainingStart run);  // replaces any run (config.threads 0: all cores but one)
  void pause();
  void resume();
  void stop();                        // ends the run early; it can still be saved
  void reset();                       // forgets the run
  void save(const std::string& dir);  // writes a checkpoint (a model directory) between steps
  std::shared_ptr<const TrainingView> latest() const { return worker_.latest(); }

 private:
  enum class CommandKind { Start, Pause, Resume, Stop, Reset, Save };
  struct Command {
    CommandKind kind = CommandKind::Pause;
    std::unique_ptr<TrainingStart> run;  // Start only
    std::string dir;                     // Save only
  };
  void post(CommandKind kind, std::unique_ptr<TrainingStart> run, std::string dir);
  bool trainIfRunning();  // the worker's idle work: one step while running
  void fail(const std::string& message);
  void handle(Command& command);
  void begin(const TrainingStart& run);
  void trainStep();
  void takeSnapshot();
  void evaluate();
  void finish(const std::string& message);
  void publish(bool force);

  // Worker-only state.
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<Backend> probeBackend_;
  std::vector<int> probe_;
  TrainingView view_;  // the next view to publish
  int snapshotEvery_ = 1;
  size_t maxSnapshots_ = kMaxSnapshots;  // fewer when one snapshot's maps are large
  int pauseAtStep_ = 0;
  bool running_ = false;
  std::deque<double> recentStepSeconds_, recentStepTokens_;  // wall time and tokens of the last steps
  std::chrono::steady_clock::time_point lastStepEnd_, lastPublish_;
  double elapsedBefore_ = 0;  // wall seconds of earlier running stretches

  // Last: its destructor joins the thread (after the step or command it is in) before anything above goes.
  Worker<Command, TrainingView> worker_{WorkerPolicy::Queue};
};

}  // namespace tscope::session

// The scaling lab's worker (see sweep_session.h). Commands are handled between optimizer steps, so a
// pause takes effect within one step. Views are published at most every 50 ms (and on every status
// change or finished run); results and fits travel as shared_ptrs, copied only when a run finishes.
// The ETA counts the remaining work as 6 x (12 L C^2) x tokens per unfinished run (the
// non-embedding training FLOP, Kaplan's C = 6ND) at the FLOP rate of the recent steps.
#include "app/session/sweep_session.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <numeric>

#include "app/session/training_session.h"
#include "model/core/error.h"
#include "model/select/backend_select.h"
#include "model/train/text_source.h"

namespace tscope::session {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kRecentSteps = 32;
constexpr auto kPublishInterval = std::chrono::milliseconds(50);

// Kaplan's non-embedding training FLOP of a planned run (its size, its steps' tokens).
double runFlops(const SweepSize& size, const TrainConfig& config) {
  const double params = 12.0 * size.nLayer * double(size.dModel) * size.dModel;
  const double tokensPerStep = double(config.batch) * config.seqLen * config.gradAccumulation;
  return 6.0 * params * tokensPerStep * config.maxSteps;
}

bool isShipped(const std::string& path) {
  std::error_code ec;
  const auto wanted = std::filesystem::weakly_canonical(path, ec);
  for (const auto& [name, shipped] : shippedSweeps()) {
    const auto file = std::filesystem::weakly_canonical(shipped, ec);
    if (file == wanted || file.parent_path() == wanted) return true;
  }
  return false;
}

std::string nowStamp() {
  const std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%d-%H%M%S", std::localtime(&now));
  return buffer;
}

}  // namespace

const char* toString(SweepState state) {
  switch (state) {
    case SweepState::Empty: return "no sweep";
    case SweepState::Viewing: return "shown";
    case SweepState::Running: return "running";
    case SweepState::Paused: return "paused";
    case SweepState::Done: return "done";
    case SweepState::Error: return "error";
  }
  return "?";
}

std::string defaultSweepDir(const std::string& presetKey) {
  std::filesystem::path root;
  if (const char* dir = std::getenv("TSCOPE_SWEEPS_DIR"); dir && *dir) root = dir;
  else if (const char* home = std::getenv("HOME"); home && *home) root = std::filesystem::path(home) / ".local/share/tscope/sweeps";
  else root = "sweeps";
  return (root / (presetKey + "-" + nowStamp())).string();
}

SweepSession::SweepSession() {
  view_.message = "open a sweep or start a preset";
  worker_.publish(std::make_shared<const SweepView>(view_));
  worker_.start(
      {[this](Command& command) { handle(command); }, [this] { return stepIfRunning(); }, [this](const std::string& message) { fail(message); }});
}

SweepSession::~SweepSession() = default;  // worker_ goes first: it joins between steps

void SweepSession::open(const std::string& path) { worker_.post(Command{CommandKind::Open, path, "", "", {}, {}}); }
void SweepSession::start(const std::string& presetKey, const std::string& dir, const std::string& textFile) {
  worker_.post(Command{CommandKind::Start, dir, presetKey, textFile, {}, {}});
}
void SweepSession::pause() { worker_.post(Command{CommandKind::Pause, "", "", "", {}, {}}); }
void SweepSession::resume() { worker_.post(Command{CommandKind::Resume, "", "", "", {}, {}}); }
void SweepSession::extend(std::vector<SweepSize> sizes, std::vector<int64_t> tokens) {
  worker_.post(Command{CommandKind::Extend, "", "", "", std::move(sizes), std::move(tokens)});
}

bool SweepSession::stepIfRunning() {
  if (!running_) return false;
  afterStep(runner_->step());
  return true;
}

void SweepSession::fail(const std::string& message) {
  // A bad file, a corpus not installed, a diverged run: the sweep stops; the app carries on.
  if (running_ && runner_) {
    try {
      runner_->checkpoint();
    } catch (const std::exception&) {
      // The error shown is the first one.
    }
  }
  running_ = false;
  view_.status = SweepState::Error;
  view_.message = oneLine(message);
  publish(true);
}

void SweepSession::handle(Command& command) {
  switch (command.kind) {
    case CommandKind::Open: try { show(command.path);
      } catch (const std::exception& e) {
        if (!running_) throw;                                                                 // the error line (fail)
        view_.message = oneLine(std::string("not opened (the sweep runs on): ") + e.what());  // a typo does not stop a running sweep
        publish(true);
      }
      break;
    case CommandKind::Start: {
      const SweepPreset* preset = findSweepPreset(command.preset);
      if (!preset) throw Error("no sweep preset named '" + command.preset + "'");
      if (command.path.empty()) throw Error("type a directory for the new sweep");
      SweepSpec spec = preset->spec;
      std::string how = "tscope Scaling panel, preset " + preset->key;
      if (!command.textFile.empty()) {
        if (!spec.data.brown) throw Error("the " + preset->key + " preset trains on its own task; a text file replaces Brown in the text presets");
        readTrainingText(command.textFile);  // missing, empty, not UTF-8: one line, before anything is written
        spec.data.textPath = std::filesystem::absolute(command.textFile).lexically_normal().string();
        spec.title = std::filesystem::path(command.textFile).filename().string() + ", the " + preset->key + " grid";
        spec.description = "The " + preset->key + " preset's sizes and budgets on the text file " + spec.data.textPath + " instead of Brown.";
        how += " on " + spec.data.textPath;
      }
      if (running_) runner_->checkpoint();
      running_ = false;
      createSweep(command.path, spec, how);
      show(command.path);
      runFrom(command.path);
      break;
    }
    case CommandKind::Pause:
      if (!running_) return;
      runner_->checkpoint();
      running_ = false;
      view_.status = SweepState::Paused;
      view_.message = "the current run is checkpointed; Resume continues";
      publish(true);
      break;
    case CommandKind::Resume:
      if (running_) return;
      if (view_.readOnly || dir_.empty()) throw Error("this sweep is read-only (shipped): start a preset to run your own");
      if (view_.runsDone >= view_.runs) throw Error("every run of this sweep is finished: extend it to run more");
      runFrom(dir_);
      break;
    case CommandKind::Extend: {
      if (view_.readOnly || dir_.empty()) throw Error("a read-only (shipped) sweep cannot be extended");
      const bool wasRunning = running_;
      if (running_) runner_->checkpoint();
      running_ = false;
      runner_.reset();
      extendSweep(dir_, command.sizes, command.tokens);
      show(dir_);
      if (wasRunning) runFrom(dir_);
      break;
    }
  }
}

void SweepSession::show(const std::string& path) {
  if (path.empty()) throw Error("type the path of a sweep directory or sweep.json");
  SweepResults results = loadSweep(path);  // throws with the file's name; the sweep on screen stays
  const std::filesystem::path p(path);
  const bool isFile = !std::filesystem::is_directory(p);
  const std::filesystem::path dir = isFile ? p.parent_path() : p;
  const bool readOnly = isShipped(path) || (isFile && !std::filesystem::exists(dir / "runs"));
  if (running_) runner_->checkpoint();
  running_ = false;
  runner_.reset();
  dir_ = readOnly ? "" : dir.string();
  SweepView fresh;
  fresh.version = view_.version;
  fresh.fitsVersion = view_.fitsVersion;
  fresh.device = view_.device;
  fresh.path = path;
  fresh.readOnly = readOnly;
  fresh.runs = static_cast<int>(planSweep(results.spec).size());
  fresh.runsDone = static_cast<int>(results.runs.size());
  const bool finished = fresh.runsDone >= fresh.runs;
  fresh.status = readOnly ? SweepState::Viewing : finished ? SweepState::Done : SweepState::Paused;
  fresh.message = readOnly ? "a shipped sweep: shown, not run" : finished ? "every run finished" : "Resume runs the unfinished runs";
  view_ = std::move(fresh);
  view_.results = std::make_shared<const SweepResults>(std::move(results));  // the points at once; the fit (a second or so) follows
  publish(true);
  refit(view_.results);
  publish(true);
}

void SweepSession::runFrom(const std::string& dir) {
  if (!runOptionsMade_) {
    // The GPU when there is one (several runs at once), else the CPU's cores for one run at a time.
    std::string note;
    if (makeTrainingDevice("auto", &note)) {
      runOptions_.device = [] { return makeTrainingDevice("auto"); };
      runOptions_.parallel = kGpuParallelRuns;
      view_.device = note + ", " + std::to_string(kGpuParallelRuns) + " runs at once";
    } else {
      runOptions_.threads = trainingThreads();
      view_.device = "CPU (" + std::to_string(runOptions_.threads) + " threads), one run at a time";
    }
    runOptionsMade_ = true;
  }
  if (!runner_) runner_ = std::make_unique<SweepRunner>(dir, runOptions_);
  running_ = true;
  recentSteps_.clear();
  lastStepEnd_ = Clock::now();
  view_.status = SweepState::Running;
  view_.message = "training";
  publish(true);
}

void SweepSession::afterStep(const SweepStatus& status) {
  const auto now = Clock::now();
  const double wall = std::chrono::duration<double>(now - lastStepEnd_).count();
  lastStepEnd_ = now;
  if (status.current != view_.current) view_.currentLoss.clear();
  if (!status.current.empty()) view_.currentLoss.push_back(static_cast<float>(status.lastLoss));
  view_.current = status.current;
  view_.step = status.step;
  view_.steps = status.steps;
  view_.active = status.active;
  view_.runs = status.runs;
  // Remaining work of the sweep, and the FLOP rate of the recent steps (every run in progress took one).
  double remaining = 0, stepFlops = 0;
  const SweepResults& results = runner_->results();
  for (const SweepRunPlan& plan : planSweep(results.spec)) {
    if (results.find(plan.name)) continue;
    const double flops = runFlops(plan.size, plan.config);
    const auto active = std::find_if(status.active.begin(), status.active.end(), [&](const SweepActiveRun& a) { return a.name == plan.name; });
    if (active != status.active.end() && active->steps > 0) {
      stepFlops += flops / active->steps;
      remaining += flops * (1.0 - double(active->step) / active->steps);
    } else {
      remaining += flops;
    }
  }
  if (stepFlops > 0) recentSteps_.emplace_back(wall, stepFlops);
  if (recentSteps_.size() > kRecentSteps) recentSteps_.pop_front();
  double seconds = 0, flops = 0;
  for (const auto& [s, f] : recentSteps_) seconds += s, flops += f;
  const double rate = seconds > 0 ? flops / seconds : 0;
  view_.sweepEtaSeconds = rate > 0 ? remaining / rate : 0;
  view_.runEtaSeconds = recentSteps_.empty() ? 0 : seconds / recentSteps_.size() * (status.steps - status.step);

  const bool finishedRun = status.runsDone != view_.runsDone;
  view_.runsDone = status.runsDone;
  if (finishedRun) {
    refit(std::make_shared<const SweepResults>(results));
    recentSteps_.clear();  // the next run has another size
  }
  if (status.done) {
    running_ = false;
    view_.status = SweepState::Done;
    view_.message = "every run finished";
    view_.current.clear();
    view_.active.clear();
    view_.sweepEtaSeconds = view_.runEtaSeconds = 0;
  }
  publish(finishedRun || status.done);
}

void SweepSession::refit(std::shared_ptr<const SweepResults> results) {
  view_.results = std::move(results);
  const std::vector<ScalingPoint> points = sweepPoints(*view_.results);
  view_.fits = points.size() >= 2 ? std::make_shared<const SweepFits>(fitSweep(points, kBootstrapSamples)) : nullptr;
  ++view_.fitsVersion;
}

void SweepSession::publish(bool force) {
  const auto now = Clock::now();
  if (!force && now - lastPublish_ < kPublishInterval) return;
  lastPublish_ = now;
  ++view_.version;
  worker_.publish(std::make_shared<const SweepView>(view_));
}

}  // namespace tscope::session

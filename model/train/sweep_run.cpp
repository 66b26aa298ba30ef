// Running a sweep (sweep.h): creating and extending sweep directories, and SweepRunner, which trains
// the grid's unfinished runs one optimizer step at a time (resuming a run from its checkpoint), and
// appends each finished run's summary to sweep.json.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <thread>

#include "model/core/error.h"
#include "model/theory/cost.h"
#include "model/train/comparison.h"
#include "model/train/sweep.h"
#include "model/train/train_presets.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

fs::path sweepFile(const std::string& dir) { return fs::path(dir) / "sweep.json"; }
fs::path runDir(const std::string& dir, const std::string& run) { return fs::path(dir) / "runs" / run; }
bool hasCheckpoint(const fs::path& run) { return fs::exists(run / "train_state.safetensors"); }

// The summary of a finished run.
SweepRunResult summarise(const SweepRunPlan& plan, const Trainer& trainer, const std::optional<TaskScores>& task) {
  SweepRunResult r;
  r.name = plan.name;
  r.size = plan.size;
  const TrainHistory& h = trainer.history();
  r.steps = trainer.stepsDone();
  const ModelConfig model = resolvedModelConfig(trainer.config(), trainer.dataSpec());
  r.tokens = static_cast<int64_t>(r.steps) * trainer.config().batch * model.n_positions * trainer.config().gradAccumulation;
  const ParamCounts counts = countParameters(model);
  r.paramsNonEmbedding = counts.nonEmbedding;
  r.paramsTotal = counts.total;
  r.trainLoss = recentLoss(h, std::max<size_t>(1, h.steps.size() / 20));
  double seconds = 0, tokens = 0;
  for (const EvalReport& e : h.evals) {
    if (!r.evalSteps.empty() && e.step <= r.evalSteps.back()) continue;  // a resumed run may repeat the last one
    r.evalSteps.push_back(e.step);
    r.evalLoss.push_back(static_cast<float>(e.loss));
  }
  r.valLoss = h.evals.back().loss;
  for (const StepReport& s : h.steps) seconds += s.seconds, tokens += s.tokens;
  r.seconds = trainer.totalSeconds();
  r.tokensPerSecond = seconds > 0 ? tokens / seconds : 0;
  r.task = task;
  return r;
}

}  // namespace

void createSweep(const std::string& dir, const SweepSpec& spec, const std::string& command) {
  if (fs::exists(sweepFile(dir))) throw Error(sweepFile(dir).string() + " already exists: open or extend that sweep instead");
  if (std::string problem = validateSweepSpec(spec); !problem.empty()) throw Error("sweep: " + problem);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the sweep directory (" + ec.message() + ")");
  SweepResults sweep;
  sweep.spec = spec;
  sweep.machine = describeMachine();
  sweep.date = todayUtc();
  sweep.command = command;
  saveSweep(sweep, sweepFile(dir).string());
}

SweepSpec extendSweep(const std::string& dir, const std::vector<SweepSize>& sizes, const std::vector<int64_t>& tokens) {
  SweepResults sweep = loadSweep(dir);
  for (const SweepSize& size : sizes) {
    const bool known = std::any_of(sweep.spec.sizes.begin(), sweep.spec.sizes.end(), [&](const SweepSize& s) { return s.name() == size.name(); });
    if (!known) sweep.spec.sizes.push_back(size);
  }
  for (int64_t budget : tokens)
    if (std::find(sweep.spec.tokens.begin(), sweep.spec.tokens.end(), budget) == sweep.spec.tokens.end()) sweep.spec.tokens.push_back(budget);
  if (std::string problem = validateSweepSpec(sweep.spec); !problem.empty()) throw Error("sweep: " + problem);
  saveSweep(sweep, sweepFile(dir).string());
  return sweep.spec;
}

struct SweepRunner::Impl {
  std::string dir;
  SweepRunOptions options;
  SweepResults results;
  std::vector<SweepRunPlan> plans;
  struct Active {
    size_t plan = 0;  // index into plans
    std::unique_ptr<Trainer> trainer;
  };
  std::vector<Active> active;  // the runs in progress, in the order they started

  bool isActive(size_t plan) const {
    return std::any_of(active.begin(), active.end(), [&](const Active& a) { return a.plan == plan; });
  }
  // The next plan neither finished nor in progress, or plans.size().
  size_t nextPlan() const {
    for (size_t i = 0; i < plans.size(); ++i)
      if (!results.find(plans[i].name) && !isActive(i)) return i;
    return plans.size();
  }

  void start(size_t index) {
    const SweepRunPlan& plan = plans[index];
    const fs::path checkpoint = runDir(dir, plan.name);
    std::unique_ptr<Device> device = options.device ? options.device() : nullptr;
    if (!device && options.threads > 0) device = makeCpuDevice(options.threads);
    Active run{index, nullptr};
    if (hasCheckpoint(checkpoint)) {
      run.trainer = Trainer::resume(checkpoint.string(), std::move(device));
    } else {
      TrainConfig config = plan.config;
      if (options.threads > 0) config.threads = options.threads;
      run.trainer = std::make_unique<Trainer>(config, results.spec.data, std::move(device));
    }
    active.push_back(std::move(run));
  }

  // One optimizer step of a run in progress (on any thread: it touches that run alone).
  void stepOne(Active& run) const {
    Trainer& trainer = *run.trainer;
    if (trainer.done()) return;
    const StepReport report = trainer.step();
    if (!std::isfinite(report.loss))
      throw Error(plans[run.plan].name + ": the loss is not finite at step " + std::to_string(report.step) + " (lower the sweep's learning rate)");
    const int done = trainer.stepsDone(), every = trainer.config().evalEvery, save = trainer.config().checkpointEvery;
    if (every > 0 && done % every == 0 && !trainer.done()) trainer.evaluate();
    if (save > 0 && done % save == 0 && !trainer.done()) trainer.saveCheckpoint(runDir(dir, plans[run.plan].name).string());
  }

  // Steps every run in progress: the first on this thread, the others each on a thread of its own.
  void stepAll() {
    if (active.size() == 1) return stepOne(active[0]);
    std::vector<std::exception_ptr> errors(active.size());
    {
      std::vector<std::jthread> threads;
      for (size_t i = 1; i < active.size(); ++i)
        threads.emplace_back([this, &errors, i] {
          try {
            stepOne(active[i]);
          } catch (...) {
            errors[i] = std::current_exception();
          }
        });
      try {
        stepOne(active[0]);
      } catch (...) {
        errors[0] = std::current_exception();
      }
    }  // joined
    for (const std::exception_ptr& error : errors)
      if (error) std::rethrow_exception(error);
  }

  void finish(Active& run) {
    const SweepRunPlan& plan = plans[run.plan];
    Trainer& trainer = *run.trainer;
    if (trainer.history().evals.empty() || trainer.history().evals.back().step != trainer.stepsDone()) trainer.evaluate();
    std::optional<TaskScores> task;
    if (results.spec.taskExamples > 0)
      task = scoreTask(trainer.weights(), results.spec.data.task, results.spec.taskExamples, results.spec.base.seed + 7919);
    trainer.saveCheckpoint(runDir(dir, plan.name).string());
    results.runs.push_back(summarise(plan, trainer, task));
    saveSweep(results, sweepFile(dir).string());
    run.trainer.reset();
  }
};

SweepRunner::SweepRunner(const std::string& dir, SweepRunOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.parallel < 1) throw Error("sweep: runs at once must be at least 1, got " + std::to_string(options.parallel));
  impl_->dir = fs::is_directory(dir) ? dir : fs::path(dir).parent_path().string();
  impl_->options = std::move(options);
  impl_->results = loadSweep(impl_->dir);
  impl_->plans = planSweep(impl_->results.spec);
}

SweepRunner::~SweepRunner() = default;

SweepStatus SweepRunner::step() {
  Impl& s = *impl_;
  while (static_cast<int>(s.active.size()) < s.options.parallel) {
    const size_t next = s.nextPlan();
    if (next == s.plans.size()) break;
    s.start(next);
  }
  if (s.active.empty()) return status();
  s.stepAll();
  for (Impl::Active& run : s.active)
    if (run.trainer->done()) s.finish(run);
  std::erase_if(s.active, [](const Impl::Active& run) { return !run.trainer; });
  return status();
}

void SweepRunner::checkpoint() {
  for (const Impl::Active& run : impl_->active) run.trainer->saveCheckpoint(runDir(impl_->dir, impl_->plans[run.plan].name).string());
}

SweepStatus SweepRunner::status() const {
  const Impl& s = *impl_;
  SweepStatus st;
  st.runs = static_cast<int>(s.plans.size());
  for (const SweepRunPlan& plan : s.plans) st.runsDone += s.results.find(plan.name) ? 1 : 0;
  st.done = st.runsDone == st.runs;
  for (const Impl::Active& run : s.active) {
    SweepActiveRun a;
    a.name = s.plans[run.plan].name;
    a.step = run.trainer->stepsDone();
    a.steps = run.trainer->config().maxSteps;
    if (!run.trainer->history().steps.empty()) a.lastLoss = run.trainer->history().steps.back().loss;
    st.active.push_back(std::move(a));
  }
  if (!st.active.empty()) {
    st.current = st.active.front().name;
    st.step = st.active.front().step;
    st.steps = st.active.front().steps;
    st.lastLoss = st.active.front().lastLoss;
  }
  return st;
}

const SweepResults& SweepRunner::results() const { return impl_->results; }
const Trainer* SweepRunner::current() const { return impl_->active.empty() ? nullptr : impl_->active.front().trainer.get(); }
int SweepRunner::parallel() const { return impl_->options.parallel; }

}  // namespace tscope

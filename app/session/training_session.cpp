// The training worker (see training_session.h). Commands are handled between optimizer steps, so
// a pause or stop takes effect within one step. Views are published at most every 50 ms (and on
// every status change or new snapshot): each is a fresh copy of the curves, while the timeline's
// snapshots are shared between views, never copied.
#include "app/session/training_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/nn/transformer.h"

namespace tscope::session {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kRecentSteps = 32;  // tokens/s and ETA average over this many steps
constexpr auto kPublishInterval = std::chrono::milliseconds(50);
constexpr int kMaxProbeTokens = 128;                  // the maps stay readable and small
constexpr size_t kTimelineBytes = size_t(256) << 20;  // attention maps kept over the whole timeline

std::string seconds(double s) {
  char text[32];
  if (s >= 90) std::snprintf(text, sizeof text, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60));
  else std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

}  // namespace

int trainingThreads() {
  const int cores = makeCpuBackend()->threadCount();
  return std::max(1, cores - 1);
}

const char* toString(TrainingStatus status) {
  switch (status) {
    case TrainingStatus::Idle: return "idle";
    case TrainingStatus::Preparing: return "preparing data";
    case TrainingStatus::Running: return "running";
    case TrainingStatus::Paused: return "paused";
    case TrainingStatus::Done: return "done";
    case TrainingStatus::Error: return "error";
  }
  return "?";
}

TrainingSession::TrainingSession() {
  view_.message = "choose a preset and press Start";
  worker_.publish(std::make_shared<const TrainingView>(view_));
  worker_.start(
      {[this](Command& command) { handle(command); }, [this] { return trainIfRunning(); }, [this](const std::string& message) { fail(message); }});
}

TrainingSession::~TrainingSession() = default;  // worker_ goes first: it joins between steps

void TrainingSession::post(CommandKind kind, std::unique_ptr<TrainingStart> run, std::string dir) {
  worker_.post(Command{kind, std::move(run), std::move(dir)});
}

void TrainingSession::start(TrainingStart run) { post(CommandKind::Start, std::make_unique<TrainingStart>(std::move(run)), ""); }
void TrainingSession::pause() { post(CommandKind::Pause, nullptr, ""); }
void TrainingSession::resume() { post(CommandKind::Resume, nullptr, ""); }
void TrainingSession::stop() { post(CommandKind::Stop, nullptr, ""); }
void TrainingSession::reset() { post(CommandKind::Reset, nullptr, ""); }
void TrainingSession::save(const std::string& dir) { post(CommandKind::Save, nullptr, dir); }

bool TrainingSession::trainIfRunning() {
  if (!running_) return false;
  trainStep();
  return true;
}

void TrainingSession::fail(const std::string& message) {
  // Bad config, corpus not installed, divergence: the run ends; the app carries on.
  running_ = false;
  view_.status = TrainingStatus::Error;
  view_.message = message;
  publish(true);
}

void TrainingSession::handle(Command& command) {
  const TrainingStatus status = view_.status;
  switch (command.kind) {
    case CommandKind::Start: begin(*command.run); break;
    case CommandKind::Pause:
      if (status != TrainingStatus::Running) return;
      running_ = false;
      view_.status = TrainingStatus::Paused;
      view_.message = "the timeline's last snapshot shows the weights now";
      takeSnapshot();  // show the weights as they are now
      publish(true);
      break;
    case CommandKind::Resume:
      if (status != TrainingStatus::Paused) return;
      running_ = true;
      lastStepEnd_ = Clock::now();
      view_.status = TrainingStatus::Running;
      view_.message = "training";
      publish(true);
      break;
    case CommandKind::Stop:
      if (status != TrainingStatus::Running && status != TrainingStatus::Paused) return;
      finish("stopped at step " + std::to_string(view_.stepsDone) + " of " + std::to_string(view_.totalSteps));
      break;
    case CommandKind::Reset:
      running_ = false;
      trainer_.reset();
      {
        TrainingView fresh;
        fresh.version = view_.version;
        fresh.saveCount = view_.saveCount;  // the panel matches saves it asked for by this count
        fresh.message = "choose a preset and press Start";
        view_ = std::move(fresh);
      }
      publish(true);
      break;
    case CommandKind::Save:
      ++view_.saveCount;
      view_.savedDir = command.dir;
      view_.saveError.clear();
      try {
        if (!trainer_) throw Error("nothing to save: start a run first");
        if (command.dir.empty()) throw Error("type a directory to save the model into");
        trainer_->saveCheckpoint(command.dir);
      } catch (const std::exception& e) {
        view_.saveError = e.what();
      }
      publish(true);
      break;
  }
}

void TrainingSession::begin(const TrainingStart& run) {
  running_ = false;
  trainer_.reset();
  TrainingView fresh;
  fresh.version = view_.version;
  fresh.saveCount = view_.saveCount;
  fresh.status = TrainingStatus::Preparing;
  fresh.runName = run.name;
  fresh.message = "preparing data: " + toString(run.data);
  fresh.totalSteps = run.config.maxSteps;
  view_ = std::move(fresh);
  publish(true);

  TrainConfig config = run.config;
  if (config.threads == 0) config.threads = trainingThreads();
  trainer_ = std::make_unique<Trainer>(config, run.data);
  if (!probeBackend_) probeBackend_ = makeCpuBackend(1);
  const TrainConfig& resolved = trainer_->config();
  probe_ = trainer_->data().probeSequence();
  if ((int)probe_.size() > std::min(kMaxProbeTokens, resolved.model.n_positions))
    probe_.resize(std::min(kMaxProbeTokens, resolved.model.n_positions));
  if (probe_.empty()) throw Error("the data source gave an empty probe sequence");
  const Tokenizer& tokenizer = trainer_->data().tokenizer();
  for (int id : probe_) view_.probeTokens.push_back(tokenizer.tokenText(id));
  view_.probeText = tokenizer.decode(probe_);
  view_.config = resolved;
  view_.data = trainer_->dataSpec();
  view_.dataDescription = trainer_->data().describe();
  view_.parameters = countParameters(resolved.model).total;
  view_.threads = config.threads;
  snapshotEvery_ = std::max(1, resolved.maxSteps / 100);
  const size_t snapshotBytes = sizeof(float) * resolved.model.n_layer * resolved.model.n_head * probe_.size() * probe_.size();
  maxSnapshots_ = std::clamp<size_t>(kTimelineBytes / std::max<size_t>(1, snapshotBytes), 16, kMaxSnapshots);
  pauseAtStep_ = run.pauseAtStep;
  recentStepSeconds_.clear();
  recentStepTokens_.clear();
  elapsedBefore_ = 0;
  evaluate();  // the untrained model's validation loss starts the curve
  takeSnapshot();
  running_ = true;
  lastStepEnd_ = Clock::now();
  view_.status = TrainingStatus::Running;
  view_.message = "training";
  publish(true);
}

void TrainingSession::trainStep() {
  const StepReport report = trainer_->step();
  if (!std::isfinite(report.loss)) throw Error("the loss is not finite at step " + std::to_string(report.step) + " (lower the learning rate)");
  view_.trainLoss.push_back(static_cast<float>(report.loss));
  view_.learningRate.push_back(report.lr);
  view_.stepsDone = trainer_->stepsDone();
  const TrainConfig& c = trainer_->config();
  const int done = view_.stepsDone;
  const bool last = trainer_->done();
  bool snapshot = false;
  if (!last) {
    if (c.evalEvery > 0 && done % c.evalEvery == 0) evaluate();
    if (done % snapshotEvery_ == 0) {
      takeSnapshot();
      snapshot = true;
    }
    if (pauseAtStep_ > 0 && done >= pauseAtStep_) {
      pauseAtStep_ = 0;
      running_ = false;
      view_.status = TrainingStatus::Paused;
      view_.message = "stopped at step " + std::to_string(done) + " as asked; Resume continues";
      takeSnapshot();
      snapshot = true;
    }
  }
  // Tokens/s and ETA from wall time (evaluations and snapshots included).
  const auto now = Clock::now();
  const double wall = std::chrono::duration<double>(now - lastStepEnd_).count();
  lastStepEnd_ = now;
  elapsedBefore_ += wall;
  recentStepSeconds_.push_back(wall);
  recentStepTokens_.push_back(report.tokens);
  if (recentStepSeconds_.size() > kRecentSteps) {
    recentStepSeconds_.pop_front();
    recentStepTokens_.pop_front();
  }
  const double recentSeconds = std::accumulate(recentStepSeconds_.begin(), recentStepSeconds_.end(), 0.0);
  const double recentTokens = std::accumulate(recentStepTokens_.begin(), recentStepTokens_.end(), 0.0);
  view_.tokensPerSecond = recentSeconds > 0 ? recentTokens / recentSeconds : 0;
  view_.etaSeconds = recentSeconds / recentStepSeconds_.size() * (view_.totalSteps - done);
  view_.elapsedSeconds = elapsedBefore_;
  if (last) finish("finished " + std::to_string(done) + " steps");
  else publish(snapshot || view_.status != TrainingStatus::Running);
}

void TrainingSession::evaluate() {
  const EvalReport report = trainer_->evaluate();
  if (!std::isfinite(report.loss)) throw Error("the validation loss is not finite at step " + std::to_string(report.step));
  view_.evalSteps.push_back(report.step);
  view_.valLoss.push_back(static_cast<float>(report.loss));
  if (report.accuracy >= 0) view_.accuracy.push_back(static_cast<float>(report.accuracy));
}

void TrainingSession::takeSnapshot() {
  const int step = trainer_->stepsDone();
  if (!view_.timeline.empty() && view_.timeline.back()->step == step) return;
  auto snapshot = std::make_shared<TrainingSnapshot>();
  snapshot->step = step;
  const size_t recent = std::min<size_t>(10, view_.trainLoss.size());
  if (recent > 0) snapshot->trainLoss = std::accumulate(view_.trainLoss.end() - recent, view_.trainLoss.end(), 0.0) / static_cast<double>(recent);
  if (!view_.valLoss.empty()) snapshot->valLoss = view_.valLoss.back();
  if (!view_.accuracy.empty()) snapshot->accuracy = view_.accuracy.back();
  // The host backend reads the trainer's weights in place; nothing trains while this runs.
  Transformer transformer(trainer_->weights(), *probeBackend_);
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 0;
  Trace trace;
  if (trainer_->config().model.isEncoderDecoder()) transformer.encode(trainer_->data().probeSource());
  if (trainer_->config().model.isImage()) transformer.classLogits(trainer_->data().probeImage(), &trace, options);  // a test digit
  else transformer.logitsFor(probe_, &trace, options);
  snapshot->L = static_cast<int>(trace.layers.size());
  snapshot->H = trace.H;
  snapshot->T = trace.T;
  snapshot->attention = std::move(trace.attn);
  const ModelConfig& c = trainer_->config().model;
  if (c.isMoe() && trace.moe.size() == static_cast<size_t>(c.n_layer)) {
    snapshot->experts = c.n_experts;
    for (const MoeRouting& routing : trace.moe) {
      if (routing.fraction.size() != static_cast<size_t>(c.n_experts)) throw Error("the trace has no routing for an MoE layer");
      snapshot->expertLoad.insert(snapshot->expertLoad.end(), routing.fraction.begin(), routing.fraction.end());
    }
  }
  auto& timeline = view_.timeline;
  timeline.push_back(std::move(snapshot));
  if (timeline.size() > maxSnapshots_) {
    // Thin out: keep every other snapshot, always the first and the newest.
    std::vector<std::shared_ptr<const TrainingSnapshot>> kept;
    for (size_t i = 0; i + 1 < timeline.size(); i += 2) kept.push_back(timeline[i]);
    kept.push_back(timeline.back());
    timeline = std::move(kept);
  }
}

void TrainingSession::finish(const std::string& message) {
  running_ = false;
  if (view_.evalSteps.empty() || view_.evalSteps.back() != trainer_->stepsDone()) evaluate();
  takeSnapshot();
  view_.status = TrainingStatus::Done;
  view_.message = message + " in " + seconds(view_.elapsedSeconds);
  view_.etaSeconds = 0;
  publish(true);
}

void TrainingSession::publish(bool force) {
  const auto now = Clock::now();
  if (!force && now - lastPublish_ < kPublishInterval) return;
  lastPublish_ = now;
  ++view_.version;
  worker_.publish(std::make_shared<const TrainingView>(view_));
}

}  // namespace tscope::session

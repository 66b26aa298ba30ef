// The app's background work that is neither a forward (Session) nor a training step
// (TrainingSession, SweepSession): opening a model, the Efficient panel's maps and cost
// measurement, the Prompt panel's merge steps. Each kind of work is a named channel of the App's
// Tasks: latest wins within a channel (a task still waiting is replaced, the running one is told
// to stop through its CancelToken), and every channel runs on its own Worker thread, so opening a
// model never waits behind a cost measurement.
//
// Channels belong to the App, not to a panel: a panel made anew for another model joins nothing
// and owns no thread; a task that outlives the panel that posted it publishes into its channel,
// and the next panel tells its results from older ones by the key it posted. A task captures
// what it reads by value or shared_ptr (never a panel's `this`): it may run after the panel is gone.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>

#include "app/session/worker.h"

namespace tscope::session {

// What a running task sees of its channel.
template <class Result>
class TaskScope {
 public:
  bool cancelled() const { return cancel_.cancelled(); }  // a newer task waits, or the app is closing
  void progress(int done, int total) { worker_.setProgress(done, total); }
  // Makes `result` the channel's latest (a task may publish several times: partial results).
  void publish(std::shared_ptr<const Result> result) { worker_.publish(std::move(result)); }

 private:
  template <class>
  friend class TaskChannel;
  struct Job {
    std::function<void(TaskScope&)> run;
  };
  TaskScope(const CancelToken& cancel, Worker<Job, Result>& worker) : cancel_(cancel), worker_(worker) {}
  const CancelToken& cancel_;
  Worker<Job, Result>& worker_;
};

class TaskChannelBase {
 public:
  virtual ~TaskChannelBase() = default;
  virtual const std::type_info& resultType() const = 0;
  virtual bool busy() const = 0;
  virtual WorkProgress progress() const = 0;
};

// One kind of background work and its newest result.
template <class Result>
class TaskChannel final : public TaskChannelBase {
 public:
  using Scope = TaskScope<Result>;
  explicit TaskChannel(WorkerPolicy policy) : worker_(policy) {
    worker_.start({.run =
                       [this](typename Scope::Job& job) {
                         worker_.setProgress(0, 0);  // not the last task's
                         Scope scope(worker_.cancelToken(), worker_);
                         job.run(scope);
                       },
                   .idle = {},
                   .failed = {}});
  }
  // LatestWins (most channels): replaces a task still waiting and cancels the running one. Queue:
  // tasks run in order, none cancelled by a later one.
  void post(std::function<void(Scope&)> task) { worker_.post({std::move(task)}); }
  std::shared_ptr<const Result> latest() const { return worker_.latest(); }  // null until the first publish
  bool busy() const override { return worker_.busy(); }                      // a task waits or runs
  WorkProgress progress() const override { return worker_.progress(); }
  std::string lastError() const { return worker_.lastError(); }  // "" unless a task threw
  const std::type_info& resultType() const override { return typeid(Result); }

 private:
  Worker<typename Scope::Job, Result> worker_;
};

// The App's channels by name, each made on first use (with the policy of that first use). Destroying Tasks cancels every channel's
// running task and joins its thread (the App declares it first, so it goes last).
class Tasks {
 public:
  template <class Result>
  TaskChannel<Result>& channel(const std::string& name, WorkerPolicy policy = WorkerPolicy::LatestWins) {
    std::lock_guard lock(mutex_);
    std::unique_ptr<TaskChannelBase>& slot = channels_[name];
    if (!slot) slot = std::make_unique<TaskChannel<Result>>(policy);
    if (slot->resultType() != typeid(Result)) throw std::logic_error("task channel '" + name + "' holds another result type");
    return static_cast<TaskChannel<Result>&>(*slot);
  }
  // A task of any channel waits or runs (the window keeps drawing until its result is on screen;
  // a screenshot waits for it).
  bool busy() const {
    std::lock_guard lock(mutex_);
    for (const auto& [name, channel] : channels_)
      if (channel->busy()) return true;
    return false;
  }
  // The running task's progress on channel `name` ({} when no such channel was made).
  WorkProgress progress(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto it = channels_.find(name);
    return it == channels_.end() ? WorkProgress{} : it->second->progress();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<TaskChannelBase>> channels_;
};

}  // namespace tscope::session

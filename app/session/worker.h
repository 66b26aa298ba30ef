// The background worker of the sessions (Session, TrainingSession, SweepSession) and of the
// Efficient panel's reference maps: a thread that runs posted jobs one at a time, either
// latest-wins (a waiting job is replaced and the running one is told to stop) or
// first-in-first-out, with optional idle work between jobs (a training step), a cancellation token
// the running job polls, a progress value, and the newest published result as an immutable
// shared_ptr the UI reads once per frame. A job that throws leaves an error, not a crash.
// Not the only thread: the Efficient panel's cost measurement has a std::jthread of its own
// (efficient_cost.cpp), and SweepRunner steps parallel GPU runs on std::jthreads (sweep_run.cpp).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace tscope::session {

// What the running job polls to learn that its work is no longer wanted: a newer job replaced it
// (LatestWins) or the worker is shutting down. Cleared when the worker takes the next job.
class CancelToken {
 public:
  bool cancelled() const { return flag_.load(); }

 private:
  template <class, class>
  friend class Worker;
  std::atomic<bool> flag_{false};
};

enum class WorkerPolicy {
  LatestWins,  // post replaces a job still waiting and cancels the running one
  Queue,       // post appends; jobs run in order and are never cancelled by a later one
};

struct WorkProgress {
  int done = 0, total = 0;  // e.g. layers of the forward running now
};

// Job: what post() hands over (moved in, may be move-only). Result: what the worker publishes.
template <class Job, class Result>
class Worker {
 public:
  struct Handlers {
    std::function<void(Job&)> run;  // one job, on the worker thread; polls cancelToken()
    // Optional: one unit of background work while no job waits (e.g. one optimizer step); returns
    // false when there is nothing to do, and the worker sleeps until the next job.
    std::function<bool()> idle;
    // Optional: `run` or `idle` threw; the message. The worker carries on with the next job.
    std::function<void(const std::string&)> failed;
  };

  explicit Worker(WorkerPolicy policy) : policy_(policy) {}
  ~Worker() { shutdown(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the thread (once). The owner calls it when everything the handlers touch exists.
  void start(Handlers handlers) {
    handlers_ = std::move(handlers);
    thread_ = std::thread([this] { loop(); });
  }

  // Cancels the running job, drops waiting ones and joins. Idempotent; the destructor calls it, so
  // an owner declares its Worker after everything the handlers touch (it is destroyed first).
  void shutdown() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      cancel_.flag_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void post(Job job) {
    {
      std::lock_guard lock(mutex_);
      if (policy_ == WorkerPolicy::LatestWins) {
        jobs_.clear();
        cancel_.flag_ = true;
      }
      jobs_.push_back(std::move(job));
      busy_ = true;
      ++posted_;
    }
    wake_.notify_one();
  }

  const CancelToken& cancelToken() const { return cancel_; }
  bool busy() const { return busy_.load(); }  // a job waits or runs (idle work does not count)
  uint64_t postedCount() const { return posted_.load(); }

  // From the worker thread: the newest result, seen by latest() from then on.
  void publish(std::shared_ptr<const Result> result) {
    std::lock_guard lock(resultMutex_);
    latest_ = std::move(result);
    ++published_;
  }
  std::shared_ptr<const Result> latest() const {  // null until the first publish
    std::lock_guard lock(resultMutex_);
    return latest_;
  }
  uint64_t publishedCount() const {
    std::lock_guard lock(resultMutex_);
    return published_;
  }

  // done and total travel in one atomic word, so a reader never sees one from another job.
  void setProgress(int done, int total) { progress_ = (uint64_t(uint32_t(total)) << 32) | uint32_t(done); }
  WorkProgress progress() const {
    const uint64_t word = progress_.load();
    return {int(uint32_t(word)), int(uint32_t(word >> 32))};
  }

  std::string lastError() const {  // "" until a job or idle step threw
    std::lock_guard lock(mutex_);
    return lastError_;
  }

 private:
  void loop() {
    bool wantsIdle = bool(handlers_.idle);
    for (;;) {
      std::optional<Job> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !jobs_.empty() || wantsIdle; });
        if (stopping_) return;
        if (!jobs_.empty()) {
          job = std::move(jobs_.front());
          jobs_.pop_front();
          cancel_.flag_ = false;
        }
      }
      if (!job) {
        guarded([&] {
          wantsIdle = false;  // an idle step that throws waits for the next job
          wantsIdle = handlers_.idle();
        });
        continue;
      }
      guarded([&] { handlers_.run(*job); });
      wantsIdle = bool(handlers_.idle);  // the job may have started background work: ask again
      std::lock_guard lock(mutex_);
      busy_ = !jobs_.empty();  // a newer job may have arrived meanwhile: busy until it is done too
    }
  }

  template <class F>
  void guarded(F&& work) {
    std::string error;
    try {
      work();
      return;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown error";
    }
    {
      std::lock_guard lock(mutex_);
      lastError_ = error;
    }
    if (handlers_.failed) {
      try {
        handlers_.failed(error);
      } catch (...) {
        // The error hook itself failed: lastError() still holds the message.
      }
    }
  }

  const WorkerPolicy policy_;
  Handlers handlers_;
  mutable std::mutex mutex_;  // jobs_, stopping_, lastError_, and the cancel flag's changes with them
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::string lastError_;
  CancelToken cancel_;
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> progress_{0};
  mutable std::mutex resultMutex_;  // latest_, published_
  std::shared_ptr<const Result> latest_;
  uint64_t published_ = 0;
  std::thread thread_;  // last: started after, and joined before, everything above goes
};

}  // namespace tscope::session

// The background Worker both sessions run on (app/session/worker.h), driven with small jobs whose
// progress the test sees through a condition variable: latest-wins drops superseded jobs, the
// cancel token reaches a running job, the destructor joins a running job, results are published in
// order, idle work runs between queued jobs, and a job that throws leaves an error, not a crash.
// Then the TrainingSession on it: pause at a step, save, resume to the end, stop, reset, errors.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/session/training_session.h"
#include "app/session/worker.h"
#include "model/train/digits.h"
#include "model/train/train_presets.h"
#include "tests/test_files.h"

using namespace tscope::session;

namespace {

constexpr auto kTimeout = std::chrono::seconds(20);  // bounds every wait; never reached when it works

// What the jobs did, shared between the worker thread and the test.
struct Log {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> started, finished;
  std::vector<bool> sawCancel;  // per finished job: was its token set when it ended
  bool release = false;         // held jobs wait for this

  void add(std::vector<int>& list, int value) {
    {
      std::lock_guard lock(mutex);
      list.push_back(value);
    }
    changed.notify_all();
  }
  // Waits (bounded) until `ready` holds under the lock.
  template <class Pred>
  bool waitUntil(Pred ready) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kTimeout, [&] { return ready(); });
  }
  void open() {
    {
      std::lock_guard lock(mutex);
      release = true;
    }
    changed.notify_all();
  }
};

// Job n: record the start; if `hold`, wait for release; if `spin`, poll the token until it is set.
struct Job {
  int n = 0;
  bool hold = false;
  bool spin = false;
};

using IntWorker = Worker<Job, int>;

IntWorker::Handlers recording(IntWorker& worker, Log& log) {
  return {[&worker, &log](Job& job) {
            log.add(log.started, job.n);
            if (job.hold) log.waitUntil([&] { return log.release; });
            const auto deadline = std::chrono::steady_clock::now() + kTimeout;
            while (job.spin && !worker.cancelToken().cancelled() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
            {
              std::lock_guard lock(log.mutex);
              log.sawCancel.push_back(worker.cancelToken().cancelled());
            }
            log.add(log.finished, job.n);
          },
          {},
          {}};
}

bool waitIdle(IntWorker& worker, Log& log, size_t finished) {
  const bool done = log.waitUntil([&] { return log.finished.size() >= finished; });
  // busy() clears just after the last job returns: a bounded wait for that too.
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (worker.busy() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return done && !worker.busy();
}

// Posts `first`, waits until it runs, then posts plain jobs 2..last while it still runs.
bool postWhileFirstRuns(IntWorker& worker, Log& log, Job first, int last) {
  worker.post(first);
  if (!log.waitUntil([&] { return log.started.size() == 1; })) return false;
  for (int n = 2; n <= last; ++n) worker.post({n, false, false});
  return true;
}

TEST(Worker, LatestWinsDropsSupersededJobs) {
  Log log;
  IntWorker worker(WorkerPolicy::LatestWins);
  worker.start(recording(worker, log));
  ASSERT_TRUE(postWhileFirstRuns(worker, log, {1, true, false}, 5));  // 2, 3, 4 are replaced while 1 runs
  EXPECT_TRUE(worker.busy());
  log.open();
  ASSERT_TRUE(waitIdle(worker, log, 2));
  EXPECT_EQ(log.finished, (std::vector<int>{1, 5}));
  EXPECT_EQ(worker.postedCount(), 5u);
  ASSERT_EQ(log.sawCancel.size(), 2u);
  EXPECT_TRUE(log.sawCancel[0]) << "job 1 ended with a newer job waiting: its token should be set";
  EXPECT_FALSE(log.sawCancel[1]) << "job 5 is the latest: nothing cancelled it";
}

TEST(Worker, CancellationReachesTheRunningJob) {
  Log log;
  IntWorker worker(WorkerPolicy::LatestWins);
  worker.start(recording(worker, log));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(postWhileFirstRuns(worker, log, {1, false, true}, 2));  // 1 spins until cancelled (or the 20 s bound)
  ASSERT_TRUE(waitIdle(worker, log, 2));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kTimeout / 2) << "job 1 ran to its bound instead of seeing the token";
  EXPECT_EQ(log.finished, (std::vector<int>{1, 2}));
  EXPECT_EQ(log.sawCancel, (std::vector<bool>{true, false}));
}

TEST(Worker, QueueRunsEveryJobInOrderWithoutCancelling) {
  Log log;
  IntWorker worker(WorkerPolicy::Queue);
  worker.start(recording(worker, log));
  ASSERT_TRUE(postWhileFirstRuns(worker, log, {1, true, false}, 6));
  log.open();
  ASSERT_TRUE(waitIdle(worker, log, 6));
  EXPECT_EQ(log.finished, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(log.sawCancel, std::vector<bool>(6, false));
}

TEST(Worker, DestructorCancelsAndJoinsARunningJob) {
  Log log;
  const auto t0 = std::chrono::steady_clock::now();
  {
    IntWorker worker(WorkerPolicy::Queue);  // a queue: only the shutdown can set the token
    worker.start(recording(worker, log));
    worker.post({1, false, true});
    worker.post({2, false, false});  // still waiting at the shutdown: dropped
    ASSERT_TRUE(log.waitUntil([&] { return log.started.size() == 1; }));
  }
  // The destructor returned: the job has finished (joined), having seen the token.
  std::lock_guard lock(log.mutex);
  EXPECT_EQ(log.finished, std::vector<int>{1});
  EXPECT_EQ(log.sawCancel, std::vector<bool>{true});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kTimeout / 2);
}

TEST(Worker, ResultsArePublishedInOrder) {
  constexpr int kResults = 2000;
  Worker<int, int> worker(WorkerPolicy::Queue);
  EXPECT_EQ(worker.latest(), nullptr);
  worker.start({[&worker](int& count) {
                  for (int i = 1; i <= count; ++i) worker.publish(std::make_shared<const int>(i));
                },
                {},
                {}});
  worker.post(kResults);
  // Read while it publishes: every value read is at least the one before, and the last is kResults.
  int previous = 0, reads = 0, backwards = 0;
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (previous < kResults && std::chrono::steady_clock::now() < deadline) {
    if (auto value = worker.latest()) {
      if (*value < previous) ++backwards;
      previous = *value;
      ++reads;
    }
  }
  EXPECT_EQ(backwards, 0) << "over " << reads << " reads";
  EXPECT_EQ(previous, kResults);
  EXPECT_EQ(worker.publishedCount(), static_cast<uint64_t>(kResults));
}

TEST(Worker, ProgressCarriesDoneAndTotalTogether) {
  Worker<int, int> worker(WorkerPolicy::Queue);
  EXPECT_EQ(worker.progress().done, 0);
  worker.setProgress(7, 12);
  EXPECT_EQ(worker.progress().done, 7);
  EXPECT_EQ(worker.progress().total, 12);
  worker.setProgress(0, 1 << 30);
  EXPECT_EQ(worker.progress().done, 0);
  EXPECT_EQ(worker.progress().total, 1 << 30);
}

TEST(Worker, IdleWorkRunsBetweenJobsUntilItHasNothingToDo) {
  // Like training: a job (start) sets how many steps to run; idle runs them one at a time, and a
  // job posted meanwhile runs between two steps.
  std::mutex mutex;
  std::condition_variable changed;
  int stepsLeft = 0, steps = 0;
  std::vector<std::string> events;
  Worker<int, int> worker(WorkerPolicy::Queue);
  worker.start({[&](int& n) {
                  std::lock_guard lock(mutex);
                  events.push_back("job " + std::to_string(n));
                  stepsLeft += n;
                },
                [&] {
                  std::lock_guard lock(mutex);
                  if (stepsLeft == 0) return false;
                  --stepsLeft;
                  ++steps;
                  events.push_back("step");
                  changed.notify_all();
                  return true;
                },
                {}});
  worker.post(3);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, kTimeout, [&] { return steps == 3; }));
  }
  worker.post(2);
  std::unique_lock lock(mutex);
  ASSERT_TRUE(changed.wait_for(lock, kTimeout, [&] { return steps == 5; }));
  EXPECT_EQ(events, (std::vector<std::string>{"job 3", "step", "step", "step", "job 2", "step", "step"}));
  EXPECT_EQ(stepsLeft, 0);
}

TEST(Worker, AThrowingJobBecomesAnErrorAndTheWorkerCarriesOn) {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> failures;
  int idleCalls = 0;
  Worker<int, int> worker(WorkerPolicy::Queue);
  worker.start({[&worker](int& n) {
                  if (n == 1) throw std::runtime_error("job 1 failed");
                  if (n == 2) throw 42;  // not a std::exception
                  worker.publish(std::make_shared<const int>(n));
                },
                [&] {
                  {
                    std::lock_guard lock(mutex);
                    ++idleCalls;
                  }
                  changed.notify_all();
                  if (idleCalls == 2) throw std::runtime_error("idle failed");
                  return false;
                },
                [&](const std::string& message) {
                  {
                    std::lock_guard lock(mutex);
                    failures.push_back(message);
                  }
                  changed.notify_all();
                }});
  const auto waitFor = [&](auto ready) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kTimeout, ready);
  };
  // Idle is asked once at the start and again after each job; its second call throws.
  ASSERT_TRUE(waitFor([&] { return idleCalls == 1; }));
  worker.post(1);
  ASSERT_TRUE(waitFor([&] { return failures.size() == 2; }));
  EXPECT_EQ(worker.lastError(), "idle failed");
  worker.post(2);
  worker.post(3);
  ASSERT_TRUE(waitFor([&] { return failures.size() == 3; }));
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while ((worker.busy() || !worker.latest()) && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_NE(worker.latest(), nullptr) << "job 3 did not run after the failures";
  EXPECT_EQ(*worker.latest(), 3);
  std::lock_guard lock(mutex);
  EXPECT_EQ(failures, (std::vector<std::string>{"job 1 failed", "idle failed", "unknown error"}));
  EXPECT_EQ(worker.lastError(), "unknown error");
}

// --- TrainingSession: commands in order, training as the worker's idle work ---------------------

TrainingStart tinyInductionRun(int maxSteps, int pauseAtStep) {
  TrainingStart run;
  run.name = "tiny";
  run.config = tscope::trainConfigFromJson(nlohmann::json::parse(R"({"model": {"n_layer": 1, "n_head": 2, "n_embd": 16,
      "attention_only": true}, "train": {"batch": 4, "lr": 3e-3, "warmup": 2, "eval_every": 5, "eval_batches": 1,
      "checkpoint_every": 0, "seed": 5, "threads": 1}})"));
  run.config.maxSteps = maxSteps;
  run.data = tscope::parseDataSpec("induction:vocab=12,length=6");
  run.pauseAtStep = pauseAtStep;
  return run;
}

// Waits (bounded) for a published view that satisfies `ready`; returns it (or the last one seen).
std::shared_ptr<const TrainingView> waitForView(const TrainingSession& session, const std::function<bool(const TrainingView&)>& ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  auto view = session.latest();
  while (!ready(*view) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    view = session.latest();
  }
  return view;
}

TEST(TrainingSessionOnWorker, PausesAtTheStepSavesResumesAndFinishes) {
  tscope::testing::ScratchDir dir("tscope_training_session");
  TrainingSession session;
  EXPECT_EQ(session.latest()->status, TrainingStatus::Idle);
  session.start(tinyInductionRun(20, 8));
  auto view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Paused; });
  ASSERT_EQ(view->status, TrainingStatus::Paused) << view->message;
  EXPECT_EQ(view->stepsDone, 8);
  EXPECT_EQ(view->trainLoss.size(), 8u);
  const uint64_t pausedVersion = view->version;

  session.save(dir.file("checkpoint"));
  view = waitForView(session, [](const TrainingView& v) { return v.saveCount == 1; });
  ASSERT_EQ(view->saveCount, 1u);
  EXPECT_EQ(view->saveError, "");
  EXPECT_TRUE(std::filesystem::exists(dir.file("checkpoint/model.safetensors")));
  EXPECT_EQ(view->stepsDone, 8) << "a save between steps does not train";
  EXPECT_GT(view->version, pausedVersion);

  session.resume();
  view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Done; });
  ASSERT_EQ(view->status, TrainingStatus::Done) << view->message;
  EXPECT_EQ(view->stepsDone, 20);
  EXPECT_EQ(view->trainLoss.size(), 20u);
  ASSERT_FALSE(view->timeline.empty());
  EXPECT_EQ(view->timeline.back()->step, 20);
}

TEST(TrainingSessionOnWorker, StopEndsARunningRunAndResetForgetsIt) {
  TrainingSession session;
  session.start(tinyInductionRun(1'000'000, 0));
  auto view = waitForView(session, [](const TrainingView& v) { return v.stepsDone >= 3; });
  ASSERT_EQ(view->status, TrainingStatus::Running) << view->message;
  session.stop();
  view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Done; });
  ASSERT_EQ(view->status, TrainingStatus::Done);
  EXPECT_EQ(view->message.rfind("stopped at step ", 0), 0u) << view->message;
  EXPECT_LT(view->stepsDone, 1'000'000);

  session.reset();
  session.save("");  // after the reset there is nothing to save: an error line, no crash
  view = waitForView(session, [](const TrainingView& v) { return v.saveCount == 1; });
  EXPECT_EQ(view->status, TrainingStatus::Idle);
  EXPECT_EQ(view->stepsDone, 0);
  EXPECT_NE(view->saveError.find("nothing to save"), std::string::npos) << view->saveError;
}

TEST(TrainingSessionOnWorker, ABadRunBecomesAnErrorAndTheNextRunTrains) {
  TrainingSession session;
  TrainingStart bad = tinyInductionRun(5, 0);
  bad.config.model.n_head = 3;  // does not divide n_embd 16: the Trainer throws on the worker
  session.start(std::move(bad));
  auto view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Error; });
  ASSERT_EQ(view->status, TrainingStatus::Error);
  EXPECT_NE(view->message.find("n_head"), std::string::npos) << view->message;
  session.start(tinyInductionRun(5, 0));
  view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Done; });
  ASSERT_EQ(view->status, TrainingStatus::Done) << view->message;
  EXPECT_EQ(view->stepsDone, 5);
}

}  // namespace

// The Training panel's digits-vit preset: an image model trains on the worker, its test accuracy and
// the probe digit's attention (17 tokens: [CLS] and 16 patches) in the view.
TEST(TrainingSessionOnWorker, TheDigitsPresetTrainsAnImageModel) {
  if (tscope::defaultDigitsPath().empty()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  const tscope::TrainPreset* preset = tscope::findTrainPreset("digits-vit");
  ASSERT_NE(preset, nullptr);
  TrainingStart run;
  run.name = preset->key;
  run.config = preset->config;
  run.config.maxSteps = 12;
  run.config.warmupSteps = 2;
  run.config.evalEvery = 6;
  run.config.threads = 1;
  run.data = preset->data;
  TrainingSession session;
  session.start(run);
  auto view = waitForView(session, [](const TrainingView& v) { return v.status == TrainingStatus::Done || v.status == TrainingStatus::Error; });
  ASSERT_EQ(view->status, TrainingStatus::Done) << view->message;
  ASSERT_FALSE(view->accuracy.empty());
  EXPECT_GE(view->accuracy.back(), 0.0f);
  EXPECT_LE(view->accuracy.back(), 1.0f);
  ASSERT_FALSE(view->timeline.empty());
  EXPECT_EQ(view->timeline.back()->T, 17);
  EXPECT_EQ(view->timeline.back()->H, 4);
}

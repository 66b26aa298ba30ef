// The App's task channels (app/session/tasks.h): a newer task cancels the running one of its
// channel and replaces a waiting one; channels run side by side (a long task in one does not hold
// up another); partial results are published as they come; a Queue channel runs every task in
// order; asking for a channel with another result type throws; a task that throws leaves its
// message; destroying Tasks cancels and joins a running task.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "app/session/tasks.h"

using namespace tscope::session;

namespace {

constexpr auto kTimeout = std::chrono::seconds(20);  // bounds every wait; never reached when it works

template <class Predicate>
bool waitFor(Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::atomic<bool> kReleased{true};

// A task that runs until cancelled and `release` is set (or kTimeout), then records whether it saw the cancel.
auto untilCancelled(std::atomic<bool>& started, std::atomic<bool>& sawCancel, std::atomic<bool>& release = kReleased) {
  return [&started, &sawCancel, &release](TaskScope<int>& scope) {
    started = true;
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (!(scope.cancelled() && release) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sawCancel = scope.cancelled();
  };
}

}  // namespace

TEST(Tasks, ANewerTaskCancelsTheRunningOneAndReplacesAWaitingOne) {
  Tasks tasks;
  TaskChannel<int>& channel = tasks.channel<int>("maps");
  std::atomic<bool> started{false}, sawCancel{false}, release{false};
  channel.post(untilCancelled(started, sawCancel, release));
  ASSERT_TRUE(waitFor([&] { return started.load(); }));
  std::atomic<int> ran{0};
  channel.post([&ran](TaskScope<int>& scope) { ++ran, scope.publish(std::make_shared<int>(2)); });  // replaced before it runs...
  channel.post([&ran](TaskScope<int>& scope) { ++ran, scope.publish(std::make_shared<int>(3)); });  // ...by this one
  release = true;
  ASSERT_TRUE(waitFor([&] { return !channel.busy(); }));
  EXPECT_FALSE(tasks.busy());  // no channel has work left
  EXPECT_TRUE(sawCancel);
  EXPECT_EQ(ran, 1);
  ASSERT_TRUE(channel.latest());
  EXPECT_EQ(*channel.latest(), 3);
}

TEST(Tasks, ChannelsRunSideBySideAndPublishPartialResults) {
  Tasks tasks;
  std::atomic<bool> started{false}, sawCancel{false};
  tasks.channel<int>("cost").post(untilCancelled(started, sawCancel));
  ASSERT_TRUE(waitFor([&] { return started.load(); }));
  // Another channel answers while "cost" is still running.
  TaskChannel<std::string>& open = tasks.channel<std::string>("open model");
  open.post([](TaskScope<std::string>& scope) {
    for (int i = 1; i <= 3; ++i) {
      scope.progress(i, 3);
      scope.publish(std::make_shared<std::string>(std::to_string(i)));
    }
  });
  ASSERT_TRUE(waitFor([&] { return !open.busy(); }));
  EXPECT_TRUE(tasks.channel<int>("cost").busy());
  EXPECT_TRUE(tasks.busy());  // "cost" still runs
  ASSERT_TRUE(open.latest());
  EXPECT_EQ(*open.latest(), "3");
  EXPECT_EQ(open.progress().done, 3);
  EXPECT_EQ(open.progress().total, 3);
  EXPECT_FALSE(sawCancel);
}

TEST(Tasks, AQueueChannelRunsEveryTaskInOrder) {
  Tasks tasks;
  TaskChannel<int>& channel = tasks.channel<int>("close model", WorkerPolicy::Queue);
  std::vector<int> order;  // written by the task thread only, read after it is idle
  for (int i = 0; i < 5; ++i) channel.post([i, &order](TaskScope<int>&) { order.push_back(i); });
  ASSERT_TRUE(waitFor([&] { return !channel.busy(); }));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Tasks, TheSameNameIsTheSameChannelAndAnotherResultTypeThrows) {
  Tasks tasks;
  EXPECT_EQ(&tasks.channel<int>("merges"), &tasks.channel<int>("merges"));
  EXPECT_NE(&tasks.channel<int>("merges"), &tasks.channel<int>("maps"));
  EXPECT_THROW(tasks.channel<std::string>("merges"), std::logic_error);
}

TEST(Tasks, ATaskThatThrowsLeavesItsMessageAndTheChannelGoesOn) {
  Tasks tasks;
  TaskChannel<int>& channel = tasks.channel<int>("merges");
  channel.post([](TaskScope<int>&) { throw std::runtime_error("bad word"); });
  ASSERT_TRUE(waitFor([&] { return !channel.busy(); }));
  EXPECT_EQ(channel.lastError(), "bad word");
  EXPECT_FALSE(channel.latest());
  channel.post([](TaskScope<int>& scope) { scope.publish(std::make_shared<int>(7)); });
  ASSERT_TRUE(waitFor([&] { return channel.latest() != nullptr; }));
  EXPECT_EQ(*channel.latest(), 7);
}

TEST(Tasks, DestroyingTasksCancelsAndJoinsTheRunningTask) {
  std::atomic<bool> started{false}, sawCancel{false};
  {
    Tasks tasks;
    tasks.channel<int>("cost").post(untilCancelled(started, sawCancel));
    ASSERT_TRUE(waitFor([&] { return started.load(); }));
  }  // joins: the task has ended when the destructor returns
  EXPECT_TRUE(sawCancel);
}

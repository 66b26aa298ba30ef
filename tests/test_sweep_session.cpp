// SweepSession (app/session/sweep_session.h), the scaling lab's worker: a broken sweep.json is one
// line of error with the session alive; the "tiny" preset starts into a directory, pauses (no step
// moves while paused), resumes and finishes with every run's result and the fits published; a
// finished sweep reopens from its directory; a shipped sweep is shown but never run.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "app/session/sweep_session.h"
#include "tests/test_files.h"

namespace tscope::session {
namespace {

using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

// Polls the session's views until `ready` holds; the last view (a test failure after `seconds`).
std::shared_ptr<const SweepView> waitFor(const SweepSession& session, const std::function<bool(const SweepView&)>& ready, double seconds,
                                         const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::shared_ptr<const SweepView> view = session.latest();
  while (!ready(*view)) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out waiting for " << what << "; status " << toString(view->status) << ": " << view->message;
      return view;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    view = session.latest();
  }
  return view;
}

TEST(SweepSession, BrokenSweepFileIsOneLineOfError) {
  ScratchDir dir("tscope_sweep_session");
  const std::string path = dir.file("sweep.json");
  writeBytes(path, R"({"format": "tscope-sweep", "version": 1, "spec": {)");
  SweepSession session;
  session.open(path);
  const auto view = waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Error; }, 10, "the error");
  EXPECT_NE(view->message.find("sweep.json"), std::string::npos) << view->message;
  EXPECT_EQ(view->message.find('\n'), std::string::npos) << view->message;
  EXPECT_EQ(view->results, nullptr);
  session.open(dir.file("no_such_sweep"));  // the worker carries on after an error
  const auto missing = waitFor(
      session, [](const SweepView& v) { return v.message.find("no_such_sweep") != std::string::npos; }, 10, "the missing sweep's error");
  EXPECT_EQ(missing->status, SweepState::Error);
}

TEST(SweepSession, TinyPresetPausesResumesFinishesAndFits) {
  ScratchDir dir("tscope_sweep_session");
  const std::string sweepDir = dir.file("tiny");
  SweepSession session;
  session.start("tiny", sweepDir);
  waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Running && v.step >= 1; }, 60, "the first step");
  session.pause();
  const auto paused = waitFor(
      session, [](const SweepView& v) { return v.status != SweepState::Running; }, 30, "the pause");
  ASSERT_EQ(paused->status, SweepState::Paused) << paused->message;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto still = session.latest();
  EXPECT_EQ(still->step, paused->step);
  EXPECT_EQ(still->runsDone, paused->runsDone);
  EXPECT_EQ(still->version, paused->version);

  session.resume();
  const auto done = waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Done || v.status == SweepState::Error; }, 600, "the tiny sweep to finish");
  ASSERT_EQ(done->status, SweepState::Done) << done->message;
  ASSERT_NE(done->results, nullptr);
  EXPECT_GE(done->runs, 2);
  EXPECT_EQ(done->runsDone, done->runs);
  EXPECT_EQ(static_cast<int>(done->results->runs.size()), done->runs);
  ASSERT_NE(done->fits, nullptr);
  EXPECT_EQ(done->fits->points.size(), done->results->runs.size());
  EXPECT_FALSE(done->readOnly);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(sweepDir) / "sweep.json"));

  // Reopened from its directory: every run there, nothing left to resume.
  SweepSession again;
  again.open(sweepDir);
  const auto reopened = waitFor(
      again, [](const SweepView& v) { return v.status != SweepState::Empty; }, 30, "the reopened sweep");
  EXPECT_EQ(reopened->status, SweepState::Done) << reopened->message;
  ASSERT_NE(reopened->results, nullptr);
  EXPECT_EQ(reopened->results->runs.size(), done->results->runs.size());
  again.resume();
  const auto refused = waitFor(
      again, [](const SweepView& v) { return v.status == SweepState::Error; }, 10, "the refused resume");
  EXPECT_NE(refused->message.find("finished"), std::string::npos) << refused->message;
  EXPECT_EQ(refused->results, reopened->results);  // the sweep on screen stays
}

TEST(SweepSession, ShippedSweepIsShownNeverRun) {
  const auto shipped = shippedSweeps();
  if (shipped.empty()) GTEST_SKIP() << "no sweep shipped in assets/sweeps yet";
  SweepSession session;
  session.open(shipped.front().second);
  const auto view = waitFor(
      session, [](const SweepView& v) { return v.status != SweepState::Empty; }, 60, "the shipped sweep");
  ASSERT_EQ(view->status, SweepState::Viewing) << view->message;
  EXPECT_TRUE(view->readOnly);
  ASSERT_NE(view->results, nullptr);
  EXPECT_FALSE(view->results->runs.empty());
  session.resume();
  const auto refused = waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Error; }, 10, "the refused resume");
  EXPECT_NE(refused->message.find("read-only"), std::string::npos) << refused->message;
}

// A text file as the data of a preset's grid, extended while it runs: the new size's runs train
// too, on the file (the sweep's spec names it), and nothing else retrains. A bad file, or a file
// for a task preset, is one line before anything is written.
TEST(SweepSession, TextFileSweepExtendsWhileRunning) {
  ScratchDir dir("tscope_sweep_session");
  const std::string text = dir.file("notes.txt");
  std::string body;
  const char* words[] = {"light", "moves", "through", "glass", "and", "water",  "slows",  "it", "bends", "towards", "the",  "normal",
                         "while", "sound", "needs",   "air",   "to",  "travel", "faster", "in", "steel", "than",    "wood", "waves"};
  uint32_t state = 12345;
  for (int paragraph = 0; paragraph < 300; ++paragraph) {
    for (int w = 0; w < 40; ++w) {
      state = state * 1664525u + 1013904223u;
      body += std::string(words[(state >> 16) % 24]) + (w % 10 == 9 ? ".\n" : " ");
    }
    body += "\n";
  }
  writeBytes(text, body);
  const std::string sweepDir = dir.file("notes_sweep");
  SweepSession session;

  session.start("addition", dir.file("refused"), text);
  const auto task = waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Error; }, 10, "the refused task preset");
  EXPECT_NE(task->message.find("own task"), std::string::npos) << task->message;
  const std::string latin1 = dir.file("latin1.txt");
  writeBytes(latin1, "caf\xe9 au lait");
  session.start("tiny", dir.file("refused2"), latin1);
  const auto bad = waitFor(
      session, [&](const SweepView& v) { return v.message.find("latin1.txt") != std::string::npos; }, 10, "the bad file");
  EXPECT_EQ(bad->status, SweepState::Error);
  EXPECT_NE(bad->message.find("UTF-8"), std::string::npos) << bad->message;
  EXPECT_FALSE(std::filesystem::exists(dir.file("refused")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("refused2")));

  session.start("tiny", sweepDir, text);
  // Extended while it runs (or, on a fast machine, after it finished: then Resume runs the new runs).
  const auto running = waitFor(
      session, [](const SweepView& v) { return (v.status == SweepState::Running && v.step >= 1) || v.status == SweepState::Done; }, 120,
      "the first step");
  ASSERT_NE(running->status, SweepState::Error) << running->message;
  EXPECT_FALSE(running->device.empty());
  if (running->status == SweepState::Running) {
    ASSERT_EQ(running->active.size(), 1u);  // the CPU: one run at a time
    EXPECT_EQ(running->active.front().name, running->current);
  }
  const int before = running->runs;
  session.extend({SweepSize{1, 40, 2, 0}}, {});
  // The sweep may finish between the view above and the worker taking the extension (a loaded
  // machine): then, as after a finished one, the extended sweep waits paused for Resume.
  auto settled = waitFor(
      session,
      [&](const SweepView& v) {
        return v.runs > before && (v.status == SweepState::Done || v.status == SweepState::Error || v.status == SweepState::Paused);
      },
      600, "the extended sweep to finish or pause");
  if (settled->status == SweepState::Paused) {
    EXPECT_GT(settled->runs, settled->runsDone);
    session.resume();
  }
  const auto done = waitFor(
      session, [](const SweepView& v) { return v.status == SweepState::Done || v.status == SweepState::Error; }, 600, "the extended sweep to finish");
  ASSERT_EQ(done->status, SweepState::Done) << done->message;
  ASSERT_NE(done->results, nullptr);
  const SweepSpec& spec = done->results->spec;
  EXPECT_EQ(done->runs, before + static_cast<int>(spec.tokens.size()));
  EXPECT_EQ(static_cast<int>(done->results->runs.size()), done->runs);
  EXPECT_EQ(spec.data.textPath, std::filesystem::absolute(text).lexically_normal().string());
  EXPECT_NE(spec.title.find("notes.txt"), std::string::npos) << spec.title;
  int names = 0;
  for (const SweepRunResult& run : done->results->runs) names += run.name.rfind("L1-d40-", 0) == 0;
  EXPECT_EQ(names, static_cast<int>(spec.tokens.size()));
  EXPECT_EQ(loadSweep(sweepDir).runs.size(), done->results->runs.size());
}

}  // namespace
}  // namespace tscope::session

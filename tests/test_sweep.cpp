// Scaling sweeps (model/train/sweep.h): the spec's rules, the grid and its order, the file's round
// trip and every refusal, and the runner: the tiny preset trains every run, a sweep stopped in the
// middle of a run resumes to the same bits, and an extension trains only the new runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "model/theory/cost.h"
#include "model/train/sweep.h"
#include "model/train/train_presets.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
using tscope::testing::ScratchDir;

namespace tscope {
namespace {

SweepSpec tinySpec() { return findSweepPreset("tiny")->spec; }

SweepRunResult fakeRun(const SweepRunPlan& plan, double loss) {
  SweepRunResult r;
  r.name = plan.name;
  r.size = plan.size;
  r.tokens = plan.tokens;
  r.steps = plan.config.maxSteps;
  r.paramsNonEmbedding = 1000 * plan.size.dModel;
  r.paramsTotal = 3000 * plan.size.dModel;
  r.trainLoss = loss - 0.1;
  r.valLoss = loss;
  r.evalSteps = {r.steps};
  r.evalLoss = {static_cast<float>(loss)};
  r.seconds = 2;
  r.tokensPerSecond = 1000;
  return r;
}

TEST(SweepSpec, PresetsAreValidAndSpanTheirSizes) {
  for (const SweepPreset& preset : sweepPresets()) EXPECT_EQ(validateSweepSpec(preset.spec), "") << preset.key;
  const SweepSpec& brown = findSweepPreset("brown")->spec;
  ASSERT_GE(brown.sizes.size(), 5u);
  std::vector<double> n;
  for (const SweepRunPlan& plan : planSweep(brown)) n.push_back(countParameters(resolvedModelConfig(plan.config, brown.data)).nonEmbedding);
  EXPECT_GE(*std::max_element(n.begin(), n.end()) / *std::min_element(n.begin(), n.end()), 30.0);  // the 30x
  EXPECT_EQ(findSweepPreset("nope"), nullptr);
}

TEST(SweepSpec, RefusesBadSpecsWithOneLine) {
  SweepSpec s = tinySpec();
  s.sizes.clear();
  EXPECT_NE(validateSweepSpec(s).find("model size"), std::string::npos);
  s = tinySpec();
  s.tokens.clear();
  EXPECT_NE(validateSweepSpec(s).find("token budget"), std::string::npos);
  s = tinySpec();
  s.sizes.push_back(s.sizes[0]);
  EXPECT_NE(validateSweepSpec(s).find("twice"), std::string::npos);
  s = tinySpec();
  s.tokens.push_back(s.tokens[0]);
  EXPECT_NE(validateSweepSpec(s).find("twice"), std::string::npos);
  s = tinySpec();
  s.sizes.push_back({1, 30, 4, 0});  // 30 does not divide by 4
  EXPECT_NE(validateSweepSpec(s).find("L1-d30"), std::string::npos);
  s = tinySpec();
  for (int i = 0; i < 40; ++i) s.tokens.push_back(100000 + i);
  EXPECT_NE(validateSweepSpec(s).find("at most"), std::string::npos);
  s = tinySpec();
  s.taskExamples = 10;  // text data has no answers to score
  EXPECT_NE(validateSweepSpec(s).find("task"), std::string::npos);
}

TEST(SweepSpec, ParsesSizesAndBudgets) {
  EXPECT_EQ(parseSweepSize("L2-d64").nHead, 4);
  EXPECT_EQ(parseSweepSize("L3-d96-h3").nHead, 3);
  EXPECT_EQ(parseSweepSize("L3-d96-h3").nLayer, 3);
  expectMentions(errorMessage([] { parseSweepSize("2x64"); }), {"2x64", "L<layers>"});
  expectMentions(errorMessage([] { parseSweepSize("L2-d64x"); }), {"L2-d64x"});
  expectMentions(errorMessage([] { parseSweepSize("L0-d64"); }), {"positive"});
  EXPECT_EQ(parseTokenCount("250K"), 250000);
  EXPECT_EQ(parseTokenCount("1.5M"), 1500000);
  EXPECT_EQ(parseTokenCount("4096"), 4096);
  expectMentions(errorMessage([] { parseTokenCount("1.5"); }), {"whole number"});
  expectMentions(errorMessage([] { parseTokenCount("3Q"); }), {"suffix"});
  expectMentions(errorMessage([] { parseTokenCount(""); }), {"not a number"});
}

TEST(SweepPlan, GridIsCheapestFirstWithStepsFromTheBudget) {
  const SweepSpec spec = tinySpec();
  const std::vector<SweepRunPlan> plans = planSweep(spec);
  ASSERT_EQ(plans.size(), spec.sizes.size() * spec.tokens.size());
  std::set<std::string> names;
  double last = 0;
  for (const SweepRunPlan& plan : plans) {
    names.insert(plan.name);
    const ModelConfig model = resolvedModelConfig(plan.config, spec.data);
    EXPECT_EQ(model.n_layer, plan.size.nLayer);
    EXPECT_EQ(model.n_embd, plan.size.dModel);
    const double perStep = static_cast<double>(plan.config.batch) * model.n_positions;
    EXPECT_NEAR(plan.config.maxSteps * perStep, static_cast<double>(plan.tokens), perStep / 2) << plan.name;
    const double flops = static_cast<double>(countParameters(model).nonEmbedding) * static_cast<double>(plan.tokens);
    EXPECT_GE(flops, last) << plan.name;
    last = flops;
  }
  EXPECT_EQ(names.size(), plans.size());
  EXPECT_TRUE(names.count("L1-d16-4K"));
}

TEST(SweepFile, RoundTripsAndRefusesBadFiles) {
  SweepResults sweep;
  sweep.spec = tinySpec();
  sweep.machine = "test machine";
  const std::vector<SweepRunPlan> plans = planSweep(sweep.spec);
  sweep.runs = {fakeRun(plans[0], 5.0), fakeRun(plans[1], 4.5)};
  sweep.runs[1].task = TaskScores{10, 0.3, 1.2, 0.7};
  const json j = sweepToJson(sweep);
  const SweepResults back = sweepFromJson(j);
  EXPECT_EQ(sweepToJson(back), j);
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_TRUE(back.runs[1].task.has_value());
  EXPECT_DOUBLE_EQ(back.runs[1].task->exactMatch, 0.3);
  const std::vector<ScalingPoint> points = sweepPoints(back);
  EXPECT_DOUBLE_EQ(points[0].params, static_cast<double>(sweep.runs[0].paramsNonEmbedding));
  EXPECT_DOUBLE_EQ(points[1].loss, 4.5);

  auto refused = [&](const std::function<void(json&)>& edit) {
    json bad = j;
    edit(bad);
    return errorMessage([&] { sweepFromJson(bad); });
  };
  expectMentions(refused([](json& b) { b["format"] = "other"; }), {"format"});
  expectMentions(refused([](json& b) { b["version"] = 2; }), {"version 2"});
  expectMentions(refused([](json& b) { b["runs"][0]["name"] = "L9-d9-1K"; }), {"L9-d9-1K", "grid"});
  expectMentions(refused([](json& b) { b["runs"][1] = b["runs"][0]; }), {"twice"});
  expectMentions(refused([](json& b) { b["runs"][0]["val_loss"] = -1; }), {"val_loss"});
  expectMentions(refused([](json& b) { b["runs"][0]["eval_loss"] = json::array(); }), {"eval_steps", "eval_loss"});
  expectMentions(refused([](json& b) { b["runs"][0]["tokens"] = 1.5; }), {"tokens", "integer"});
  expectMentions(refused([](json& b) { b["runs"][1]["task"]["exact_match"] = 2; }), {"outside"});
  expectMentions(refused([](json& b) { b["spec"]["sizes"] = json::array(); }), {"model size"});
  expectMentions(refused([](json& b) { b["spec"]["params"] = "some"; }), {"params"});
  expectMentions(refused([](json& b) { b["spec"]["data"] = "nonsense"; }), {"data"});
  expectMentions(refused([](json& b) { b["spec"]["train_config"]["train"]["bogus"] = 1; }), {"bogus"});

  ScratchDir dir;
  saveSweep(sweep, dir.file("sweep.json"));
  EXPECT_EQ(loadSweep(dir.path().string()).runs.size(), 2u);  // a directory or its file
  tscope::testing::writeBytes(dir.file("broken.json"), "{\"format\": ");
  expectMentions(errorMessage([&] { loadSweep(dir.file("broken.json")); }), {"broken.json", "not JSON"});
  expectMentions(errorMessage([&] { loadSweep(dir.file("missing.json")); }), {"missing.json"});
}

TEST(SweepFile, CsvHasOneRowPerRunAndTaskColumnsWhenScored) {
  SweepResults sweep;
  sweep.spec = tinySpec();
  const std::vector<SweepRunPlan> plans = planSweep(sweep.spec);
  sweep.runs = {fakeRun(plans[0], 5.0), fakeRun(plans[1], 4.5)};
  std::string csv = sweepRunsCsv(sweep);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.find("exact_match"), std::string::npos);
  EXPECT_NE(csv.find(plans[1].name + ","), std::string::npos);
  sweep.runs[0].task = TaskScores{5, 0.2, 1.0, 0.5};
  csv = sweepRunsCsv(sweep);
  EXPECT_NE(csv.find("exact_match"), std::string::npos);
  EXPECT_NE(csv.find(",0.20000000000000001,"), std::string::npos);
}

// Runs the sweep in `dir` to the end (or maxSteps calls of step(), then checkpoints); returns the
// calls of step() made.
int runToEnd(const std::string& dir, int maxSteps = 1 << 30, SweepRunOptions options = {1, nullptr, 1}) {
  SweepRunner runner(dir, options);
  int steps = 0;
  while (!runner.status().done && steps < maxSteps) {
    runner.step();
    ++steps;
  }
  if (!runner.status().done) runner.checkpoint();
  return steps;
}

TEST(SweepRunner, TrainsEveryRunResumesExactlyAndExtends) {
  if (defaultBrownCorpusDir().empty()) GTEST_SKIP() << "the Brown corpus is not installed";
  ScratchDir whole, stopped;
  SweepSpec spec = tinySpec();
  spec.tokens = {4000};  // 3 runs
  createSweep(whole.path().string(), spec);
  createSweep(stopped.path().string(), spec);
  expectMentions(errorMessage([&] { createSweep(whole.path().string(), spec); }), {"already exists"});

  int total = runToEnd(whole.path().string());
  const SweepResults done = loadSweep(whole.path().string());
  ASSERT_EQ(done.runs.size(), 3u);
  int planned = 0;
  for (const SweepRunPlan& plan : planSweep(spec)) planned += plan.config.maxSteps;
  EXPECT_EQ(total, planned);
  for (const SweepRunResult& run : done.runs) {
    EXPECT_TRUE(std::filesystem::exists(whole.path() / "runs" / run.name / "model.safetensors")) << run.name;
    EXPECT_GT(run.valLoss, 0);
    EXPECT_LT(run.valLoss, std::log(512.0) + 0.5) << run.name;  // learned something of the 512-token BPE
    EXPECT_EQ(run.evalSteps.back(), run.steps);
  }
  // Stopped in the middle of the second run, then continued by a new runner: the same bits.
  const int first = planSweep(spec)[0].config.maxSteps;
  runToEnd(stopped.path().string(), first + 5);
  EXPECT_EQ(loadSweep(stopped.path().string()).runs.size(), 1u);
  runToEnd(stopped.path().string());
  const SweepResults resumed = loadSweep(stopped.path().string());
  ASSERT_EQ(resumed.runs.size(), 3u);
  for (const SweepRunResult& run : done.runs) {
    const SweepRunResult* other = resumed.find(run.name);
    ASSERT_NE(other, nullptr) << run.name;
    EXPECT_EQ(other->valLoss, run.valLoss) << run.name;
    EXPECT_EQ(other->trainLoss, run.trainLoss) << run.name;
  }
  // Extending adds a budget: only the three new runs train.
  const SweepSpec extended = extendSweep(whole.path().string(), {}, {8000});
  EXPECT_EQ(extended.tokens.size(), 2u);
  int extra = 0;
  for (const SweepRunPlan& plan : planSweep(extended))
    if (plan.tokens == 8000) extra += plan.config.maxSteps;
  EXPECT_EQ(runToEnd(whole.path().string()), extra);
  EXPECT_EQ(loadSweep(whole.path().string()).runs.size(), 6u);
  expectMentions(errorMessage([&] { extendSweep(whole.path().string(), {{1, 30, 4, 0}}, {}); }), {"L1-d30"});
}

// Several runs at once (each on its own thread and device, as on a GPU): every run ends with the
// same bits as when the runs go one after another, stopping in the middle (three runs checkpointed
// at once) and going on one at a time changes nothing, and at most `parallel` runs are in progress.
TEST(SweepRunner, RunsAtOnceGiveTheSameRuns) {
  if (defaultBrownCorpusDir().empty()) GTEST_SKIP() << "the Brown corpus is not installed";
  ScratchDir sequential, together, stopped;
  SweepSpec spec = tinySpec();
  spec.tokens = {4000};  // 3 runs of different sizes
  for (const ScratchDir* dir : {&sequential, &together, &stopped}) createSweep(dir->path().string(), spec);
  runToEnd(sequential.path().string());
  const SweepRunOptions atOnce{0, [] { return makeCpuDevice(1); }, 3};
  {
    SweepRunner runner(together.path().string(), atOnce);
    EXPECT_EQ(runner.parallel(), 3);
    int calls = 0;
    size_t most = 0;
    while (!runner.status().done) {
      const SweepStatus status = runner.step();
      most = std::max(most, status.active.size());
      EXPECT_LE(status.active.size(), 3u);
      if (!status.active.empty()) {
        EXPECT_EQ(status.current, status.active.front().name);
      }
      ++calls;
    }
    EXPECT_EQ(most, 3u);
    int longest = 0;
    for (const SweepRunPlan& plan : planSweep(spec)) longest = std::max(longest, plan.config.maxSteps);
    EXPECT_EQ(calls, longest);  // every call stepped every run in progress
  }
  runToEnd(stopped.path().string(), 3, atOnce);  // three calls: every run checkpointed after 3 steps
  EXPECT_EQ(loadSweep(stopped.path().string()).runs.size(), 0u);
  runToEnd(stopped.path().string());
  const SweepResults one = loadSweep(sequential.path().string());
  for (const ScratchDir* dir : {&together, &stopped}) {
    const SweepResults other = loadSweep(dir->path().string());
    ASSERT_EQ(other.runs.size(), one.runs.size());
    for (const SweepRunResult& run : one.runs) {
      const SweepRunResult* same = other.find(run.name);
      ASSERT_NE(same, nullptr) << run.name;
      EXPECT_EQ(same->valLoss, run.valLoss) << run.name;
      EXPECT_EQ(same->trainLoss, run.trainLoss) << run.name;
      EXPECT_EQ(same->evalLoss, run.evalLoss) << run.name;
    }
  }
  expectMentions(errorMessage([&] { SweepRunner(sequential.path().string(), SweepRunOptions{0, nullptr, 0}); }), {"at least 1"});
}

}  // namespace
}  // namespace tscope

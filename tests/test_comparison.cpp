// Training comparisons (model/train/comparison.h): the file round-trips, every validation rule
// refuses its bad file with one line naming the problem, saving leaves no temporary file, and
// runComparison trains two tiny presets into curves of the right lengths whose losses fall.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "model/theory/cost.h"
#include "model/train/comparison.h"
#include "model/train/train_presets.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;

namespace tscope {
namespace {

ComparedRun handMadeRun(const std::string& key) {
  const TrainPreset* preset = findTrainPreset(key);
  ComparedRun run;
  run.label = preset->key;
  run.name = preset->name;
  run.config = configWithSteps(preset->config, 6);
  run.config.model = resolvedModelConfig(run.config, preset->data);
  run.data = toString(preset->data);
  run.parameters = 1234;
  run.trainLoss = {3.3f, 3.1f, 2.9f, 2.8f, 2.6f, 2.5f};
  run.evalSteps = {3, 6};
  run.valLoss = {3.0f, 2.55f};
  run.seconds = 1.5;
  run.tokensPerSecond = 4000;
  return run;
}

TrainingComparison handMade() {
  return {"Copy against reverse",
          "Two tasks.",
          "tscope-cli compare --presets copy,reverse",
          "a laptop",
          "2026-11-24",
          {handMadeRun("copy"), handMadeRun("reverse")}};
}

TEST(Comparison, RoundTripsThroughJson) {
  const json written = comparisonToJson(handMade());
  const TrainingComparison read = comparisonFromJson(json::parse(written.dump()));
  EXPECT_EQ(comparisonToJson(read), written);
  ASSERT_EQ(read.runs.size(), 2u);
  EXPECT_EQ(read.runs[1].label, "reverse");
  EXPECT_EQ(read.runs[0].evalSteps, (std::vector<int>{3, 6}));
  EXPECT_EQ(read.runs[0].config.model.vocab_size, handMade().runs[0].config.model.vocab_size);
  EXPECT_EQ(written["format"], "tscope-training-comparison");
  EXPECT_EQ(written["version"], 1);
}

// Each edit of a good file, and words its one-line error must contain.
struct BadCase {
  const char* what;
  std::function<void(json&)> edit;
  std::vector<std::string> mentions;
};

TEST(Comparison, EveryRuleRefusesWithOneLine) {
  const json run17 = comparisonToJson(handMade())["runs"][0];
  const std::vector<BadCase> cases = {
      {"format", [](json& j) { j["format"] = "tscope-session"; }, {"format", "tscope-session"}},
      {"version", [](json& j) { j["version"] = 2; }, {"version 2"}},
      {"fractional version", [](json& j) { j["version"] = 1.5; }, {"version"}},
      {"no runs", [](json& j) { j["runs"] = json::array(); }, {"no runs"}},
      {"runs not an array", [](json& j) { j["runs"] = 3; }, {"runs"}},
      {"17 runs",
       [&](json& j) {
         j["runs"] = json::array();
         for (int i = 0; i < 17; ++i) j["runs"].push_back(run17);
       },
       {"17 runs", "16"}},
      {"lengths", [](json& j) { j["runs"][1]["val_loss"].push_back(2.0); }, {"run 1", "reverse", "2 eval_steps", "3 val_loss"}},
      {"not increasing",
       [](json& j) {
         j["runs"][0]["eval_steps"] = {4, 4};
       },
       {"run 0", "not increasing"}},
      {"beyond the run",
       [](json& j) {
         j["runs"][0]["eval_steps"] = {3, 7};
       },
       {"eval_steps[1] = 7", "beyond", "6 steps"}},
      {"negative step",
       [](json& j) {
         j["runs"][0]["eval_steps"] = {-1, 6};
       },
       {"eval_steps[0] = -1"}},
      {"more steps than the config", [](json& j) { j["runs"][0]["train_loss"].push_back(2.4); }, {"7 train_loss", "6 steps"}},
      {"no steps",
       [](json& j) {
         j["runs"][0]["train_loss"] = json::array();
         j["runs"][0]["eval_steps"] = json::array();
         j["runs"][0]["val_loss"] = json::array();
       },
       {"no train_loss"}},
      {"NaN loss", [](json& j) { j["runs"][0]["val_loss"][1] = std::numeric_limits<double>::quiet_NaN(); }, {"val_loss\"[1]", "finite"}},
      {"infinite loss", [](json& j) { j["runs"][1]["train_loss"][0] = std::numeric_limits<double>::infinity(); }, {"train_loss\"[0]"}},
      {"null loss", [](json& j) { j["runs"][1]["train_loss"][2] = nullptr; }, {"train_loss\"[2]", "not a number"}},
      {"infinite seconds", [](json& j) { j["runs"][0]["seconds"] = std::numeric_limits<double>::infinity(); }, {"seconds"}},
      {"bad train_config", [](json& j) { j["runs"][0]["train_config"]["train"]["batch"] = 0; }, {"run 0", "train_config", "batch"}},
      {"unknown train_config key", [](json& j) { j["runs"][0]["train_config"]["train"]["bach"] = 4; }, {"train_config", "bach"}},
      {"bad data", [](json& j) { j["runs"][0]["data"] = "wikipedia"; }, {"run 0", "data", "wikipedia"}},
      {"missing label", [](json& j) { j["runs"][0].erase("label"); }, {"run 0", "label"}},
      {"run not an object", [](json& j) { j["runs"][1] = "copy"; }, {"run 1", "not an object"}},
      {"not an object", [](json& j) { j = json::array(); }, {"object"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    json j = comparisonToJson(handMade());
    c.edit(j);
    const std::string message = errorMessage([&] { comparisonFromJson(j); });
    EXPECT_FALSE(message.empty());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : c.mentions) EXPECT_NE(message.find(part), std::string::npos) << message << " lacks " << part;
  }
}

TEST(Comparison, SavesAtomicallyAndLoadsBack) {
  tscope::testing::ScratchDir dir("tscope_comparison");
  const std::string path = dir.file("copy_reverse.json");
  saveComparison(handMade(), path);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"copy_reverse.json"}) << "a temporary file was left behind";
  EXPECT_EQ(comparisonToJson(loadComparison(path)), comparisonToJson(handMade()));
}

TEST(Comparison, LoadNamesTheFileAndRefusesHugeOnes) {
  tscope::testing::ScratchDir dir("tscope_comparison");
  tscope::testing::writeBytes(dir.file("broken.json"), "{\"format\": ");
  expectMentions(errorMessage([&] { loadComparison(dir.file("broken.json")); }), {"broken.json", "not JSON"});
  json wrong = comparisonToJson(handMade());
  wrong["version"] = 7;
  tscope::testing::writeBytes(dir.file("v7.json"), wrong.dump());
  expectMentions(errorMessage([&] { loadComparison(dir.file("v7.json")); }), {"v7.json", "version 7"});
  expectMentions(errorMessage([&] { loadComparison(dir.file("absent.json")); }), {"absent.json", "cannot read"});
  tscope::testing::writeBytes(dir.file("huge.json"), "{}");
  std::filesystem::resize_file(dir.file("huge.json"), kMaxComparisonFileBytes + 1);  // sparse: no 64 MB written
  expectMentions(errorMessage([&] { loadComparison(dir.file("huge.json")); }), {"huge.json", "64 MB"});
}

TEST(Comparison, TheFuzzSeedIsAValidFile) {
  const TrainingComparison c = loadComparison(std::string(TSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/comparison/two-runs");
  ASSERT_EQ(c.runs.size(), 2u);
  EXPECT_EQ(c.runs[1].label, "reverse");
  expectMentions(errorMessage([] { loadComparison(std::string(TSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/comparison/eval-beyond-run"); }),
                 {"eval_steps[0] = 3", "beyond"});
}

TEST(Comparison, ConfigWithStepsScalesTheSchedule) {
  TrainConfig preset;
  preset.maxSteps = 400;
  preset.warmupSteps = 40;
  preset.evalEvery = 13;
  const TrainConfig shorter = configWithSteps(preset, 30);
  EXPECT_EQ(shorter.maxSteps, 30);
  EXPECT_EQ(shorter.warmupSteps, 30);
  EXPECT_EQ(shorter.evalEvery, 1);  // 13 * 30 / 400 = 0.975 rounds to 1
  const TrainConfig longer = configWithSteps(preset, 800);
  EXPECT_EQ(longer.warmupSteps, 40);
  EXPECT_EQ(longer.evalEvery, 26);
}

TEST(Comparison, RunComparisonTrainsEachPresetInTurn) {
  ComparisonOptions options;
  options.maxSteps = 12;
  options.threads = 1;
  options.title = "copy vs reverse";
  std::vector<int> calls(2, 0);
  const TrainingComparison c = runComparison({"copy", "reverse"}, options, [&](int run, const Trainer&) { ++calls.at(run); });
  EXPECT_EQ(calls, (std::vector<int>{12, 12}));
  EXPECT_EQ(c.title, "copy vs reverse");
  ASSERT_EQ(c.runs.size(), 2u);
  for (const ComparedRun& run : c.runs) {
    SCOPED_TRACE(run.label);
    ASSERT_EQ(run.trainLoss.size(), 12u);
    ASSERT_FALSE(run.evalSteps.empty());
    EXPECT_EQ(run.evalSteps.size(), run.valLoss.size());
    EXPECT_EQ(run.evalSteps.back(), 12);
    for (float loss : run.trainLoss) EXPECT_TRUE(std::isfinite(loss));
    // 26 symbols: chance is ln 27 = 3.3 nats; twelve steps already bring validation below its start.
    EXPECT_LT(run.valLoss.back(), run.valLoss.front()) << "first " << run.valLoss.front() << ", last " << run.valLoss.back();
    EXPECT_LT(run.valLoss.back(), std::log(27.0) + 0.05);
    EXPECT_EQ(run.parameters, countParameters(run.config.model).total);
    EXPECT_GT(run.config.model.vocab_size, 0);
    EXPECT_GT(run.seconds, 0);
    EXPECT_GT(run.tokensPerSecond, 0);
  }
  EXPECT_EQ(c.runs[0].label, "copy");
  EXPECT_EQ(c.runs[1].data, toString(findTrainPreset("reverse")->data));
  // What it made is a valid file.
  EXPECT_EQ(comparisonToJson(comparisonFromJson(comparisonToJson(c))), comparisonToJson(c));
}

TEST(Comparison, RunComparisonRefusesBeforeTrainingAndStopsWhenCancelled) {
  int calls = 0;
  const ComparisonProgress count = [&](int, const Trainer&) { ++calls; };
  expectMentions(errorMessage([&] { runComparison({"copy", "no-such-preset"}, {}, count); }), {"no-such-preset"});
  expectMentions(errorMessage([&] { runComparison({}, {}, count); }), {"at least one"});
  expectMentions(errorMessage([&] { runComparison(std::vector<std::string>(17, "copy"), {}, count); }), {"17", "16"});
  EXPECT_EQ(calls, 0) << "training started before the list was checked";
  std::atomic<bool> cancel{false};
  ComparisonOptions options;
  options.maxSteps = 50;
  options.threads = 1;
  options.cancel = &cancel;
  const TrainingComparison c = runComparison({"copy", "reverse"}, options, [&](int, const Trainer& trainer) {
    if (trainer.stepsDone() == 3) cancel = true;
  });
  EXPECT_TRUE(c.runs.empty()) << "a cancelled run was kept";
}

}  // namespace
}  // namespace tscope

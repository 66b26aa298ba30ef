// tscope-cli lesson end to end: the sample lesson's checks agree with the live model (exit 0), a
// wrong answer makes it exit 1 with the model's answer beside the author's, a bare name is looked
// up under --assets, and a broken lesson is one line on stderr.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_files.h"

using tscope::testing::CliRun;
using tscope::testing::runCli;

namespace {
const std::string kSample = std::string(TSCOPE_SOURCE_DIR) + "/tests/data/lessons/sample.json";
}

TEST(CliLesson, TheSampleAgreesWithTheModel) {
  tscope::testing::ScratchDir dir("tscope_cli_lesson");
  const CliRun run = runCli("lesson " + kSample, dir);
  ASSERT_EQ(run.exitCode, 0) << run.err << run.out;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["name"], "sample");
  ASSERT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["steps"][0]["index"], 1);
  EXPECT_EQ(j["steps"][0]["panel"], "prompt");
  EXPECT_NE(j["steps"][2]["model"].get<std::string>().find("brown-moe"), std::string::npos);
  const auto& check = j["steps"][1]["check"];
  EXPECT_EQ(check["answer"], " America");
  EXPECT_EQ(check["live_answer"], " America");
  EXPECT_EQ(check["agrees"], true);
  EXPECT_FALSE(j["steps"][0].contains("check"));
}

TEST(CliLesson, AWrongAnswerExitsOneAndShowsTheModelsAnswer) {
  tscope::testing::ScratchDir dir("tscope_cli_lesson");
  std::string text = tscope::testing::readBytes(kSample);
  const std::string from = R"("answer": " America")";
  text.replace(text.find(from), from.size(), R"("answer": " banana")");
  std::ofstream(dir.file("wrong.json")) << text;
  const CliRun run = runCli("lesson " + dir.file("wrong.json") + " --assets " + std::string(TSCOPE_SOURCE_DIR) + "/assets", dir);
  EXPECT_EQ(run.exitCode, 1) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["steps"][1]["check"]["agrees"], false);
  EXPECT_EQ(j["steps"][1]["check"]["live_answer"], " America");
  // And one line on stderr says why (not only the JSON on stdout).
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("step 2"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("banana"), std::string::npos) << run.err;
}

TEST(CliLesson, ABareNameIsLookedUpUnderAssets) {
  tscope::testing::ScratchDir dir("tscope_cli_lesson");
  // tests/data has lessons/sample.json but no models/: the lesson opens, its models are missing.
  const CliRun run = runCli("lesson sample --assets " + std::string(TSCOPE_SOURCE_DIR) + "/tests/data", dir);
  EXPECT_EQ(run.exitCode, 1) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["path"], std::string(TSCOPE_SOURCE_DIR) + "/tests/data/lessons/sample.json");
  EXPECT_EQ(j["steps"][1]["model_missing"], true);
  EXPECT_NE(j["steps"][1]["check"]["why"].get<std::string>().find("not installed"), std::string::npos);
}

TEST(CliLesson, ABrokenLessonIsOneLine) {
  tscope::testing::ScratchDir dir("tscope_cli_lesson");
  std::ofstream(dir.file("broken.json")) << R"({"format": "tscope-lesson", "version": 1, "title": "T", "lecture": "L",
    "summary": "S", "model": "brown-small", "steps": [{"title": "t", "caption": "c", "panle": "attention"}]})";
  const CliRun run = runCli("lesson " + dir.file("broken.json"), dir);
  EXPECT_EQ(run.exitCode, 1);
  EXPECT_NE(run.err.find("step 1: field 'panle'"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_EQ(runCli("lesson", dir).exitCode, 2);
  EXPECT_EQ(runCli("lesson no-such-lesson", dir).exitCode, 1);
}

// tscope-cli train end to end: a copy-task run learns (loss on the copied half falls), a run
// killed while writing a checkpoint leaves the previous checkpoint loadable and resumes to the
// bit-identical weights of an uninterrupted run, and bad configs / data specs / flags give one
// clear line and a non-zero exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/io/model_io.h"
#include "model/train/trainer.h"
#include "tests/test_files.h"

namespace fs = std::filesystem;

using tscope::testing::CliRun;
using tscope::testing::runCli;

namespace {

const char* kInductionConfig = R"({"model": {"n_layer": 2, "n_head": 2, "n_embd": 32, "attention_only": true, "position_encoding": "rope"},
  "train": {"batch": 16, "steps": 40, "lr": 3e-3, "warmup": 5, "eval_every": 10, "eval_batches": 2,
            "checkpoint_every": 10, "seed": 3, "threads": 1}})";

}  // namespace

TEST(TrainCli, CopyRunLearnsAndItsCheckpointIsAModel) {
  tscope::testing::ScratchDir dir("tscope_train_cli");
  std::ofstream(dir.file("config.json")) << kInductionConfig;
  const CliRun run =
      runCli("train --config " + dir.file("config.json") + " --data copy:vocab=10,length=6 --out " + dir.file("run") + " --steps 300", dir);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["steps"], 300);
  // Chance on the copied half is ln(10) ~ 2.3 nats; attending 7 tokens back gets it near zero.
  EXPECT_LT(j["val_loss"].get<double>(), 0.1) << run.out;
  EXPECT_NE(run.err.find("ETA"), std::string::npos) << "progress line missing: " << run.err;
  const tscope::LoadedModel model = tscope::loadModel(dir.file("run"));
  EXPECT_TRUE(model.weights.config().attention_only);
  ASSERT_TRUE(model.tokenizer);
  EXPECT_EQ(model.tokenizer->kind(), tscope::TokenizerKind::Char);
  EXPECT_EQ(model.weights.config().vocab_size, 12);  // <unk>, 10 symbols, SEP
}

TEST(TrainCli, KillDuringCheckpointResumesExactly) {
  tscope::testing::ScratchDir dir("tscope_train_kill");
  std::ofstream(dir.file("config.json")) << kInductionConfig;
  const std::string common = "train --config " + dir.file("config.json") + " --data induction:vocab=20,length=8 --quiet --out ";
  const CliRun straight = runCli(common + dir.file("straight"), dir);
  ASSERT_EQ(straight.exitCode, 0) << straight.err;

  // Killed while writing the step-30 checkpoint: a partial temporary file, the step-20 one intact.
  const CliRun killed = runCli(common + dir.file("killed"), dir, "TSCOPE_TEST_KILL_IN_CHECKPOINT=30");
  ASSERT_TRUE(killed.killed) << "exit " << killed.exitCode << ": " << killed.err;
  EXPECT_TRUE(fs::exists(dir.file("killed/train_state.safetensors.tmp")));
  const tscope::LoadedModel partial = tscope::loadModel(dir.file("killed"));  // the last good checkpoint loads
  EXPECT_EQ(partial.weights.config().n_layer, 2);
  const CliRun info = runCli("info --model " + dir.file("killed"), dir);
  EXPECT_EQ(info.exitCode, 0) << info.err;

  const CliRun resumed = runCli("train --resume --quiet --out " + dir.file("killed"), dir);
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  const auto j = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(j["steps"], 40);
  EXPECT_EQ(j["steps_this_run"], 20);  // resumed after step 20
  // Same data, same optimiser state, same thread count: the same bits.
  EXPECT_EQ(tscope::testing::readBytes(dir.file("straight/model.safetensors")), tscope::testing::readBytes(dir.file("killed/model.safetensors")));
  EXPECT_EQ(nlohmann::json::parse(straight.out)["val_loss"], j["val_loss"]);
}

TEST(TrainCli, BadInputsGiveOneLineAndANonZeroExit) {
  tscope::testing::ScratchDir dir("tscope_train_bad");
  std::ofstream(dir.file("config.json")) << kInductionConfig;
  std::ofstream(dir.file("typo.json")) << R"({"model": {"n_layer": 1}, "train": {"learning_rate": 1}})";
  std::ofstream(dir.file("bad_model.json")) << R"({"model": {"n_head": 5, "n_embd": 32}})";
  std::ofstream(dir.file("broken.json")) << R"({"model": )";
  struct Case {
    std::string arguments, mentions;
  };
  const std::string out = " --out " + dir.file("o");
  const Case cases[] = {
      {"train --data induction" + out, "--config"},
      {"train --config " + dir.file("typo.json") + " --data induction" + out, "learning_rate"},
      {"train --config " + dir.file("bad_model.json") + " --data induction" + out, "n_head"},
      {"train --config " + dir.file("broken.json") + " --data induction" + out, "JSON"},
      {"train --config " + dir.file("nope.json") + " --data induction" + out, "nope.json"},
      {"train --config " + dir.file("config.json") + " --data shakespeare" + out, "shakespeare"},
      {"train --config " + dir.file("config.json") + " --data induction:vocab=4,length=8" + out, "vocab"},
      {"train --config " + dir.file("config.json") + " --data induction:colour=red" + out, "colour"},
      {"train --resume --out " + dir.file("empty"), "train_state"},
  };
  for (const Case& c : cases) {
    const CliRun run = runCli(c.arguments, dir);
    EXPECT_NE(run.exitCode, 0) << c.arguments;
    EXPECT_NE(run.err.find(c.mentions), std::string::npos) << c.arguments << " -> " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  // An existing run is not overwritten without --resume.
  ASSERT_EQ(runCli("train --config " + dir.file("config.json") + " --data induction --steps 2 --quiet" + out, dir).exitCode, 0);
  const CliRun again = runCli("train --config " + dir.file("config.json") + " --data induction --steps 2" + out, dir);
  EXPECT_EQ(again.exitCode, 2);
  EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
}

TEST(TrainCli, CorruptTrainStateIsNamed) {
  tscope::testing::ScratchDir dir("tscope_train_corrupt");
  std::ofstream(dir.file("config.json")) << kInductionConfig;
  ASSERT_EQ(runCli("train --config " + dir.file("config.json") + " --data induction --steps 2 --quiet --out " + dir.file("r"), dir).exitCode, 0);
  std::string state = tscope::testing::readBytes(dir.file("r/train_state.safetensors"));
  tscope::testing::writeBytes(dir.file("r/train_state.safetensors"), state.substr(0, state.size() / 2));
  const CliRun run = runCli("train --resume --out " + dir.file("r"), dir);
  EXPECT_EQ(run.exitCode, 1);
  EXPECT_NE(run.err.find("train_state.safetensors"), std::string::npos) << run.err;
}

// tscope-cli checks everything before it works, and says so in one line: flags and names that a
// result file cannot hold refused before training; files that are directories, symbolic-link loops
// or FIFOs refused before reading (never an internal error, never a wait without end); one line on
// stderr for each failure (lesson's: test_cli_lesson.cpp), the same exit code for the same kind of failure in
// every command; a misspelt model key and a training config given to init refused. The cases a
// clumsy user found (issue "The CLI checks everything before it works"), replayed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/test_files.h"

using tscope::testing::CliRun;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace {

const std::string kModels = std::string(TSCOPE_SOURCE_DIR) + "/assets/models";
// Every command runs under `timeout`: a FIFO read would otherwise wait for ever (exit 124 = hung).
const std::string kTimeout = "timeout 60";

void expectOneLine(const CliRun& run, int exitCode, std::initializer_list<std::string> parts, const std::string& what) {
  EXPECT_EQ(run.exitCode, exitCode) << what << ": " << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << what << ": " << run.err;
  EXPECT_EQ(run.err.find("internal error"), std::string::npos) << what << ": " << run.err;
  tscope::testing::expectMentions(run.err.substr(0, run.err.find_last_not_of('\n') + 1), parts);
}

// A copy of induction-2l whose `file` is replaced by what `make` puts at its path.
template <typename Make>
std::string brokenModel(const ScratchDir& dir, const std::string& name, const std::string& file, Make make) {
  namespace fs = std::filesystem;
  const fs::path model = dir.file(name);
  fs::create_directories(model);
  for (const auto& entry : fs::directory_iterator(kModels + "/induction-2l"))
    if (entry.path().filename() != file) fs::copy_file(entry.path(), model / entry.path().filename());
  make((model / file).string());
  return model.string();
}

}  // namespace

TEST(CliChecksFirst, FilesThatAreNotFilesAreOneLineBeforeReading) {
  ScratchDir dir("tscope_cli_checks_files");
  const std::string configDir = brokenModel(dir, "config-dir", "config.json", [](const std::string& p) { std::filesystem::create_directory(p); });
  expectOneLine(runCli("info --model " + configDir, dir, kTimeout), 1, {"config.json", "is a directory"}, "config.json a directory");
  const std::string configLoop =
      brokenModel(dir, "config-loop", "config.json", [](const std::string& p) { ASSERT_EQ(::symlink(p.c_str(), p.c_str()), 0); });
  expectOneLine(runCli("info --model " + configLoop, dir, kTimeout), 1, {"config.json", "loop of symbolic links"}, "config.json a loop");
  const std::string weightsLoop =
      brokenModel(dir, "weights-loop", "model.safetensors", [](const std::string& p) { ASSERT_EQ(::symlink(p.c_str(), p.c_str()), 0); });
  expectOneLine(runCli("info --model " + weightsLoop, dir, kTimeout), 1, {"model.safetensors", "loop"}, "model.safetensors a loop");
  const std::string weightsFifo =
      brokenModel(dir, "weights-fifo", "model.safetensors", [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); });
  expectOneLine(runCli("info --model " + weightsFifo, dir, kTimeout), 1, {"model.safetensors", "FIFO"}, "model.safetensors a FIFO");
  const std::string fifo = dir.file("prompt.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectOneLine(runCli("forward --model " + kModels + "/induction-2l --text-file " + fifo, dir, kTimeout), 1, {"prompt.fifo", "FIFO"},
                "a FIFO as --text-file");
  expectOneLine(runCli("lesson " + fifo, dir, kTimeout), 1, {"prompt.fifo", "FIFO"}, "a FIFO as the lesson file");
  expectOneLine(runCli("forward --model " + kModels + "/induction-2l --text-file /dev/null/x", dir, kTimeout), 1, {"/dev/null/x"},
                "a path through a file");
  // Where a command writes is checked before it works: a dump or a model over a file.
  tscope::testing::writeBytes(dir.file("a-file"), "x");
  expectOneLine(runCli("forward --model " + kModels + "/induction-2l --text ab --dump " + dir.file("a-file"), dir, kTimeout), 1,
                {"a-file", "not a folder"}, "forward --dump onto a file");
  expectOneLine(runCli("init --out " + dir.file("a-file") + " --layers 1 --heads 1 --embd 8", dir, kTimeout), 1, {"a-file", "not a folder"},
                "init --out onto a file");
}

TEST(CliChecksFirst, WhatAResultFileCannotHoldIsRefusedBeforeTraining) {
  ScratchDir dir("tscope_cli_checks_utf8");
  const auto started = std::chrono::steady_clock::now();
  // Titles and names that JSON cannot hold: refused at once (exit 2), nothing trained or written.
  expectOneLine(runCli("compare --presets copy,reverse --title \"$(printf 'bad \\377 title')\" --out " + dir.file("c.json"), dir, kTimeout), 2,
                {"--title", "UTF-8"}, "compare --title");
  expectOneLine(runCli("compare --presets copy --description \"$(printf '\\377')\" --out " + dir.file("c.json"), dir, kTimeout), 2,
                {"--description", "UTF-8"}, "compare --description");
  expectOneLine(runCli("compare --presets copy,nonesuch --out " + dir.file("c.json"), dir, kTimeout), 2, {"nonesuch", "copy", "reverse"},
                "compare with an unknown preset lists the presets");
  expectOneLine(runCli("compare --presets copy --out " + dir.file("no/such/folder/c.json"), dir, kTimeout), 1, {"c.json"},
                "compare into a folder that does not exist");
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.json")));
  const std::string config = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/configs/induction-2l.json";
  expectOneLine(runCli("train --config " + config + " --data induction --out \"$(printf 'run\\377')\"", dir, kTimeout), 2, {"--out", "UTF-8"},
                "train --out not UTF-8");
  expectOneLine(runCli("sweep --preset tiny --out " + dir.file("s") + " --bootstrap -1", dir, kTimeout), 2, {"--bootstrap"}, "sweep --bootstrap");
  expectOneLine(runCli("sweep --preset tiny --out " + dir.file("s") + " --seed x", dir, kTimeout), 2, {"--seed"}, "sweep --seed");
  tscope::testing::writeBytes(dir.file("csv-file"), "a file, not a folder");
  expectOneLine(runCli("sweep --preset tiny --out " + dir.file("s") + " --csv " + dir.file("csv-file"), dir, kTimeout), 1,
                {"csv-file", "not a folder"}, "sweep --csv onto a file");
  EXPECT_FALSE(std::filesystem::exists(dir.file("s/sweep.json"))) << "a sweep was created before its flags were checked";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 30) << "a refusal came after training";
}

TEST(CliChecksFirst, OneLineAndTheSameExitCodeForTheSameKindOfFailure) {
  ScratchDir dir("tscope_cli_checks_lines");
  // Found before the backend is chosen: no "running on the CPU" note before the error.
  expectOneLine(runCli("score-dates --model " + kModels + "/induction-2l --examples 1", dir, kTimeout), 1, {"encoder-decoder"},
                "score-dates on a decoder-only model");
  // A bad --backend is bad usage (2) in every command.
  const std::string config = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/configs/induction-2l.json";
  expectOneLine(runCli("forward --model " + kModels + "/induction-2l --text ab --backend gpu", dir, kTimeout), 2, {"--backend", "gpu"}, "forward");
  expectOneLine(runCli("generate --model " + kModels + "/induction-2l --prompt ab --max-new 1 --backend gpu", dir, kTimeout), 2, {"--backend"},
                "generate");
  expectOneLine(runCli("train --config " + config + " --data induction --out " + dir.file("t") + " --backend gpu", dir, kTimeout), 2, {"--backend"},
                "train");
  expectOneLine(runCli("sweep --preset tiny --out " + dir.file("s") + " --backend gpu", dir, kTimeout), 2, {"--backend"}, "sweep");
}

TEST(CliChecksFirst, ModelConfigsAreCheckedAsTheReadmeSays) {
  ScratchDir dir("tscope_cli_checks_configs");
  tscope::testing::writeBytes(dir.file("misspelt.json"), R"({"model": {"n_layer": 2, "n_haed": 2, "n_embd": 32}, "train": {"steps": 1}})");
  expectOneLine(runCli("train --config " + dir.file("misspelt.json") + " --data induction --out " + dir.file("t"), dir, kTimeout), 1,
                {"model.n_haed"}, "a misspelt model key");
  const std::string training = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/configs/induction-2l.json";
  expectOneLine(runCli("init --config " + training + " --out " + dir.file("m"), dir, kTimeout), 1, {"training config"},
                "init --config given a training config");
  EXPECT_FALSE(std::filesystem::exists(dir.file("m/model.safetensors")));
  tscope::testing::writeBytes(dir.file("model.json"), R"({"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positons": 64})");
  expectOneLine(runCli("init --config " + dir.file("model.json") + " --out " + dir.file("m"), dir, kTimeout), 1, {"n_positons"},
                "init --config with a misspelt key");
}

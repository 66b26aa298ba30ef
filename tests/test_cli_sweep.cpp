// tscope-cli sweep and fit end to end: the tiny preset trains every run into a sweep directory and
// prints its runs and fits; fit reads the directory back to the same fits and writes the CSV files;
// continuing a finished sweep trains nothing; bad usage and bad files are one line and a non-zero exit.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/train/sweep.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::readBytes;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace tscope {
namespace {

void expectOneLineError(const testing::CliRun& run, int exitCode, const std::string& mentions) {
  EXPECT_EQ(run.exitCode, exitCode) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(mentions), std::string::npos) << run.err;
}

TEST(CliSweep, TinyPresetTrainsFitsAndExports) {
  if (defaultBrownCorpusDir().empty()) GTEST_SKIP() << "the Brown corpus is not installed";
  ScratchDir dir;
  const std::string out = dir.file("tiny");
  const testing::CliRun run = runCli("sweep --preset tiny --out " + out + " --threads 1 --quiet --bootstrap 20", dir);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const json result = json::parse(run.out);
  EXPECT_EQ(result["runs"].size(), planSweep(findSweepPreset("tiny")->spec).size());
  ASSERT_TRUE(result["fits"].contains("chinchilla")) << result["fits"].dump();
  EXPECT_EQ(result["fits"]["chinchilla"]["bootstrap"]["samples"].get<int>() > 0, true);
  EXPECT_EQ(result["params"], "non-embedding");

  const testing::CliRun fit = runCli("fit --runs " + out + " --bootstrap 20 --csv " + dir.file("csv"), dir);
  ASSERT_EQ(fit.exitCode, 0) << fit.err;
  const json fitted = json::parse(fit.out);
  EXPECT_EQ(fitted["fits"]["chinchilla"]["alpha"], result["fits"]["chinchilla"]["alpha"]);  // deterministic
  EXPECT_EQ(fitted["fits"]["kaplan_params"], result["fits"]["kaplan_params"]);
  const std::string runsCsv = readBytes(dir.file("csv/runs.csv"));
  EXPECT_EQ(std::count(runsCsv.begin(), runsCsv.end(), '\n'), static_cast<long>(result["runs"].size()) + 1);
  EXPECT_NE(readBytes(dir.file("csv/fits.csv")).find("chinchilla,alpha,"), std::string::npos);

  // A finished sweep continued trains nothing and prints the same runs.
  const testing::CliRun again = runCli("sweep --out " + out + " --quiet --bootstrap 0", dir);
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["runs"], result["runs"]);

  // The same command again continues it (as the README says); another preset there is refused.
  const testing::CliRun same = runCli("sweep --preset tiny --out " + out + " --quiet --bootstrap 0", dir);
  ASSERT_EQ(same.exitCode, 0) << same.err;
  EXPECT_EQ(json::parse(same.out)["runs"], result["runs"]);
  expectOneLineError(runCli("sweep --preset brown --out " + out, dir), 2, "already holds another sweep");

  // Three runs at once (as on a GPU, here on CPU devices): the same runs, to the bit.
  const testing::CliRun together =
      runCli("sweep --preset tiny --out " + dir.file("together") + " --threads 1 --backend cpu --parallel 3 --quiet --bootstrap 0", dir);
  ASSERT_EQ(together.exitCode, 0) << together.err;
  const json parallel = json::parse(together.out)["runs"];
  ASSERT_EQ(parallel.size(), result["runs"].size());
  for (const json& run : result["runs"]) {
    const auto same = std::find_if(parallel.begin(), parallel.end(), [&](const json& r) { return r["name"] == run["name"]; });
    ASSERT_NE(same, parallel.end()) << run["name"];
    EXPECT_EQ((*same)["val_loss"], run["val_loss"]) << run["name"];
  }
}

TEST(CliSweep, BadUsageAndBadFilesAreOneLine) {
  ScratchDir dir;
  expectOneLineError(runCli("sweep --preset nope --out " + dir.file("a"), dir), 2, "unknown sweep preset 'nope'");
  expectOneLineError(runCli("sweep --preset tiny --spec x.json --out " + dir.file("b"), dir), 2, "not both");
  expectOneLineError(runCli("sweep --preset tiny --sizes L2x64 --out " + dir.file("c"), dir), 1, "L2x64");
  expectOneLineError(runCli("sweep --preset tiny --tokens 12Q --out " + dir.file("d"), dir), 1, "12Q");
  expectOneLineError(runCli("sweep --preset tiny --parallel 0 --out " + dir.file("f"), dir), 2, "--parallel");
  expectOneLineError(runCli("sweep --preset tiny --backend gpu --out " + dir.file("g"), dir), 2, "--backend must be");
  EXPECT_FALSE(std::filesystem::exists(dir.file("f")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("g")));
  expectOneLineError(runCli("sweep --preset tiny --sizes L1-d30-h4 --out " + dir.file("e"), dir), 1, "L1-d30");
  EXPECT_FALSE(std::filesystem::exists(dir.file("e/sweep.json")));  // nothing written for an invalid grid
  expectOneLineError(runCli("fit --runs " + dir.file("missing"), dir), 1, "missing");
  testing::writeBytes(dir.file("bad.json"), "{\"format\": \"tscope-sweep\", \"version\": 1}");
  expectOneLineError(runCli("fit --runs " + dir.file("bad.json"), dir), 1, "spec");
  expectOneLineError(runCli("fit", dir), 2, "--runs");
}

}  // namespace
}  // namespace tscope

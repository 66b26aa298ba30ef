// tscope-cli attention-bench end to end: the records' JSON shape (one per variant and n, knobs
// included), peak bytes times heads, the exact variant's skip rule, the --fit form, and one-line
// errors for bad flags, unknown variants and bad knobs. No timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/nn/efficient_attention.h"
#include "model/theory/attention_cost.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::runCli;

namespace {

json benchJson(const std::string& flags, const tscope::testing::ScratchDir& dir) {
  CliRun run = runCli("attention-bench --repeats 1 " + flags, dir);
  EXPECT_EQ(run.exitCode, 0) << run.err;
  return json::parse(run.out);
}

}  // namespace

TEST(CliAttentionBench, OneRecordPerNAndVariantWithItsKnobs) {
  tscope::testing::ScratchDir dir("tscope_attnbench");
  const json records = benchJson("--n 64,96 --variants exact,flash,lsh,linear --d 16 --tile 32 --buckets 4", dir);
  ASSERT_TRUE(records.is_array());
  ASSERT_EQ(records.size(), 2u * 4u);
  const char* order[] = {"exact", "flash", "lsh", "linear"};
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    EXPECT_EQ(r["variant"], order[i % 4]) << r;
    EXPECT_EQ(r["n"], i < 4 ? 64 : 96) << r;
    EXPECT_EQ(r["d"], 16);
    EXPECT_EQ(r["heads"], 1);
    EXPECT_EQ(r["causal"], true);
    EXPECT_GE(r["ms"].get<double>(), 0.0);
    EXPECT_GT(r["peak_bytes"].get<int64_t>(), 0) << r;
    EXPECT_FALSE(r.contains("skipped"));
  }
  EXPECT_EQ(records[1]["tile"], 32);    // flash carries its tile
  EXPECT_EQ(records[2]["buckets"], 4);  // lsh its buckets, rounds and chunk
  EXPECT_TRUE(records[2].contains("rounds") && records[2].contains("chunk"));
  EXPECT_FALSE(records[0].contains("tile") || records[3].contains("tile") || records[3].contains("buckets"));
}

TEST(CliAttentionBench, EveryVariantByDefaultAndPeakBytesScaleWithHeads) {
  tscope::testing::ScratchDir dir("tscope_attnbench");
  const json one = benchJson("--n 128 --d 8 --no-causal", dir);
  const json two = benchJson("--n 128 --d 8 --no-causal --heads 2", dir);
  const auto variants = tscope::allAttentionVariants();
  ASSERT_EQ(one.size(), variants.size());
  ASSERT_EQ(two.size(), variants.size());
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_EQ(one[i]["variant"], tscope::attentionVariantName(variants[i]));
    EXPECT_EQ(one[i]["causal"], false);
    EXPECT_EQ(two[i]["peak_bytes"].get<int64_t>(), 2 * one[i]["peak_bytes"].get<int64_t>()) << one[i]["variant"];
  }
}

TEST(CliAttentionBench, ExactIsSkippedAboveMaxBytesAndTheOthersStillRun) {
  tscope::testing::ScratchDir dir("tscope_attnbench");
  // n = 128: 128^2 * 4 = 65536 bytes fit in 100000; n = 256 needs 262144.
  const json records = benchJson("--n 128,256 --variants exact,flash --d 8 --max-bytes 100000", dir);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_FALSE(records[0].contains("skipped"));
  EXPECT_FALSE(records[1].contains("skipped"));
  EXPECT_EQ(records[2]["variant"], "exact");
  EXPECT_EQ(records[2]["n"], 256);
  ASSERT_TRUE(records[2].contains("skipped")) << records[2];
  EXPECT_EQ(records[2]["skipped"].get<std::string>().rfind("needs 262144 bytes", 0), 0u) << records[2];
  EXPECT_FALSE(records[2].contains("ms"));
  EXPECT_EQ(records[3]["variant"], "flash");
  EXPECT_FALSE(records[3].contains("skipped"));
  // Two heads need twice the bytes: n = 128 is skipped too.
  const json twoHeads = benchJson("--n 128 --variants exact --d 8 --heads 2 --max-bytes 100000", dir);
  ASSERT_EQ(twoHeads.size(), 1u);
  EXPECT_TRUE(twoHeads[0].contains("skipped"));
}

TEST(CliAttentionBench, FitFormHasRecordsAndOneFitPerVariant) {
  tscope::testing::ScratchDir dir("tscope_attnbench");
  const json out = benchJson("--n 128,256,512 --variants exact,flash,linear --d 16 --fit --max-bytes 300000", dir);
  ASSERT_TRUE(out.is_object());
  ASSERT_EQ(out["records"].size(), 9u);
  ASSERT_EQ(out["fits"].size(), 3u);
  const auto table = tscope::complexityTable();
  for (const json& fit : out["fits"]) {
    const auto variant = tscope::attentionVariantFromName(fit["variant"].get<std::string>());
    ASSERT_TRUE(variant.has_value()) << fit;
    const auto row = std::find_if(table.begin(), table.end(), [&](const auto& c) { return c.variant == *variant; });
    EXPECT_EQ(fit["expected_time_slope"].get<double>(), row->timeExponent);
    EXPECT_EQ(fit["expected_memory_slope"].get<double>(), row->memoryExponent);
  }
  // exact ran at 128 and 256 only (512 needs 1 MiB): two points, still a slope; its n x n scores
  // make its memory grow faster than flash's.
  EXPECT_EQ(out["fits"][0]["points"], 2);
  ASSERT_TRUE(out["fits"][0]["memory_slope"].is_number()) << out["fits"][0];
  ASSERT_TRUE(out["fits"][1]["memory_slope"].is_number()) << out["fits"][1];
  EXPECT_GT(out["fits"][0]["memory_slope"].get<double>(), 1.5);
  EXPECT_LT(out["fits"][1]["memory_slope"].get<double>(), 1.5);
  EXPECT_TRUE(out["fits"][2]["time_slope"].is_number());
  // One length: no slope to fit.
  const json single = benchJson("--n 64 --variants flash --fit", dir);
  EXPECT_TRUE(single["fits"][0]["time_slope"].is_null());
}

TEST(CliAttentionBench, BadInputIsOneLineAndANonZeroExit) {
  tscope::testing::ScratchDir dir("tscope_attnbench");
  const std::pair<const char*, const char*> cases[] = {
      {"--n 64 --variants exact,softmax2", "unknown variant 'softmax2'"},
      {"--n 64 --variants lsh --buckets 0", "buckets"},
      {"--n 64,abc", "--n"},
      {"--n 0", "--n"},
      {"--n 64 --causal --no-causal", "contradict"},
      {"--variants exact", "needs --n"},
      {"--n 64 --speed 3", "unknown flag --speed"},
      {"--n 64 --d 0", "--d"},
  };
  for (const auto& [flags, expected] : cases) {
    CliRun run = runCli(std::string("attention-bench ") + flags, dir);
    EXPECT_NE(run.exitCode, 0) << flags;
    EXPECT_TRUE(run.out.empty()) << flags << ": " << run.out;
    EXPECT_NE(run.err.find(expected), std::string::npos) << flags << ": " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << flags << ": " << run.err;
  }
}

// tscope-cli end to end on architecture-lab models: init from a config.json, info's numbers,
// forward --dump's MoE files, and one-line errors for bad configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/theory/cost.h"
#include "tests/test_files.h"

using tscope::testing::CliRun;
using tscope::testing::runCli;

TEST(Cli, InitInfoAndForwardOnAMixtureOfExperts) {
  tscope::testing::ScratchDir dir("tscope_cli");
  std::ofstream(dir.file("config.json")) << R"({"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 64,
    "position_encoding": "rope", "norm": "rmsnorm", "activation_function": "swiglu", "d_ff": 64,
    "n_kv_head": 1, "n_experts": 4, "moe_top_k": 2, "moe_capacity_factor": 2.0})";
  CliRun init = runCli("init --out " + dir.file("m") + " --config " + dir.file("config.json"), dir);
  ASSERT_EQ(init.exitCode, 0) << init.err;
  CliRun info = runCli("info --model " + dir.file("m"), dir);
  ASSERT_EQ(info.exitCode, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["config"]["position_encoding"], "rope");
  EXPECT_EQ(j["config"]["n_experts"], 4);
  const auto total = j["parameters"]["total"].get<int64_t>(), active = j["parameters"]["active"].get<int64_t>();
  const int64_t expert = 2 * (32 * 64 + 64) + (64 * 32 + 32);  // SwiGLU: fc + gate + proj
  EXPECT_EQ(total - active, 2 * 2 * expert);                   // 2 layers x 2 idle experts
  EXPECT_EQ(j["memory_bytes"]["kv_cache_per_token_fp32"], 2 * 2 * 1 * 16 * 4);

  CliRun forward = runCli("forward --model " + dir.file("m") + " --text 'Experts route tokens.' --dump " + dir.file("dump"), dir);
  ASSERT_EQ(forward.exitCode, 0) << forward.err;
  for (int l = 0; l < 2; ++l) {
    const std::string path = dir.file("dump/moe_" + std::to_string(l) + ".json");
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    const auto moe = nlohmann::json::parse(in);
    const int T = moe["tokens"];
    EXPECT_GT(T, 0);
    EXPECT_EQ(moe["router_logits"].size(), (size_t)T * 4);
    EXPECT_EQ(moe["assignments"].size(), (size_t)T * 2);
    EXPECT_EQ(moe["load"].size(), 4u);
    EXPECT_TRUE(moe.contains("aux_loss") && moe.contains("dropped_tokens"));
  }
  // The forward's time is reported with and without a dump (it read 0 without one).
  EXPECT_GT(nlohmann::json::parse(forward.out)["forward_ms"].get<double>(), 0.0);
  CliRun plain = runCli("forward --model " + dir.file("m") + " --text 'Experts route tokens.'", dir);
  ASSERT_EQ(plain.exitCode, 0) << plain.err;
  EXPECT_GT(nlohmann::json::parse(plain.out)["forward_ms"].get<double>(), 0.0);
}

TEST(Cli, BadConfigIsOneLineNamingTheRule) {
  tscope::testing::ScratchDir dir("tscope_cli");
  std::ofstream(dir.file("config.json")) << R"({"n_embd": 32, "n_head": 4, "n_experts": 2, "moe_top_k": 3})";
  CliRun init = runCli("init --out " + dir.file("m") + " --config " + dir.file("config.json"), dir);
  EXPECT_EQ(init.exitCode, 1);
  EXPECT_NE(init.err.find("moe_top_k (3) must be at most n_experts (2)"), std::string::npos) << init.err;
  EXPECT_EQ(std::count(init.err.begin(), init.err.end(), '\n'), 1) << init.err;
}

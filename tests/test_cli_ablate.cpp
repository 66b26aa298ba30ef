// tscope-cli's --ablate flags: bad specs and flag combinations are one-line errors naming the
// item, and the classic demo on the shipped induction-2l works from the command line: zeroing the
// layer-1 heads destroys the copy of the repeated half (its loss rises by nats), zeroing a layer-0
// head that is not a previous-token head barely moves it; generate copies or not accordingly.
// Also forward --dump's internals where the PyTorch golden test cannot look: RoPE (q and k give the
// attention map), attention-only and post-norm models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/io/npy.h"
#include "tests/induction_text.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace {

const std::string& kInduction = tscope::testing::kInductionModel;
const std::string& kHalf = tscope::testing::kInductionHalf;
const std::string& kRepeated = tscope::testing::kInductionRepeated;

class CliAblate : public ::testing::Test {
 protected:
  ScratchDir dir_{"tscope_cli_ablate"};

  CliRun run(const std::string& arguments) { return runCli(arguments, dir_); }
  json forward(const std::string& flags) {
    const CliRun r = run("forward --model " + kInduction + " --text " + kRepeated + " --loss-from 16 " + flags);
    EXPECT_EQ(r.exitCode, 0) << flags << ": " << r.err;
    return r.exitCode == 0 ? json::parse(r.out) : json();
  }
  static void expectOneLine(const CliRun& r, int exitCode, std::initializer_list<std::string> parts, const std::string& what) {
    EXPECT_EQ(r.exitCode, exitCode) << what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    tscope::testing::expectMentions(r.err.substr(0, r.err.find_last_not_of('\n') + 1), parts);
  }
};

TEST_F(CliAblate, BadSpecIsOneLineNamingTheItem) {
  // induction-2l: 2 layers of 4 heads, attention only (no MLP to ablate).
  for (const std::string item : {"9.0", "0.99", "x", "0.mlp", "1.-1", "2.mlp"}) {
    const CliRun r = run("forward --model " + kInduction + " --text abc --ablate 1.0," + item);
    expectOneLine(r, 1, {"--ablate", item}, "--ablate 1.0," + item);
    EXPECT_TRUE(r.out.empty()) << item << ": " << r.out;
  }
  const CliRun emptyItem = run("forward --model " + kInduction + " --text abc --ablate 0.1,,1.0");
  EXPECT_NE(emptyItem.exitCode, 0);
  expectOneLine(emptyItem, emptyItem.exitCode, {"--ablate"}, "an empty item");
  expectOneLine(run("forward --model " + kInduction + " --text abc --ablate ''"), 2, {"--ablate", "at least one"}, "an empty --ablate");
  expectOneLine(run("generate --model " + kInduction + " --prompt abc --ablate 5.5"), 1, {"--ablate", "5.5"}, "generate --ablate 5.5");
}

TEST_F(CliAblate, ModeAndSourceFlagsMustFit) {
  const std::string base = "forward --model " + kInduction + " --text abc ";
  expectOneLine(run(base + "--ablate 1.0 --ablate-mode patch"), 2, {"--ablate-mode patch", "--patch-source"}, "patch without a source");
  expectOneLine(run(base + "--ablate 1.0 --patch-source abc"), 2, {"--patch-source", "patch"}, "a source without patch");
  expectOneLine(run(base + "--ablate 1.0 --ablate-mode half"), 2, {"--ablate-mode", "half"}, "an unknown mode");
  expectOneLine(run(base + "--ablate-mode mean"), 2, {"--ablate-mode", "--ablate"}, "a mode without --ablate");
  expectOneLine(run(base + "--ablate 1.0 --ablate-mode patch --patch-source ''"), 1, {"--patch-source", "empty"}, "an empty source");
  expectOneLine(run(base + "--loss-from 2"), 1, {"--loss-from 2", "no next token"}, "a loss past the prompt");
}

TEST_F(CliAblate, InductionHeadsCarryTheCopy) {
  const json clean = forward("");
  const json induction = forward("--ablate 1.0,1.1,1.2,1.3");
  const json other = forward("--ablate 0.1");
  ASSERT_FALSE(clean.is_null() || induction.is_null() || other.is_null());
  const double cleanLoss = clean["loss"], inductionLoss = induction["loss"], otherLoss = other["loss"];
  EXPECT_EQ(clean["loss_positions"]["count"], 14);
  EXPECT_LT(cleanLoss, 0.1) << "induction-2l predicts the repeat";
  // The ablated runs report the clean run beside them, and it is the clean run.
  EXPECT_DOUBLE_EQ(induction["clean_loss"].get<double>(), cleanLoss);
  EXPECT_EQ(induction["clean_next"], clean["next"]);
  EXPECT_EQ(induction["interventions"]["mode"], "zero");
  EXPECT_EQ(induction["interventions"]["items"].size(), 4u);
  EXPECT_GT(inductionLoss - cleanLoss, 2.0) << "zeroing the layer-1 heads should destroy the copy: loss " << cleanLoss << " -> " << inductionLoss;
  EXPECT_LT(otherLoss - cleanLoss, 0.25) << "zeroing head 0.1 should barely matter: loss " << cleanLoss << " -> " << otherLoss;
  // Mean ablation of the same heads destroys it too; patching them from the same prompt is a no-op.
  const json mean = forward("--ablate 1.0,1.1,1.2,1.3 --ablate-mode mean");
  const json patch = forward("--ablate 1.0,1.1,1.2,1.3 --ablate-mode patch --patch-source " + kRepeated);
  ASSERT_FALSE(mean.is_null() || patch.is_null());
  EXPECT_GT(mean["loss"].get<double>() - cleanLoss, 2.0);
  EXPECT_NEAR(patch["loss"].get<double>(), cleanLoss, 1e-4);
  EXPECT_EQ(patch["interventions"]["source_ids"].size(), 31u);
}

TEST_F(CliAblate, GenerateCopiesOnlyWithTheInductionHeads) {
  const std::string prompt = kHalf + kHalf.substr(0, 8);  // the copy continues with kHalf[8..11]
  auto generated = [&](const std::string& flags) {
    const CliRun r = run("generate --model " + kInduction + " --prompt " + prompt + " --max-new 4 --greedy " + flags);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.exitCode == 0 ? json::parse(r.out) : json();
  };
  const json clean = generated(""), ablated = generated("--ablate 1.0,1.1,1.2,1.3");
  ASSERT_FALSE(clean.is_null() || ablated.is_null());
  EXPECT_EQ(clean["text"], kHalf.substr(8, 4));
  EXPECT_NE(ablated["text"], kHalf.substr(8, 4));
  EXPECT_EQ(ablated["interventions"]["ablate"], "1.0,1.1,1.2,1.3");
}

TEST_F(CliAblate, DumpOfARopeAttentionOnlyModel) {
  const CliRun r = run("forward --model " + kInduction + " --text " + kRepeated + " --dump " + dir_.file("dump"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // logits, ids, dla.json; per layer attn, resid, q, k, v, head_out, attn_out; no mlp_act (no MLP).
  EXPECT_EQ(json::parse(r.out)["dump"]["files"], 3 + 2 * 7);
  EXPECT_FALSE(std::ifstream(dir_.file("dump/mlp_act_0.npy")).good());
  const int T = 31, H = 4, D = 16;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string l = std::to_string(layer);
    const tscope::NpyArray q = tscope::readNpy(dir_.file("dump/q_" + l + ".npy")), k = tscope::readNpy(dir_.file("dump/k_" + l + ".npy"));
    const tscope::NpyArray attn = tscope::readNpy(dir_.file("dump/attn_" + l + ".npy"));
    ASSERT_EQ(q.shape, (std::vector<int64_t>{H, T, D}));
    ASSERT_EQ(k.shape, (std::vector<int64_t>{H, T, D}));
    ASSERT_EQ(tscope::readNpy(dir_.file("dump/head_out_" + l + ".npy")).shape, (std::vector<int64_t>{H, T, D}));
    // softmax(q k^T / sqrt D) over the keys each query sees is the attention map: q and k are the
    // rotated ones the forward compared.
    double worst = 0;
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> scores(t + 1);
        for (int j = 0; j <= t; ++j)
          for (int d = 0; d < D; ++d) scores[j] += q.data[(h * T + t) * D + d] * k.data[(h * T + j) * D + d] / std::sqrt(D);
        const double top = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - top));
        for (int j = 0; j <= t; ++j) worst = std::max(worst, std::abs(scores[j] / sum - attn.data[(h * T + t) * T + j]));
      }
    EXPECT_LT(worst, 1e-4) << "layer " << layer << ": softmax(q k / sqrt D) vs the attention map, largest difference " << worst;
  }
  std::ifstream in(dir_.file("dump/dla.json"));
  const json dla = json::parse(in);
  ASSERT_FALSE(dla.contains("error")) << dla.dump();
  EXPECT_EQ(dla["position"], T - 1);
  EXPECT_EQ(dla["token"], json::parse(r.out)["next"][0]["id"]);
  double parts = dla["embedding"].get<double>() + dla["norm_bias"].get<double>();
  for (const auto& layer : dla["heads"]) {
    EXPECT_EQ(layer.size(), 4u);
    for (const auto& head : layer) parts += head.get<double>();
  }
  for (const char* name : {"attn_bias", "mlp"})
    for (const auto& value : dla[name]) parts += value.get<double>();
  EXPECT_NEAR(parts, dla["logit"].get<double>(), 1e-4 * std::abs(dla["logit"].get<double>())) << "the parts sum to the logit";
}

TEST_F(CliAblate, PostNormDumpSaysWhyThereIsNoAttribution) {
  std::ofstream(dir_.file("config.json")) << R"({"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 32, "norm_position": "post"})";
  ASSERT_EQ(run("init --out " + dir_.file("post") + " --config " + dir_.file("config.json")).exitCode, 0);
  const CliRun r = run("forward --model " + dir_.file("post") + " --text 'Post norm.' --dump " + dir_.file("dump"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::ifstream in(dir_.file("dump/dla.json"));
  const json dla = json::parse(in);
  ASSERT_TRUE(dla.contains("error")) << dla.dump();
  EXPECT_EQ(dla["error"].get<std::string>().find('\n'), std::string::npos);
  EXPECT_TRUE(std::ifstream(dir_.file("dump/mlp_act_1.npy")).good()) << "a dense MLP's activation is dumped";
}

}  // namespace

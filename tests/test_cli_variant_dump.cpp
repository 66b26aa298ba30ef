// tscope-cli forward --dump --attention-variant end to end: approx_attn_<l>.npy (H, T, T) and
// approx_error_<l>.npy (H, T) per layer and attention_variant.json; the exact variant and a window
// wider than the prompt reproduce the model's own attention maps with zero error; the error file
// is the L1 distance of the two maps row by row; a grouped-query, bidirectional model takes each
// head's kv head and the model's causal flag; bad variants and knobs are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/io/npy.h"
#include "tests/test_files.h"

namespace tscope::testing {
namespace {

using nlohmann::json;

const std::string kInduction = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l";
const std::string kPrompt = "qwertyuiopasdfghqwertyu";  // T = 23 characters
constexpr int kT = 23, kH = 4, kLayers = 2;

class CliVariantDump : public ::testing::Test {
 protected:
  ScratchDir dir_{"tscope_cli_variant_dump"};

  // forward --dump with `flags` on `model`; the parsed stdout (null on failure).
  json dump(const std::string& flags, const std::string& model = kInduction) {
    const CliRun r = runCli("forward --model " + model + " --text " + kPrompt + " --dump " + dir_.file("dump") + " " + flags, dir_);
    EXPECT_EQ(r.exitCode, 0) << flags << ": " << r.err;
    return r.exitCode == 0 ? json::parse(r.out) : json();
  }
  NpyArray npy(const std::string& name) const { return readNpy(dir_.file("dump/" + name)); }
  json variantJson() const {
    std::ifstream in(dir_.file("dump/attention_variant.json"));
    EXPECT_TRUE(in.good());
    return in.good() ? json::parse(in) : json();
  }
  // max |approx_attn - attn| over every layer, and the largest approx_error.
  std::pair<double, double> distanceFromModelMaps(int layers) const {
    double mapDiff = 0, rowError = 0;
    for (int l = 0; l < layers; ++l) {
      const std::string s = std::to_string(l);
      const NpyArray approx = npy("approx_attn_" + s + ".npy"), exact = npy("attn_" + s + ".npy"), error = npy("approx_error_" + s + ".npy");
      EXPECT_EQ(approx.shape, exact.shape);
      for (size_t x = 0; x < approx.data.size() && x < exact.data.size(); ++x)
        mapDiff = std::max(mapDiff, std::fabs(static_cast<double>(approx.data[x]) - exact.data[x]));
      for (float e : error.data) rowError = std::max(rowError, static_cast<double>(e));
    }
    return {mapDiff, rowError};
  }
};

TEST_F(CliVariantDump, FilesHaveTheirShapesAndTheJsonItsKnobs) {
  const json plain = dump("");
  const json out = dump("--attention-variant linformer --projected 4 --projection gaussian --seed 3");
  ASSERT_FALSE(out.is_null() || plain.is_null());
  EXPECT_EQ(out["dump"]["files"].get<int>(), plain["dump"]["files"].get<int>() + 2 * kLayers + 1);
  for (int l = 0; l < kLayers; ++l) {
    const std::string s = std::to_string(l);
    EXPECT_EQ(npy("approx_attn_" + s + ".npy").shape, (std::vector<int64_t>{kH, kT, kT}));
    EXPECT_EQ(npy("approx_error_" + s + ".npy").shape, (std::vector<int64_t>{kH, kT}));
  }
  const json v = variantJson();
  EXPECT_EQ(v["variant"], "linformer");
  EXPECT_EQ(v["knobs"], (json{{"projected", 4}, {"projection", "gaussian"}, {"seed", 3}}));
  EXPECT_EQ(v["causal"], true);
  ASSERT_EQ(v["layers"].size(), static_cast<size_t>(kLayers));
  for (const json& layer : v["layers"]) {
    ASSERT_EQ(layer["heads"].size(), static_cast<size_t>(kH));
    for (const json& head : layer["heads"]) {
      EXPECT_GT(head["mean_row_error"].get<double>(), 1e-3) << "k = 4 of 23 tokens is an approximation";
      EXPECT_GT(head["out_rel_error"].get<double>(), 1e-3);
    }
  }
}

TEST_F(CliVariantDump, ExactAndAWideWindowAreTheModelsOwnMaps) {
  for (const std::string flags : {"--attention-variant exact", "--attention-variant flash --tile 5", "--attention-variant window --window 23",
                                  "--attention-variant linformer --projected 1000"}) {
    ASSERT_FALSE(dump(flags).is_null()) << flags;
    const auto [mapDiff, rowError] = distanceFromModelMaps(kLayers);
    EXPECT_LT(mapDiff, 1e-5) << flags;
    EXPECT_LT(rowError, 1e-5) << flags;
    for (const json& layer : variantJson()["layers"])
      for (const json& head : layer["heads"]) {
        EXPECT_LT(head["mean_row_error"].get<double>(), 1e-5) << flags;
        EXPECT_LT(head["out_rel_error"].get<double>(), 1e-5) << flags;
      }
  }
  ASSERT_FALSE(dump("--attention-variant window --window 4").is_null());
  EXPECT_GT(distanceFromModelMaps(kLayers).second, 1e-2) << "a narrow window is not exact";
}

TEST_F(CliVariantDump, ErrorIsTheRowL1DistanceAndPoolRowsSumToOne) {
  ASSERT_FALSE(dump("--attention-variant linformer --projected 6").is_null());
  for (int l = 0; l < kLayers; ++l) {
    const std::string s = std::to_string(l);
    const NpyArray approx = npy("approx_attn_" + s + ".npy"), exact = npy("attn_" + s + ".npy"), error = npy("approx_error_" + s + ".npy");
    ASSERT_EQ(approx.data.size(), static_cast<size_t>(kH) * kT * kT);
    ASSERT_EQ(exact.data.size(), approx.data.size());
    for (int row = 0; row < kH * kT; ++row) {
      double l1 = 0, sum = 0;
      for (int j = 0; j < kT; ++j) {
        const size_t at = static_cast<size_t>(row) * kT + j;
        l1 += std::fabs(static_cast<double>(approx.data[at]) - exact.data[at]);
        sum += approx.data[at];
      }
      EXPECT_NEAR(error.data[row], l1, 1e-5) << "layer " << l << " row " << row;
      EXPECT_NEAR(sum, 1.0, 1e-5) << "layer " << l << " row " << row;
    }
  }
}

TEST_F(CliVariantDump, GroupedQueryBidirectionalModelUsesEachHeadsKvHead) {
  std::ofstream(dir_.file("config.json")) << R"({"n_layer": 2, "n_head": 4, "n_kv_head": 2, "n_embd": 32, "n_positions": 64,
    "position_encoding": "rope", "causal": false, "attention_only": true})";
  const CliRun init = runCli("init --out " + dir_.file("m") + " --config " + dir_.file("config.json") + " --seed 5 --init-std 0.3", dir_);
  ASSERT_EQ(init.exitCode, 0) << init.err;
  ASSERT_FALSE(dump("--attention-variant exact", dir_.file("m")).is_null());
  EXPECT_EQ(variantJson()["causal"], false);
  const auto [mapDiff, rowError] = distanceFromModelMaps(2);
  EXPECT_LT(mapDiff, 1e-5);
  EXPECT_LT(rowError, 1e-5);
  // A bidirectional map has weight above the diagonal, and the maps are peaked enough that another
  // head's keys would not pass for these.
  const NpyArray approx = npy("approx_attn_0.npy");
  EXPECT_GT(approx.data[1], 0.0f);
  EXPECT_GT(*std::max_element(approx.data.begin(), approx.data.end()), 0.3f);
}

TEST_F(CliVariantDump, BadVariantsAndKnobsAreOneLine) {
  const std::string base = "forward --model " + kInduction + " --text abc ";
  const std::string withDump = base + "--dump " + dir_.file("bad") + " ";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {withDump + "--attention-variant reformer", {"--attention-variant", "reformer", "linformer"}},
      {withDump + "--attention-variant lsh --buckets 0", {"buckets", "0"}},
      {withDump + "--attention-variant window --window -1", {"window", "-1"}},
      {withDump + "--attention-variant linformer --projection random", {"--projection", "random"}},
      {withDump + "--attention-variant flash --tile x", {"--tile"}},
      {base + "--attention-variant exact", {"--attention-variant", "--dump"}},
      {withDump + "--window 4", {"--attention-variant"}},
  };
  for (const auto& [command, parts] : cases) {
    const CliRun r = runCli(command, dir_);
    EXPECT_NE(r.exitCode, 0) << command;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << ": " << r.err;
    for (const std::string& part : parts) tscope::testing::expectMentions(r.err.substr(0, r.err.find_last_not_of('\n') + 1), {part});
    EXPECT_TRUE(r.out.empty()) << command;
    EXPECT_FALSE(std::ifstream(dir_.file("bad/ids.npy")).good()) << command << ": nothing is written";
  }
}

}  // namespace
}  // namespace tscope::testing

// tscope-cli compare-forward: a model against itself gives KL 0 and no map difference; a what-if
// on one side gives the KL of the two next-token distributions computed by hand from the two sides'
// logits (--dump), and map differences that are the dumped maps' difference; two prompts and two
// models compare position by position; two tokenizations of one text are aligned by
// character spans or the output says why not; bad flags are one line.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/io/npy.h"
#include "model/nn/compare_views.h"
#include "tests/cli_output.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace {

const std::string kModels = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/";

class CliCompareForward : public ::testing::Test {
 protected:
  ScratchDir dir_{"tscope_cli_compare_forward"};
  json compare(const std::string& flags) { return tscope::testing::parsed(runCli("compare-forward --backend cpu " + flags, dir_)); }
};

TEST_F(CliCompareForward, AModelAgainstItselfAndAgainstAWhatIf) {
  const std::string both = "--left " + kModels + "induction-2l --right " + kModels + "induction-2l --text ZXqwertyuiopqwert";
  const json same = compare(both);
  // The two sides are two Transformers on one backend: equal up to the Eigen GEMM's blocking, which
  // follows the threads OpenMP hands out on a loaded machine (differences of 1e-7 seen under CTest -j2).
  EXPECT_NEAR(same["kl"].get<double>(), 0.0, 1e-6);
  EXPECT_TRUE(same["same_tokens"].get<bool>());
  ASSERT_EQ(same["attention"].size(), 2u);
  for (const json& layer : same["attention"])
    for (const json& d : layer["max_abs_difference"]) EXPECT_LT(d.get<double>(), 1e-5);
  EXPECT_EQ(same["left"]["lens"][1]["token"], "y");  // induction-2l copies: "...qwert" -> "y"

  const std::string dump = (dir_.path() / "dump").string();
  const json changed = compare(both + " --right-what-if no-causal-mask --dump " + dump);
  EXPECT_EQ(changed["right"]["what_ifs"], "no-causal-mask");
  const tscope::NpyArray left = tscope::readNpy(dump + "/left_logits.npy"), right = tscope::readNpy(dump + "/right_logits.npy");
  EXPECT_NEAR(changed["kl"].get<double>(), tscope::klDivergence(left.data, right.data), 1e-9);
  EXPECT_GT(changed["kl"].get<double>(), 1.0);
  const tscope::NpyArray l0 = tscope::readNpy(dump + "/left_attn_0.npy"), r0 = tscope::readNpy(dump + "/right_attn_0.npy"),
                         d0 = tscope::readNpy(dump + "/diff_attn_0.npy");
  ASSERT_EQ(d0.data.size(), l0.data.size());
  double maxHead0 = 0;
  const size_t map = l0.data.size() / 4;
  for (size_t i = 0; i < d0.data.size(); ++i) {
    EXPECT_FLOAT_EQ(d0.data[i], r0.data[i] - l0.data[i]);
    if (i < map) maxHead0 = std::max(maxHead0, (double)std::abs(d0.data[i]));
  }
  EXPECT_NEAR(changed["attention"][0]["max_abs_difference"][0].get<double>(), maxHead0, 1e-6);
}

TEST_F(CliCompareForward, TwoPromptsTwoModelsAndTwoTokenizations) {
  const json prompts =
      compare("--left " + kModels + "brown-small --right " + kModels + "brown-small --left-text 'He said that he' --right-text 'She said that she'");
  EXPECT_GT(prompts["kl"].get<double>(), 0.0);
  EXPECT_FALSE(prompts["same_tokens"].get<bool>());
  const json models = compare("--left " + kModels + "brown-small --right " + kModels + "brown-moe --text 'The jury said that'");
  // Two Brown BPEs (8192 and 6144 tokens) whose first merges agree: the same ids for this text, so
  // the maps compare cell by cell, but no KL over two vocabularies.
  EXPECT_TRUE(models["same_tokens"].get<bool>());
  EXPECT_NE(models["kl_missing"].get<std::string>().find("8192 and 6144"), std::string::npos);
  EXPECT_EQ(models["attention_note"], "the same tokens on both sides: right - left, cell by cell");
  const json cut = compare("--left " + kModels + "brown-small --right " + kModels + "induction-2l --text ZXqwertyuiop");
  EXPECT_NE(cut["kl_missing"].get<std::string>().find("different vocabularies"), std::string::npos);
  EXPECT_NE(cut["attention_note"].get<std::string>().find("character spans"), std::string::npos) << cut["attention_note"];
  EXPECT_FALSE(cut["attention"].empty());
}

TEST_F(CliCompareForward, BadFlagsAreOneLine) {
  const std::string m = kModels + "induction-2l";
  for (const auto& [flags, words] : std::vector<std::pair<std::string, std::string>>{
           {"--left " + m + " --right " + m, "--text S"},
           {"--left " + m + " --right " + m + " --text abc --left-text abc", "--text S"},
           {"--left " + m + " --text abc", "--right"},
           {"--left " + m + " --right " + m + " --text abc --right-what-if skip-mlp:0", "attention-only"},
           {"--left " + m + " --right " + kModels + "dates-encdec --text abc", "encoder-decoder"}}) {
    const CliRun r = runCli("compare-forward " + flags, dir_);
    EXPECT_NE(r.exitCode, 0) << flags;
    EXPECT_NE(tscope::testing::oneLine(r).find(words), std::string::npos) << flags << ": " << r.err;
  }
}

}  // namespace

// tscope-cli forward --what-if on the shipped induction-2l, whose copy of a repeated half needs
// every piece the what-ifs take out: without the causal mask (each position sees the answer's
// neighbours and the trained heads misfire), without positions (the previous-token head cannot find
// the previous token) or with layer 0's softmax made uniform (the same head, flattened) the copy is
// gone (nats of loss); without the 1/sqrt(d) scaling it survives (sharper maps pick the same keys).
// Bad what-ifs are one line naming the item; a shuffle reports the order it read the ids in.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "tests/cli_output.h"
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

class CliWhatIf : public ::testing::Test {
 protected:
  ScratchDir dir_{"tscope_cli_what_if"};
  json forward(const std::string& whatIf) {
    return tscope::testing::parsed(runCli(
        "forward --backend cpu --model " + kInduction + " --text " + kRepeated + " --loss-from 16" + (whatIf.empty() ? "" : " --what-if " + whatIf),
        dir_));
  }
};

TEST_F(CliWhatIf, TheCopyNeedsTheMaskThePositionsAndThePreviousTokenHeadButNotTheScale) {
  EXPECT_LT(forward("")["loss"].get<double>(), 0.1);
  for (const char* broken : {"no-causal-mask", "no-positions", "uniform-attention:0"}) {
    const json j = forward(broken);
    EXPECT_GT(j["loss"].get<double>(), 5.0) << broken;
    EXPECT_EQ(j["what_ifs"], broken);
  }
  EXPECT_LT(forward("no-scale")["loss"].get<double>(), 0.1);
}

TEST_F(CliWhatIf, AShuffleSaysTheOrderAndBadOnesAreOneLine) {
  const json clean = forward(""), shuffled = forward("shuffle:4");
  const std::vector<int> order = shuffled["shuffle_order"].get<std::vector<int>>(), ids = clean["ids"].get<std::vector<int>>();
  ASSERT_EQ(order.size(), ids.size());
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(order.size());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(shuffled["ids"][i].get<int>(), ids[order[i]]);
  for (const auto& [flag, words] :
       std::vector<std::pair<std::string, std::string>>{{"skip-mlp:0", "skip-mlp:0: this model is attention-only"},
                                                        {"uniform-attention:7", "layer 7 is outside the model's 2 layers"},
                                                        {"no-brain", "'no-brain': not one of no-causal-mask"},
                                                        {"shuffle", "expected shuffle:SEED"}}) {
    const CliRun r = runCli("forward --model " + kInduction + " --text abc --what-if " + flag, dir_);
    EXPECT_EQ(r.exitCode, 1) << flag;
    EXPECT_NE(tscope::testing::oneLine(r).find(words), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace

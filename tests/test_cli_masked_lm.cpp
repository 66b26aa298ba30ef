// tscope-cli with the shipped masked language model (brown-bert) at its edges: fill's JSON and its
// agreement with forward's logits, forward reading "[MASK]" as the app does ([CLS] text [SEP]), a
// text past the context, no [MASK], a decoder asked to fill, brown-bert asked to generate, and
// fill-eval's refusal of a decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/io/npy.h"
#include "tests/cli_output.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::expectMentions;
using tscope::testing::oneLine;
using tscope::testing::parsed;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace {

const std::string kBert = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-bert";
const std::string kSmall = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-small";

}  // namespace

TEST(CliMaskedLm, FillAgreesWithForwardOnTheSameText) {
  ScratchDir dir;
  const std::string text = "\"The President of the United [MASK] came back to the White House and [MASK] that\"";
  const json fill = parsed(runCli("fill --backend cpu --top 5 --model " + kBert + " --text " + text, dir));
  ASSERT_EQ(fill["masks"].size(), 2u);
  const int first = fill["masks"][0]["position"];
  EXPECT_EQ(fill["tokens"][0], "[CLS]");
  EXPECT_EQ(fill["tokens"].back(), "[SEP]");
  EXPECT_EQ(fill["masks"][0]["top"][0]["token"], " States");
  EXPECT_EQ(fill["masks"][0]["top"].size(), 5u);
  // forward runs the same ids, and the softmax of its dumped logits at the blank is fill's probability.
  const json forward = parsed(runCli("forward --backend cpu --top 3 --model " + kBert + " --text " + text + " --dump " + dir.file("dump"), dir));
  EXPECT_EQ(forward["ids"], fill["ids"]);
  const tscope::NpyArray logits = tscope::readNpy(dir.file("dump") + "/logits.npy");
  ASSERT_EQ(logits.shape.size(), 2u);
  const size_t V = static_cast<size_t>(logits.shape[1]);
  const float* row = logits.data.data() + static_cast<size_t>(first) * V;
  double sum = 0;
  const double top = *std::max_element(row, row + V);
  for (size_t v = 0; v < V; ++v) sum += std::exp(row[v] - top);
  const int best = fill["masks"][0]["top"][0]["id"];
  EXPECT_NEAR(std::exp(row[best] - top) / sum, fill["masks"][0]["top"][0]["p"].get<double>(), 1e-5);
  EXPECT_GT(first, 0);
}

TEST(CliMaskedLm, EdgesAreOneLine) {
  ScratchDir dir;
  CliRun run = runCli("fill --backend cpu --model " + kBert + " --text \"no blank here\"", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"no [MASK]"});
  std::string longText;
  for (int i = 0; i < 30; ++i) longText += "The jury said that the [MASK] was held. ";
  run = runCli("fill --backend cpu --model " + kBert + " --text \"" + longText + "\"", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"longer than the model's context of 128", "fall past the context"});
  run = runCli("forward --backend cpu --model " + kBert + " --text \"" + longText + "\"", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"longer than the model's context"});
  run = runCli("fill --backend cpu --model " + kSmall + " --text \"The jury [MASK] that\"", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"predicts the next token", "brown-bert"});
  run = runCli("generate --backend cpu --model " + kBert + " --prompt \"The jury\" --max-new 3", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"masked language model", "fill"});
  run = runCli("fill-eval --backend cpu --model " + kSmall, dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"not a masked language model"});
  // One token of text, an empty text: [CLS] and [SEP] around it, no blank to fill.
  run = runCli("fill --backend cpu --model " + kBert + " --text \"\"", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"no [MASK]"});
  const json one = parsed(runCli("fill --backend cpu --model " + kBert + " --text \"[MASK]\"", dir));
  EXPECT_EQ(one["ids"].size(), 3u);
}

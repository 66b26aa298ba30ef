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

// The three families (the Architecture panel's view): each shipped model's output is what its own
// command gives for the same input (generate's greedy token, fill's top fillers, generate --source's
// translation); a models folder without them is one error line per model and exit 1.
TEST(CliMaskedLm, FamiliesRunTheThreeShippedModels) {
  ScratchDir dir;
  const json families = parsed(runCli("families --top 2", dir))["families"];
  ASSERT_EQ(families.size(), 3u);
  const json gpt = families[0], bert = families[1], t5 = families[2];
  EXPECT_EQ(gpt["model"], "brown-small");
  EXPECT_EQ(gpt["mask"], "causal");
  EXPECT_EQ(bert["mask"], "bidirectional");
  EXPECT_EQ(t5["mask"], "encoder-decoder");
  for (const json& family : families) EXPECT_EQ(family["error"], "") << family.dump();
  // GPT: the most probable next token is the greedy one.
  const json greedy =
      parsed(runCli("generate --backend cpu --greedy --max-new 1 --model " + kSmall + " --prompt \"" + gpt["input"].get<std::string>() + "\"", dir));
  EXPECT_EQ(gpt["output"], gpt["input"].get<std::string>() + greedy["text"].get<std::string>()) << greedy.dump();
  ASSERT_EQ(gpt["top"].size(), 1u);
  EXPECT_EQ(gpt["top"][0].size(), 2u);
  // BERT: both blanks, each with fill's fillers and probabilities.
  const json fill = parsed(runCli("fill --backend cpu --top 2 --model " + kBert + " --text \"" + bert["input"].get<std::string>() + "\"", dir));
  ASSERT_EQ(bert["top"].size(), 2u);
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(bert["top"][m][i]["token"], fill["masks"][m]["top"][i]["token"]);
      EXPECT_NEAR(bert["top"][m][i]["p"].get<double>(), fill["masks"][m]["top"][i]["p"].get<double>(), 1e-6);
    }
  EXPECT_EQ(bert["output"].get<std::string>().find("[MASK]"), std::string::npos);
  // T5: the greedy translation of the spelled-out date.
  const std::string encdec = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/dates-encdec";
  const json translated =
      parsed(runCli("generate --backend cpu --greedy --max-new 12 --model " + encdec + " --source \"" + t5["input"].get<std::string>() + "\"", dir));
  EXPECT_NE(translated["text"].get<std::string>().find(t5["output"].get<std::string>()), std::string::npos) << translated.dump();
  EXPECT_EQ(t5["output"].get<std::string>().size(), 10u);  // YYYY-MM-DD
  const CliRun missing = runCli("families --models " + dir.path().string(), dir);
  EXPECT_EQ(missing.exitCode, 1);
  for (const char* model : {"brown-small", "brown-bert", "dates-encdec"})  // one line each
    EXPECT_NE(missing.err.find(std::string("families: ") + model + ": "), std::string::npos) << missing.err;
  EXPECT_EQ(parsed(CliRun{0, false, missing.out, ""})["families"].size(), 3u);
}

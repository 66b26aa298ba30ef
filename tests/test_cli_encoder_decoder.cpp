// tscope-cli with an encoder-decoder model (the shipped dates-encdec, context 58) at the edges of
// its source input: a translation end to end (greedy, sampled and beam), no source, an empty one,
// one character, exactly the context, past it, characters the model does not know, invalid UTF-8
// through --source-file, a source on a decoder-only model, and the dumps' shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

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

const std::string kDates = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/dates-encdec";

TEST(CliEncoderDecoder, TranslatesGreedySampledAndBeam) {
  ScratchDir dir("tscope_cli_encdec");
  const std::string source = "--source 'the third of may two thousand and seven'";
  const json greedy = parsed(runCli("generate --model " + kDates + " " + source + " --greedy --backend cpu", dir));
  EXPECT_EQ(greedy.value("text", ""), "2007-05-03$");
  EXPECT_EQ(greedy.value("stop", ""), "end_of_text");
  const json sampled = parsed(runCli("generate --model " + kDates + " " + source + " --seed 3 --temperature 0.5 --backend cpu", dir));
  EXPECT_EQ(sampled.value("text", ""), "2007-05-03$") << "at temperature 0.5 the trained model is still sure";
  const json beam = parsed(runCli("generate --model " + kDates + " " + source + " --beam 3 --max-new 12 --backend cpu", dir));
  EXPECT_EQ(beam.value("text", ""), "2007-05-03$");
  // A target prefix goes after the start token: forcing "19" makes the model continue a 19xx date.
  const json forced = parsed(runCli("generate --model " + kDates + " " + source + " --prompt 19 --greedy --backend cpu", dir));
  EXPECT_EQ(forced.value("text", "").substr(0, 2), "07") << forced.dump();
}

TEST(CliEncoderDecoder, SourceEdges) {
  ScratchDir dir("tscope_cli_encdec");
  const std::string forward = "forward --model " + kDates + " --backend cpu ";
  // No source: a usage error naming the flags.
  CliRun run = runCli(forward + "--text 19", dir);
  EXPECT_EQ(run.exitCode, 2);
  expectMentions(oneLine(run), {"--source"});
  // An empty source: one line, exit 1.
  run = runCli(forward + "--source ''", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"empty"});
  // One character, and exactly the context (58): they run; the decoder input is the start token alone.
  json out = parsed(runCli(forward + "--source a", dir));
  EXPECT_EQ(out["source_ids"].size(), 1u);
  EXPECT_EQ(out["ids"], json::array({1}));
  out = parsed(runCli(forward + "--source " + std::string(58, 'x'), dir));
  EXPECT_EQ(out["source_ids"].size(), 58u);
  EXPECT_EQ(out.value("source_dropped_tokens", -1), 0);
  // Past the context: the last 58 characters run, with a note.
  run = runCli(forward + "--source " + std::string(70, 'x'), dir);
  out = parsed(run);
  EXPECT_EQ(out["source_ids"].size(), 58u);
  EXPECT_EQ(out.value("source_dropped_tokens", -1), 12);
  expectMentions(oneLine(run), {"--source", "70", "58"});
  // A target past the context: the start token stays first, the target's oldest characters go.
  run = runCli(forward + "--source 'may first twenty ten' --text " + std::string(70, '1'), dir);
  out = parsed(run);
  ASSERT_EQ(out["ids"].size(), 58u);
  EXPECT_EQ(out["ids"][0], 1);
  EXPECT_EQ(out["ids"][1], out["ids"][57]);
  expectMentions(oneLine(run), {"--text", "71", "start token"});
  // Characters the model does not know run as <unk> (id 0), and invalid UTF-8 through a file too.
  out = parsed(runCli(forward + "--source 'MARCH €'", dir));
  EXPECT_EQ(out["source_ids"][0], 0);
  const std::string bad = dir.file("bad.txt");
  FILE* f = fopen(bad.c_str(), "wb");
  ASSERT_TRUE(f);
  fwrite("may \xff\xfe first", 1, 13, f);
  fclose(f);
  out = parsed(runCli(forward + "--source-file " + bad, dir));
  EXPECT_EQ(out["source_ids"].size(), 13u);
  // A source id past the vocabulary: one line, exit 1.
  run = runCli(forward + "--source-ids 5,41", dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"41", "vocabulary"});
  // A source for a decoder-only model: a usage error.
  run = runCli("forward --model " + std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l --backend cpu --text ab --source x", dir);
  EXPECT_EQ(run.exitCode, 2);
  expectMentions(oneLine(run), {"--source", "decoder-only"});
}

// --ablate L.xH zeroes a cross-attention head: with every one of them gone the decoder no longer
// reads the source, and "may" no longer gives the month's 5; a decoder-only model refuses L.xH.
TEST(CliEncoderDecoder, AblatingTheCrossAttentionCutsTheDecoderOffTheSource) {
  ScratchDir dir("tscope_cli_encdec");
  const std::string forward = "forward --model " + kDates + " --backend cpu --source 'may first twenty ten' --text 2010-0 ";
  const json one = parsed(runCli(forward + "--ablate 1.x3", dir));
  ASSERT_EQ(one["interventions"]["items"].size(), 1u);
  EXPECT_EQ(one["interventions"]["items"][0].value("cross", false), true);
  EXPECT_EQ(one["clean_next"][0]["token"], "5");
  const json all = parsed(runCli(forward + "--ablate 0.x0,0.x1,0.x2,0.x3,1.x0,1.x1,1.x2,1.x3", dir));
  EXPECT_EQ(all["clean_next"][0]["token"], "5");
  EXPECT_NE(all["next"][0]["token"], "5");
  EXPECT_LT(all["next"][0]["prob"].get<double>(), 0.9);
  const CliRun run =
      runCli("forward --model " + std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l --backend cpu --text ab --ablate 1.x0", dir);
  EXPECT_NE(run.exitCode, 0);
  expectMentions(oneLine(run), {"1.x0", "no cross-attention"});
}

TEST(CliEncoderDecoder, DumpsEveryKindOfMap) {
  ScratchDir dir("tscope_cli_encdec");
  const std::string dump = dir.file("dump");
  const json out = parsed(runCli("forward --model " + kDates + " --backend cpu --source 'may first twenty ten' --text 2010-0 --dump " + dump, dir));
  ASSERT_TRUE(out.contains("dump"));
  for (const std::string name :
       {"logits.npy", "source_ids.npy", "enc_attn_0.npy", "enc_attn_1.npy", "attn_0.npy", "attn_1.npy", "cross_0.npy", "cross_1.npy"})
    EXPECT_TRUE(std::filesystem::exists(dump + "/" + name)) << name;
  // The attribution counts the cross-attention's heads: every part together is the logit.
  const json dla = json::parse(tscope::testing::readBytes(dump + "/dla.json"));
  ASSERT_EQ(dla["cross_heads"].size(), 2u);
  ASSERT_EQ(dla["cross_heads"][0].size(), 4u);
  EXPECT_EQ(dla["cross_bias"].size(), 2u);
  EXPECT_NEAR(dla["sum"].get<double>(), dla["logit"].get<double>(), 1e-3 * std::max(1.0, std::abs(dla["logit"].get<double>())));
  double cross = 0;
  for (const auto& layer : dla["cross_heads"])
    for (const auto& head : layer) cross += std::abs(head.get<double>());
  EXPECT_GT(cross, 0.1) << "the date comes from the source: the cross-attention heads carry it";
  // cross_0.npy is (H, T, S) = (4, 7, 20): its header says so.
  const std::string header = tscope::testing::readBytes(dump + "/cross_0.npy").substr(0, 128);
  EXPECT_NE(header.find("(4, 7, 20)"), std::string::npos) << header;
}

}  // namespace

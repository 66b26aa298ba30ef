// tscope-cli classify with the shipped image model (digits-vit, issue #34): the JSON and the test
// split's accuracy (at least 97%, and the logistic-regression baseline's on the same split), a picture file read as
// the digits are, --dump's arrays against the forward's, and the bad inputs: not an image, a cut
// PNG, a 20000x20000 header, a text model given an image, an image model given text; a ViT trained
// with 2-D sin-cos positions end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "model/io/image.h"
#include "model/io/npy.h"
#include "model/io/safetensors.h"
#include "model/core/config.h"
#include "model/nn/vision_views.h"
#include "model/theory/cost.h"
#include "model/train/digits.h"
#include "tests/cli_output.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::expectMentions;
using tscope::testing::oneLine;
using tscope::testing::parsed;
using tscope::testing::readBytes;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

namespace {

const std::string kVit = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/digits-vit";
const std::string kSmall = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-small";

bool digitsInstalled() { return !tscope::defaultDigitsPath().empty(); }

}  // namespace

TEST(CliVision, ClassifiesATestDigitAndAPictureOfItAlike) {
  if (!digitsInstalled()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  ScratchDir dir;
  const json digit = parsed(runCli("classify --backend cpu --top 3 --model " + kVit + " --digit 5", dir));
  ASSERT_EQ(digit["top"].size(), 3u);
  EXPECT_EQ(digit["top"][0]["label"], std::to_string(digit["digit"]["label"].get<int>()));
  EXPECT_GE(digit["top"][0]["p"].get<double>(), digit["top"][1]["p"].get<double>());
  EXPECT_EQ(digit["patches"], 16);
  // The same digit as a PNG (bright ink on black, 8x8), and blown up to 64x64 dark ink on white
  // paper: preprocessor_config.json makes both the 8x8 counts the model read.
  const tscope::DigitsData data = tscope::loadDigits();
  const tscope::DigitsSplit split = tscope::digitsSplit(data.size());
  tscope::Image small{8, 8, 1, std::vector<float>(64)};
  tscope::digitImage(data, split.test[5], small.pixels.data());
  tscope::writePng(dir.file("digit.png"), small);
  const json picture = parsed(runCli("classify --backend cpu --top 3 --model " + kVit + " --image " + dir.file("digit.png"), dir));
  EXPECT_EQ(picture["top"], digit["top"]);
  EXPECT_EQ(picture["image"]["width"], 8);
  tscope::Image paper{64, 64, 1, std::vector<float>(64 * 64)};
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) paper.pixels[y * 64 + x] = 1.0f - small.pixels[(y / 8) * 8 + x / 8];
  tscope::writePng(dir.file("paper.png"), paper);
  const json onPaper = parsed(runCli("classify --backend cpu --top 1 --model " + kVit + " --image " + dir.file("paper.png"), dir));
  EXPECT_EQ(onPaper["top"][0]["label"], digit["top"][0]["label"]);
}

TEST(CliVision, TheShippedModelBeatsTheBaselineOnTheTestSplit) {
  if (!digitsInstalled()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  ScratchDir dir;
  const json out = parsed(runCli("classify --backend cpu --test-set --model " + kVit, dir));
  EXPECT_EQ(out["test_images"], 359);
  const double accuracy = out["test_accuracy"], baseline = out["baseline_logistic_regression"]["test_accuracy"];
  EXPECT_GE(accuracy, 0.97) << "assets/models/README.md states at least 97%";
  EXPECT_GT(baseline, 0.95);  // a converged softmax regression on the 64 pixels (about 98% here: the digits are easy)
  EXPECT_LT(baseline, 0.995);
  int total = 0, right = 0;
  for (int k = 0; k < 10; ++k)
    for (int j = 0; j < 10; ++j) {
      total += out["confusion"][k][j].get<int>();
      if (j == k) right += out["confusion"][k][j].get<int>();
    }
  EXPECT_EQ(total, 359);
  EXPECT_NEAR(right / 359.0, accuracy, 1e-12);
}

TEST(CliVision, DumpWritesTheViewsOfTheForward) {
  if (!digitsInstalled()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  ScratchDir dir;
  const std::string dump = dir.file("dump");
  const json out = parsed(runCli("classify --backend cpu --model " + kVit + " --digit 0 --dump " + dump, dir));
  const tscope::NpyArray pixels = tscope::readNpy(dump + "/pixels.npy");
  EXPECT_EQ(pixels.shape, (std::vector<int64_t>{1, 8, 8}));
  const tscope::NpyArray rollout = tscope::readNpy(dump + "/rollout.npy");
  ASSERT_EQ(rollout.shape, (std::vector<int64_t>{17, 17}));
  for (int i = 0; i < 17; ++i) EXPECT_NEAR(std::accumulate(rollout.data.begin() + i * 17, rollout.data.begin() + (i + 1) * 17, 0.0), 1.0, 1e-5);
  const tscope::NpyArray similarity = tscope::readNpy(dump + "/position_similarity.npy");
  ASSERT_EQ(similarity.shape, (std::vector<int64_t>{16, 16}));
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(similarity.data[i * 17], 1.0, 1e-5);
  EXPECT_EQ(tscope::readNpy(dump + "/patch_filters.npy").shape, (std::vector<int64_t>{64, 1, 2, 2}));
  // The per-layer maps are forward's; [CLS]'s logits there are the classes printed.
  const tscope::NpyArray attn = tscope::readNpy(dump + "/attn_3.npy");
  EXPECT_EQ(attn.shape, (std::vector<int64_t>{4, 17, 17}));
  const tscope::NpyArray logits = tscope::readNpy(dump + "/logits.npy");
  ASSERT_EQ(logits.shape, (std::vector<int64_t>{17, 10}));
  const int top = out["top"][0]["id"];
  EXPECT_EQ(std::max_element(logits.data.begin(), logits.data.begin() + 10) - logits.data.begin(), top);
}

TEST(CliVision, A2dSinCosVitTrainsAndItsDumpShowsTheFixedTable) {
  if (!digitsInstalled()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  ScratchDir dir;
  // digits-vit's config, one layer and 2-D sin-cos positions, 20 steps.
  json config = json::parse(readBytes(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/configs/digits-vit.json"));
  config["model"]["n_layer"] = 1;
  config["model"]["position_encoding"] = "sinusoidal";
  config["train"]["eval_every"] = 20;
  writeBytes(dir.file("vit.json"), config.dump());
  const std::string run = dir.file("run");
  const json trained = parsed(runCli("train --backend cpu --config " + dir.file("vit.json") + " --data digits --steps 20 --quiet --out " + run, dir));
  const json saved = json::parse(readBytes(run + "/config.json"));
  EXPECT_EQ(saved.at("position_encoding"), "sinusoidal");
  EXPECT_EQ(saved.at("n_layer"), 1);
  EXPECT_EQ(trained.at("parameters").get<long long>(), tscope::countParameters(tscope::configFromJson(saved)).total);
  EXPECT_FALSE(tscope::SafetensorsFile(run + "/model.safetensors").has("wpe.weight")) << "a fixed table is not a weight";
  // The dump's similarity grid is the 2-D table's, untrained, and classify runs on it.
  const json out = parsed(runCli("classify --backend cpu --model " + run + " --digit 3 --dump " + dir.file("dump"), dir));
  EXPECT_EQ(out.at("top").size(), 5u);
  const tscope::NpyArray similarity = tscope::readNpy(dir.file("dump") + "/position_similarity.npy");
  const std::vector<float> expected = tscope::positionSimilarity(tscope::configFromJson(saved), nullptr, 0);
  ASSERT_EQ(similarity.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(similarity.data[i], expected[i], 1e-6) << i;
}

TEST(CliVision, BadInputsAreOneLine) {
  ScratchDir dir;
  writeBytes(dir.file("notes.png"), "these are lecture notes, not a picture");
  tscope::testing::CliRun run = runCli("classify --backend cpu --model " + kVit + " --image " + dir.file("notes.png"), dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"notes.png", "not a PNG"});
  // A PNG cut in half.
  tscope::Image grey{16, 16, 1, std::vector<float>(256, 0.5f)};
  tscope::writePng(dir.file("whole.png"), grey);
  const std::string bytes = readBytes(dir.file("whole.png"));
  writeBytes(dir.file("cut.png"), bytes.substr(0, bytes.size() / 2));
  run = runCli("classify --backend cpu --model " + kVit + " --image " + dir.file("cut.png"), dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"cut.png"});
  // A header that claims 20000 x 20000 pixels: refused before any pixel is decoded.
  std::string huge = bytes;
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) huge[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  };
  put32(16, 20000);
  put32(20, 20000);
  writeBytes(dir.file("huge.png"), huge);
  run = runCli("classify --backend cpu --model " + kVit + " --image " + dir.file("huge.png"), dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"huge.png"});
  // A missing file, a text model given an image, an image model given text, both inputs.
  run = runCli("classify --backend cpu --model " + kVit + " --image " + dir.file("missing.png"), dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"missing.png", "no such file"});
  run = runCli("classify --backend cpu --model " + kSmall + " --image " + dir.file("whole.png"), dir);
  EXPECT_EQ(run.exitCode, 1);
  expectMentions(oneLine(run), {"text model", "image model"});
  for (const char* command : {"forward --backend cpu --text hello", "generate --backend cpu --max-new 2 --prompt hello", "tokenize --text hello"}) {
    run = runCli(std::string(command) + " --model " + kVit, dir);
    EXPECT_NE(run.exitCode, 0) << command;
    expectMentions(oneLine(run), {"image model", "classify"});
  }
  run = runCli("classify --backend cpu --model " + kVit + " --digit 1 --image " + dir.file("whole.png"), dir);
  EXPECT_NE(run.exitCode, 0);
  expectMentions(oneLine(run), {"--image", "--digit"});
}

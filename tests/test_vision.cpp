// The Vision Transformer (issue #34, docs/VISION.md): the image config and its rules, patches as
// tokens, the forward against a plain computation of its embedding, training's gradients against
// finite differences, training's loss against the inference forward, the views (rollout, position
// similarity, filters), and the digits data.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "model/core/config.h"
#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/io/model_io.h"
#include "model/nn/positional.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"
#include "model/nn/vision_views.h"
#include "model/select/backend_select.h"
#include "model/train/device.h"
#include "model/train/digits.h"
#include "model/train/train_model.h"
#include "model/train/trainer.h"
#include "model/train/train_presets.h"
#include "test_files.h"

using namespace tscope;
using tscope::testing::errorMessage;

namespace {

nlohmann::json tinyVitJson(int channels = 1, int size = 8, int patch = 2) {
  return {{"n_layer", 2},
          {"n_head", 2},
          {"n_embd", 16},
          {"d_ff", 32},
          {"vocab_size", 10},
          {"causal", false},
          {"tie_word_embeddings", false},
          {"image_size", size},
          {"patch_size", patch},
          {"num_channels", channels},
          {"activation_function", "gelu"}};
}

ModelConfig tinyVit(int channels = 1, int size = 8, int patch = 2) { return configFromJson(tinyVitJson(channels, size, patch)); }

std::vector<float> randomPixels(const ModelConfig& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> pixels(c.imageFloats());
  for (float& p : pixels) p = static_cast<float>(rng.uniform());
  return pixels;
}

}  // namespace

TEST(Vision, TheImageDecidesTheContextAndTheRulesNameTheirField) {
  const ModelConfig c = tinyVit();
  EXPECT_EQ(c.n_positions, 17);  // [CLS] + 16 patches of 2x2 in 8x8
  EXPECT_EQ(c.tokenizer, "labels");
  EXPECT_EQ(c.patchDim(), 4);
  EXPECT_EQ(imageTokenIds(c), (std::vector<int>{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  // Written and read back the same.
  const ModelConfig again = configFromJson(configToJson(c));
  EXPECT_EQ(again.image_size, 8);
  EXPECT_EQ(again.patch_size, 2);
  EXPECT_EQ(again.num_channels, 1);
  EXPECT_EQ(again.n_positions, 17);
  auto problem = [&](auto edit) {
    ModelConfig bad = c;
    edit(bad);
    return validateConfig(bad);
  };
  EXPECT_NE(problem([](ModelConfig& m) { m.patch_size = 3; }).find("patch_size (3) must divide image_size (8)"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.n_positions = 16; }).find("n_positions must be 17"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.causal = true; }).find("encoder classifier"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.tie_word_embeddings = true; }).find("tie_word_embeddings"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.position_encoding = PositionEncoding::Rope; }).find("position_encoding"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.num_channels = 5; }).find("num_channels"), std::string::npos);
  EXPECT_NE(problem([](ModelConfig& m) { m.image_size = 0; }).find("labels"), std::string::npos);  // a text model with class names
  // A patch size that does not divide the image is refused when the file is read, before any division.
  EXPECT_NE(errorMessage([] {
              configFromJson({{"image_size", 8}, {"patch_size", 0}, {"causal", false}, {"tie_word_embeddings", false}});
            }).find("patch_size"),
            std::string::npos);
}

TEST(Vision, PatchRowsReadTheImageAsViTsConvolutionDoes) {
  const ModelConfig c = tinyVit(3, 4, 2);  // 3 channels, 2x2 grid of 2x2 patches
  std::vector<float> pixels(c.imageFloats());
  std::iota(pixels.begin(), pixels.end(), 0.0f);  // value = (ch * 4 + y) * 4 + x
  const std::vector<float> rows = imagePatchRows(c, pixels.data(), pixels.size());
  ASSERT_EQ(rows.size(), (size_t)5 * 12);
  for (int k = 0; k < 12; ++k) EXPECT_EQ(rows[k], 0.0f);  // [CLS]
  // Patch (gy 1, gx 0): rows 2..3, columns 0..1; channel, then row, then column.
  const float* patch = rows.data() + 3 * 12;
  const float expected[12] = {8, 9, 12, 13, 24, 25, 28, 29, 40, 41, 44, 45};
  for (int k = 0; k < 12; ++k) EXPECT_EQ(patch[k], expected[k]) << k;
  EXPECT_NE(errorMessage([&] { imagePatchRows(c, pixels.data(), 47); }).find("the image has 47 values"), std::string::npos);
}

TEST(Vision, TheEmbeddingIsClsOrPatchProjectionPlusPosition) {
  const ModelConfig c = tinyVit();
  Weights w(c);
  w.initRandom(3, 0.2);
  const std::vector<float> pixels = randomPixels(c, 5);
  auto backend = makeBackend("cpu", 1);
  Transformer model(w, *backend);
  Trace trace;
  TraceOptions options;
  options.components = true;  // keeps the embedding (the residual entering layer 0)
  KVCache cache(*backend, c, c.n_positions);
  std::vector<float> logits;
  model.forwardImage(pixels, cache, logits, &trace, options);
  ASSERT_EQ(logits.size(), (size_t)17 * 10);
  ASSERT_EQ(trace.embedded.size(), (size_t)17 * 16);
  EXPECT_EQ(trace.tokens, imageTokenIds(c));
  const std::vector<float> rows = imagePatchRows(c, pixels.data(), pixels.size());
  const int C = 16, K = 4;
  for (int t = 0; t < 17; ++t)
    for (int j = 0; j < C; ++j) {
      double e = w.wte[(t == 0 ? 0 : 1) * C + j] + w.wpe[t * C + j];
      for (int k = 0; k < K; ++k) e += rows[t * K + k] * w.patchWeight[k * C + j];
      EXPECT_NEAR(trace.embedded[t * C + j], e, 1e-5) << t << " " << j;
    }
  // The reference backend agrees, and classLogits is row 0.
  auto reference = makeBackend("reference", 1);
  Transformer slow(w, *reference);
  const std::vector<float> classes = slow.classLogits(pixels);
  for (int v = 0; v < 10; ++v) EXPECT_NEAR(classes[v], logits[v], 1e-4);
  // A text forward on an image model, and an image on a text model, are one line each.
  EXPECT_NE(errorMessage([&] { model.logitsFor(std::vector<int>{0, 1}); }).find("image model"), std::string::npos);
  ModelConfig text;
  text.n_layer = 1;
  text.n_head = 2;
  text.n_embd = 8;
  text.vocab_size = 5;
  text.n_positions = 8;
  Weights tw(text);
  Transformer textModel(tw, *backend);
  EXPECT_NE(errorMessage([&] { textModel.classLogits(pixels); }).find("text model"), std::string::npos);
}

TEST(Vision, SinusoidalPositionsOfAnImageModelAreTwoDimensionalSinCos) {
  // The table: [CLS]'s row is zero; patch (row 1, column 2) of a 3x3 grid with d = 8 has the column's
  // sin and cos at frequencies (1, 0.01), then the row's.
  const std::vector<float> table = sincos2dEncoding(3, 8, 10000);
  ASSERT_EQ(table.size(), (size_t)10 * 8);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(table[j], 0.0f);
  const double expected[8] = {std::sin(2.0), std::sin(0.02), std::cos(2.0), std::cos(0.02),
                              std::sin(1.0), std::sin(0.01), std::cos(1.0), std::cos(0.01)};
  for (int j = 0; j < 8; ++j) EXPECT_NEAR(table[(1 + 1 * 3 + 2) * 8 + j], expected[j], 1e-6) << j;
  EXPECT_NE(errorMessage([] { sincos2dEncoding(3, 6, 10000); }).find("multiple of 4"), std::string::npos);
  nlohmann::json j = tinyVitJson();
  j["position_encoding"] = "sinusoidal";
  const ModelConfig fixed = configFromJson(j);
  j["n_embd"] = 18;
  j["d_ff"] = 36;
  EXPECT_NE(errorMessage([&] { configFromJson(j); }).find("n_embd must be a multiple of 4"), std::string::npos);

  // The forward adds exactly that table: a learned-position twin whose wpe holds it gives the same logits.
  Weights w(fixed);
  w.initRandom(3, 0.2);
  const ModelConfig learned = tinyVit();
  Weights twin(learned);
  for (const auto& tensor : w.layout()) {
    size_t index = 0;
    while (twin.layout()[index].name != tensor.name) ++index;
    ASSERT_EQ(twin.layout()[index].numel(), tensor.numel()) << tensor.name;
    std::copy_n(w.arena() + tensor.offset, tensor.numel(), twin.arena() + twin.layout()[index].offset);
  }
  const std::vector<float> table2d = fixedPositionTable(fixed);
  ASSERT_EQ(table2d.size(), (size_t)learned.n_positions * learned.n_embd);
  std::copy(table2d.begin(), table2d.end(), twin.arena() + (twin.wpe - twin.arena()));
  auto backend = makeBackend("cpu", 1);
  const std::vector<float> pixels = randomPixels(fixed, 4);
  const std::vector<float> a = Transformer(w, *backend).classLogits(pixels), b = Transformer(twin, *backend).classLogits(pixels);
  for (int v = 0; v < 10; ++v) EXPECT_NEAR(a[v], b[v], 1e-5) << v;
  // A fixed table is not a constant: the logits differ from no positions at all.
  j = tinyVitJson();
  j["position_encoding"] = "none";
  Weights none(configFromJson(j));
  for (const auto& tensor : none.layout()) {
    size_t index = 0;
    while (w.layout()[index].name != tensor.name) ++index;
    std::copy_n(w.arena() + w.layout()[index].offset, tensor.numel(), none.arena() + tensor.offset);
  }
  EXPECT_GT(std::fabs(Transformer(none, *backend).classLogits(pixels)[0] - a[0]), 1e-4);

  // Its similarity grid is the 2-D structure: a patch is nearer its neighbour than the far corner, and
  // the grid equals the one of the twin's learned table.
  EXPECT_TRUE(hasPositionTable(fixed));
  const std::vector<float> similarity = positionSimilarity(fixed, nullptr, 0);
  EXPECT_EQ(similarity, positionSimilarity(learned, twin.wpe, table2d.size()));
  EXPECT_NEAR(similarity[0], 1.0f, 1e-6);
  EXPECT_GT(similarity[1], similarity[15]);  // patch 0 against its right neighbour, and against (3, 3)
  EXPECT_GT(similarity[4], similarity[15]);  // and against the patch below it
}

TEST(Vision, TrainingLossIsTheForwardsCrossEntropyAndItsGradientIsRight) {
  ModelConfig c = tinyVit(1, 4, 2);  // 5 tokens: small enough for finite differences of every parameter kind
  Weights w(c);
  w.initRandom(9, 0.3);
  const int B = 2, T = c.n_positions;
  std::vector<float> images = randomPixels(c, 1);
  const std::vector<float> second = randomPixels(c, 2);
  images.insert(images.end(), second.begin(), second.end());
  std::vector<int> inputs, targets(B * T, 0);
  std::vector<uint8_t> scored(B * T, 0);
  for (int b = 0; b < B; ++b) {
    const std::vector<int> ids = imageTokenIds(c);
    inputs.insert(inputs.end(), ids.begin(), ids.end());
    targets[b * T] = b == 0 ? 3 : 7;
    scored[b * T] = 1;
  }
  BatchView batch{B, T, inputs.data(), targets.data(), scored.data()};
  batch.images = images.data();
  auto device = makeReferenceDevice();
  TrainModel train(c, *device);
  // The loss is the inference forward's cross-entropy at [CLS].
  auto backend = makeBackend("reference", 1);
  Transformer model(w, *backend);
  double expected = 0;
  for (int b = 0; b < B; ++b) {
    const std::vector<float> logits = model.classLogits(std::span<const float>(images.data() + b * c.imageFloats(), c.imageFloats()));
    expected += (logSumExp(logits) - logits[targets[b * T]]) / B;
  }
  const LossReport report = train.loss(w, batch);
  EXPECT_NEAR(report.loss, expected, 1e-5);
  EXPECT_EQ(report.scoredTokens, 2);
  EXPECT_GE(report.correctTokens, 0);  // image models count their hits, as a masked LM does
  // Gradients of the parameters only an image model has, and a layer's, against central differences.
  Weights grads(c);
  train.lossAndGradients(w, grads, batch);
  for (const char* name : {"patch.weight", "wte.weight", "wpe.weight", "lm_head.bias", "lm_head.weight", "h.0.attn.c_attn.weight"}) {
    size_t index = 0;
    while (w.layout()[index].name != name) ++index;
    const size_t n = w.layout()[index].numel();
    for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 7)) {
      float* p = w.arena() + w.layout()[index].offset + i;
      const float saved = *p, h = 1e-3f;
      *p = saved + h;
      const double plus = train.loss(w, batch).loss;
      *p = saved - h;
      const double minus = train.loss(w, batch).loss;
      *p = saved;
      const double numeric = (plus - minus) / (2 * h);
      const double analytic = grads.arena()[grads.layout()[index].offset + i];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << name << "[" << i << "]";
    }
  }
  // A batch without images is refused.
  batch.images = nullptr;
  EXPECT_NE(errorMessage([&] { train.loss(w, batch); }).find("images"), std::string::npos);
}

TEST(Vision, RolloutSimilarityAndFiltersAreWhatTheyName) {
  // Identity attention in every layer: the rollout is the identity.
  const int T = 3, H = 2;
  std::vector<float> identity(H * T * T, 0.0f);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i) identity[h * T * T + i * T + i] = 1.0f;
  std::vector<float> rollout = attentionRollout({identity, identity}, H, T);
  for (int i = 0; i < T * T; ++i) EXPECT_NEAR(rollout[i], i / T == i % T ? 1.0 : 0.0, 1e-6);
  // One layer attending uniformly: 0.5 (1/3 everywhere) + 0.5 I.
  std::vector<float> uniform(H * T * T, 1.0f / T);
  rollout = attentionRollout({uniform}, H, T);
  for (int i = 0; i < T * T; ++i) EXPECT_NEAR(rollout[i], 0.5 / 3 + (i / T == i % T ? 0.5 : 0.0), 1e-6);
  for (int i = 0; i < T; ++i) EXPECT_NEAR(rollout[i * T] + rollout[i * T + 1] + rollout[i * T + 2], 1.0, 1e-6);
  EXPECT_NE(errorMessage([&] { attentionRollout({std::vector<float>(5)}, H, T); }).find("layer 0"), std::string::npos);

  const ModelConfig c = tinyVit(1, 4, 2);  // 4 patches
  std::vector<float> wpe(5 * 16, 0.0f);
  for (int j = 0; j < 16; ++j) {
    wpe[1 * 16 + j] = 1.0f;            // patch 0
    wpe[2 * 16 + j] = 2.0f;            // patch 1: the same direction
    wpe[3 * 16 + j] = j < 8 ? 1 : -1;  // patch 2: orthogonal to both
    wpe[4 * 16 + j] = -1.0f;           // patch 3: opposite
  }
  const std::vector<float> sim = positionSimilarity(c, wpe.data(), wpe.size());
  EXPECT_NEAR(sim[0 * 4 + 1], 1.0, 1e-6);
  EXPECT_NEAR(sim[0 * 4 + 2], 0.0, 1e-6);
  EXPECT_NEAR(sim[0 * 4 + 3], -1.0, 1e-6);
  EXPECT_NEAR(sim[2 * 4 + 2], 1.0, 1e-6);

  std::vector<float> patch(4 * 16, 0.0f);  // K = 4 pixels, C = 16 filters
  patch[2 * 16 + 5] = -4.0f;
  patch[0 * 16 + 5] = 2.0f;
  const std::vector<float> filters = patchFilters(c, patch.data(), patch.size());
  EXPECT_EQ(filters[5 * 4 + 2], -1.0f);
  EXPECT_EQ(filters[5 * 4 + 0], 0.5f);
  EXPECT_EQ(filters[0], 0.0f);

  const std::vector<ClassScore> top = topClasses({0.0f, 2.0f, 1.0f}, {"cat", "dog"}, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].label, "dog");
  EXPECT_EQ(top[1].label, "class 2");
  EXPECT_NEAR(top[0].p, std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0)), 1e-6);
}

TEST(Vision, DigitsParseSplitAndShift) {
  std::string csv;
  for (int n = 0; n < 12; ++n) {
    for (int i = 0; i < 64; ++i) csv += std::to_string((i + n) % 17) + ",";
    csv += std::to_string(n % 10) + "\n";
  }
  const DigitsData data = parseDigitsCsv(csv, "mini.csv");
  ASSERT_EQ(data.size(), 12u);
  EXPECT_EQ(data.labels[11], 1);
  float image[64], shifted[64];
  digitImage(data, 3, image);
  EXPECT_FLOAT_EQ(image[0], 3 / 16.0f);
  digitImage(data, 3, shifted, 1, 0);  // ink moves right: column 0 is empty, column 1 was column 0
  EXPECT_EQ(shifted[0], 0.0f);
  EXPECT_FLOAT_EQ(shifted[1], image[0]);
  digitImage(data, 3, shifted, 0, -1);  // up: the last row is empty
  EXPECT_EQ(shifted[63], 0.0f);
  EXPECT_FLOAT_EQ(shifted[0], image[8]);
  EXPECT_NE(errorMessage([] { parseDigitsCsv("1,2,3\n", "short.csv"); }).find("short.csv:1: 3 values"), std::string::npos);
  EXPECT_NE(errorMessage([&] { parseDigitsCsv(std::string(csv).replace(0, 1, "x"), "bad.csv"); }).find("bad.csv:1"), std::string::npos);
  EXPECT_NE(errorMessage([] { parseDigitsCsv(std::string(128, ',') + "\n", "empty.csv"); }).find("empty.csv:1"), std::string::npos);
  const DigitsSplit split = digitsSplit(1797);
  EXPECT_EQ(split.test.size(), 359u);
  EXPECT_EQ(split.train.size(), 1438u);
  EXPECT_EQ(digitsSplit(1797).test, split.test);  // fixed
  std::vector<int> all(split.train);
  all.insert(all.end(), split.test.begin(), split.test.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 1797; ++i) ASSERT_EQ(all[i], i);
}

TEST(Vision, TheRealDigitsAndTheBaseline) {
  if (defaultDigitsPath().empty()) GTEST_SKIP() << "the digits are not installed (scripts/setup.sh)";
  const DigitsData data = loadDigits();
  ASSERT_EQ(data.size(), 1797u);
  const DigitsBaseline baseline = logisticRegressionBaseline(data, digitsSplit(data.size()));
  EXPECT_GT(baseline.testAccuracy, 0.9);
  EXPECT_LT(baseline.testAccuracy, 1.0);
  // An image model must train on images, and the digits need an image model.
  TrainConfig config;
  config.model = tinyVit();
  EXPECT_EQ(validateTrainSetup(config, parseDataSpec("digits")), "");
  EXPECT_NE(validateTrainSetup(config, parseDataSpec("copy")).find("image model"), std::string::npos);
  TrainConfig text;
  EXPECT_NE(validateTrainSetup(text, parseDataSpec("digits")).find("digits are images"), std::string::npos);
}

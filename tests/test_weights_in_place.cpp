// Loaded weights read in place: F32 tensors of a model file alias its memory map (no copy) and
// give bit-identical logits to a copy in an owned arena; F16/BF16 and misaligned tensors are
// converted; writing to loaded weights copies them first (copy-on-write) and never the file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/io/model_io.h"
#include "model/io/safetensors.h"
#include "model/train/train_model.h"
#include "model/nn/transformer.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::ScratchDir;

namespace {

// Deliberately odd sizes (V = 101, P = 23), so the tensors of a saved file sit at many alignments.
ModelConfig oddConfig() { return tscope::testing::smallConfig(2, 4, 64, 101, 23); }

// An owned, 64-byte aligned copy of every parameter: the copying path the loader used to take.
Weights ownedCopy(const Weights& source) {
  Weights copy(source.config());
  for (size_t i = 0; i < source.layout().size(); ++i)
    std::memcpy(copy.param(source.layout()[i].name), source.tensor(i), source.layout()[i].numel() * sizeof(float));
  return copy;
}

// Logits of a prefill (T = 9, the GEMM path) followed by three single-token steps (the GEMV path).
std::vector<float> prefillAndDecodeLogits(const Weights& weights) {
  auto cpu = makeCpuBackend(2);
  Transformer model(weights, *cpu);
  KVCache cache(*cpu, weights.config());
  std::vector<float> all, logits;
  const std::vector<int> prompt = tscope::testing::sequence(9, weights.config().vocab_size, 3);
  model.forward(prompt, cache, logits, true);
  all = logits;
  for (int token : {5, 77, 100}) {
    model.forward(std::vector<int>{token}, cache, logits, false);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

bool pointsInto(const float* p, size_t floats, const MappedFile& file) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(p);
  return bytes >= file.data() && bytes + floats * sizeof(float) <= file.data() + file.size();
}

// A value exactly representable in F16, BF16 and F32: k / 256 with |k| <= 255.
float exactValue(size_t i, size_t salt) { return static_cast<float>(static_cast<int>((i * 37 + salt * 11) % 511) - 255) / 256.0f; }

uint16_t exactToHalf(float value) {  // valid for exactValue's range only (normal halves or zero)
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) == 0) return static_cast<uint16_t>(bits >> 16);
  const uint32_t exponent = (bits >> 23) & 0xffu;
  return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | ((exponent - 112) << 10) | ((bits >> 13) & 0x3ffu));
}

// Writes a safetensors file by hand: tensor i of `weights`' layout stored as dtypes[i % size],
// with the header padded to `headerBytes % 8 == headerRemainder` (1..7 misaligns the data area).
void writeMixedSafetensors(const std::string& path, const Weights& weights, const std::vector<std::string>& dtypes, size_t headerRemainder) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  for (size_t i = 0; i < weights.layout().size(); ++i) {
    const ParamSpec& spec = weights.layout()[i];
    const std::string& dtype = dtypes[i % dtypes.size()];
    const size_t begin = data.size();
    for (size_t k = 0; k < spec.numel(); ++k) {
      const float value = weights.tensor(i)[k];
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      const uint16_t half = dtype == "F16" ? exactToHalf(value) : static_cast<uint16_t>(bits >> 16);
      if (dtype == "F32") data.append(reinterpret_cast<const char*>(&value), 4);
      else data.append(reinterpret_cast<const char*>(&half), 2);
    }
    header[spec.name] = {{"dtype", dtype}, {"shape", spec.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != headerRemainder) text += ' ';
  const uint64_t length = text.size();
  std::string bytes(reinterpret_cast<const char*>(&length), 8);
  tscope::testing::writeBytes(path, bytes + text + data);
}

void writeConfig(const std::string& dir, const ModelConfig& config) { std::ofstream(dir + "/config.json") << configToJson(config).dump(); }

}  // namespace

TEST(WeightsInPlace, F32ModelAliasesTheMappingAndGivesBitIdenticalLogits) {
  ScratchDir dir("tscope_in_place");
  const Weights original = tscope::testing::randomWeights(oddConfig(), 7);
  saveModelDir(dir.file("m"), original, nullptr);
  const LoadedModel loaded = loadModel(dir.file("m"));
  const Weights& w = loaded.weights;
  ASSERT_NE(w.mapping(), nullptr) << "an F32 file should be read in place";
  EXPECT_EQ(w.ownedFloats(), 0u) << "nothing needed conversion, so nothing should be copied";
  int notCacheLineAligned = 0;
  for (size_t i = 0; i < w.layout().size(); ++i) {
    const ParamSpec& spec = w.layout()[i];
    EXPECT_TRUE(w.readsInPlace(spec.name)) << spec.name;
    EXPECT_TRUE(pointsInto(w.tensor(i), spec.numel(), *w.mapping())) << spec.name << " does not alias the mapped file";
    EXPECT_EQ(std::memcmp(w.tensor(i), original.tensor(i), spec.numel() * sizeof(float)), 0) << spec.name;
    notCacheLineAligned += reinterpret_cast<uintptr_t>(w.tensor(i)) % 64 != 0;
  }
  EXPECT_GT(notCacheLineAligned, 0) << "the file should put some tensors off 64-byte boundaries (what this test is about)";
  EXPECT_EQ(w.wte, w.param("wte.weight"));
  EXPECT_EQ(w.unembedding(), w.wte) << "tied unembedding: no second copy";
  EXPECT_THROW(w.arena(), Error) << "weights read in place have no single arena";

  const Weights copy = ownedCopy(w);
  const std::vector<float> inPlace = prefillAndDecodeLogits(w), copied = prefillAndDecodeLogits(copy);
  ASSERT_EQ(inPlace.size(), copied.size());
  const auto d = tscope::testing::compare(inPlace.data(), copied.data(), copied.size());
  EXPECT_EQ(std::memcmp(inPlace.data(), copied.data(), copied.size() * sizeof(float)), 0)
      << "logits from weights in place vs an owned copy: " << d.describe();
}

TEST(WeightsInPlace, SixteenBitAndMisalignedTensorsAreConvertedExactly) {
  ScratchDir dir("tscope_in_place");
  const ModelConfig config = oddConfig();
  Weights exact(config);
  for (size_t i = 0; i < exact.layout().size(); ++i) {
    float* p = exact.param(exact.layout()[i].name);
    for (size_t k = 0; k < exact.layout()[i].numel(); ++k) p[k] = exactValue(k, i);
  }
  struct Case {
    const char* name;
    std::vector<std::string> dtypes;
    size_t headerRemainder;
    bool expectSomeInPlace;
  };
  const Case cases[] = {{"mixed F32/F16/BF16, aligned", {"F32", "F16", "BF16"}, 0, true},
                        {"F32 with the data area 2 bytes off", {"F32"}, 2, false},
                        {"F32 with the data area 1 byte off", {"F32"}, 5, false}};
  for (const Case& c : cases) {
    const std::string model = dir.file(std::to_string(c.headerRemainder) + c.dtypes[0] + std::to_string(c.dtypes.size()));
    std::filesystem::create_directories(model);
    writeConfig(model, config);
    writeMixedSafetensors(model + "/model.safetensors", exact, c.dtypes, c.headerRemainder);
    const LoadedModel loaded = loadModel(model);
    int inPlace = 0;
    for (size_t i = 0; i < exact.layout().size(); ++i) {
      const ParamSpec& spec = exact.layout()[i];
      const bool f32 = c.dtypes[i % c.dtypes.size()] == "F32";
      const bool aligned = reinterpret_cast<uintptr_t>(loaded.weights.tensor(i)) % alignof(float) == 0;
      EXPECT_TRUE(aligned) << c.name << ": " << spec.name << " is not float-aligned";
      EXPECT_EQ(loaded.weights.readsInPlace(spec.name), f32 && c.expectSomeInPlace) << c.name << ": " << spec.name;
      inPlace += loaded.weights.readsInPlace(spec.name);
      const auto d = tscope::testing::compare(loaded.weights.tensor(i), exact.tensor(i), spec.numel());
      EXPECT_EQ(d.maxAbs, 0.0) << c.name << ": " << spec.name << " " << d.describe();
    }
    EXPECT_EQ(inPlace > 0, c.expectSomeInPlace) << c.name;
    EXPECT_EQ(loaded.weights.mapping() != nullptr, c.expectSomeInPlace) << c.name;
  }
}

TEST(WeightsInPlace, WritingToLoadedWeightsCopiesThemAndLeavesTheFile) {
  ScratchDir dir("tscope_in_place");
  const Weights original = tscope::testing::randomWeights(oddConfig(), 9);
  saveModelDir(dir.file("m"), original, nullptr);
  const std::string fileBefore = tscope::testing::readBytes(dir.file("m/model.safetensors"));
  LoadedModel loaded = loadModel(dir.file("m"));
  Weights& w = loaded.weights;
  ASSERT_TRUE(w.readsInPlace("h.0.ln_1.bias"));

  // The training forms need the owned arena: asking for a writable pointer makes one.
  float* bias = w.param("h.0.ln_1.bias");
  EXPECT_FALSE(w.readsInPlace("h.0.ln_1.bias"));
  EXPECT_EQ(w.mapping(), nullptr) << "after copy-on-write nothing points into the file";
  EXPECT_EQ(w.ownedFloats(), w.totalFloats());
  const float before = bias[0];
  bias[0] = before + 1.0f;
  EXPECT_EQ(w.param(std::string("h.0.ln_1.bias"))[0], original.param("h.0.ln_1.bias")[0] + 1.0f);
  for (size_t i = 0; i < w.layout().size(); ++i) {
    if (w.layout()[i].name == "h.0.ln_1.bias") continue;
    EXPECT_EQ(std::memcmp(w.tensor(i), original.tensor(i), w.layout()[i].numel() * sizeof(float)), 0) << w.layout()[i].name;
  }
  EXPECT_EQ(tscope::testing::readBytes(dir.file("m/model.safetensors")), fileBefore) << "the model file must never be written";

  // And the gradients of the copied weights are those of the original (the training path).
  bias[0] = before;
  auto cpuDevice = makeCpuDevice(2);
  TrainModel model(w.config(), *cpuDevice);
  const std::vector<int> inputs = tscope::testing::sequence(8, w.config().vocab_size, 1);
  const std::vector<int> targets = tscope::testing::sequence(8, w.config().vocab_size, 2);
  const std::vector<uint8_t> scored(8, 1);
  const BatchView batch{1, 8, inputs.data(), targets.data(), scored.data()};
  Weights gradsLoaded(w.config()), gradsOriginal(w.config());
  const LossReport a = model.lossAndGradients(w, gradsLoaded, batch);
  const LossReport b = model.lossAndGradients(original, gradsOriginal, batch);
  EXPECT_EQ(a.loss, b.loss);
  const auto d = tscope::testing::compare(gradsLoaded.arena(), gradsOriginal.arena(), w.totalFloats());
  EXPECT_EQ(d.maxAbs, 0.0) << "gradients of copied-on-write weights vs the original: " << d.describe();
}

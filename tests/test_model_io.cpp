// Model directories and llm.c checkpoints: round trips and the errors for bad files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/io/model_io.h"
#include "model/io/safetensors.h"
#include "tests/hf_tiny_model.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

using namespace tscope;
namespace fs = std::filesystem;

namespace {

using TempDir = tscope::testing::ScratchDir;

ModelConfig tinyConfig() { return tscope::testing::smallConfig(2, 2, 8, 20, 16); }

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Writes an llm.c v3 checkpoint of `w` (weights transposed to (out, in), layer-major).
void writeLlmc(const fs::path& file, const Weights& w, int paddedVocab, int magic = 20240326) {
  const ModelConfig& c = w.config();
  const int L = c.n_layer, C = c.n_embd, F = 4 * C;
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = 3;
  header[2] = c.n_positions;
  header[3] = c.vocab_size;
  header[4] = L;
  header[5] = c.n_head;
  header[6] = C;
  header[7] = paddedVocab;
  std::vector<float> body;
  auto put = [&](const float* p, size_t n) { body.insert(body.end(), p, p + n); };
  auto putTransposed = [&](const float* p, int in, int out) {
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) body.push_back(p[(size_t)i * out + o]);
  };
  put(w.wte, (size_t)c.vocab_size * C);
  body.resize(body.size() + (size_t)(paddedVocab - c.vocab_size) * C, 0.0f);
  put(w.wpe, (size_t)c.n_positions * C);
  for (int l = 0; l < L; ++l) put(w.layers[l].ln1Weight, C);
  for (int l = 0; l < L; ++l) put(w.layers[l].ln1Bias, C);
  for (int l = 0; l < L; ++l) putTransposed(w.layers[l].qkvWeight, C, 3 * C);
  for (int l = 0; l < L; ++l) put(w.layers[l].qkvBias, 3 * C);
  for (int l = 0; l < L; ++l) putTransposed(w.layers[l].attnProjWeight, C, C);
  for (int l = 0; l < L; ++l) put(w.layers[l].attnProjBias, C);
  for (int l = 0; l < L; ++l) put(w.layers[l].ln2Weight, C);
  for (int l = 0; l < L; ++l) put(w.layers[l].ln2Bias, C);
  for (int l = 0; l < L; ++l) putTransposed(w.layers[l].mlp.fcWeight, C, F);
  for (int l = 0; l < L; ++l) put(w.layers[l].mlp.fcBias, F);
  for (int l = 0; l < L; ++l) putTransposed(w.layers[l].mlp.projWeight, F, C);
  for (int l = 0; l < L; ++l) put(w.layers[l].mlp.projBias, C);
  put(w.lnfWeight, C);
  put(w.lnfBias, C);
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(body.data()), (std::streamsize)(body.size() * sizeof(float)));
}

// Every parameter bit for bit (loaded weights may read some in place, so there is no one arena).
bool sameWeights(const Weights& a, const Weights& b) {
  if (a.layout().size() != b.layout().size()) return false;
  for (size_t i = 0; i < a.layout().size(); ++i)
    if (a.layout()[i].name != b.layout()[i].name || std::memcmp(a.tensor(i), b.tensor(i), a.layout()[i].numel() * sizeof(float)) != 0) return false;
  return true;
}

}  // namespace

TEST(ModelIo, TscopeDirectoryRoundTrip) {
  TempDir dir;
  Weights w = tscope::testing::randomWeights(tinyConfig(), 1);
  saveModelDir((dir.path() / "m").string(), w, nullptr);
  LoadedModel loaded = loadModel((dir.path() / "m").string());
  EXPECT_EQ(loaded.format, "tscope");
  EXPECT_TRUE(sameWeights(loaded.weights, w));
  EXPECT_EQ(loaded.tokenizer, nullptr);
  EXPECT_FALSE(fs::exists(dir.path() / "m" / "model.safetensors.tmp"));
}

// Every loader reports each tensor it places, counting up to its total; a progress callback that
// throws stops the load there (the app's open task does so when the open is cancelled), and the
// exception leaves loadModel (ASan checks that what the load made is freed).
TEST(ModelIo, LoadsReportProgressAndAThrowingCallbackStopsThem) {
  TempDir dir;
  Weights w = tscope::testing::randomWeights(tinyConfig(), 3);
  saveModelDir((dir.path() / "tscope").string(), w, nullptr);
  writeLlmc(dir.path() / "m.bin", w, 32);
  tscope::testing::writeTinyModel(dir.path() / "llama");
  for (const std::string name : {"tscope", "m.bin", "llama"}) {
    const std::string path = (dir.path() / name).string();
    // The .bin alone: loadModel would give it GPT-2's tokenizer, too large for this vocabulary.
    const auto load = [&](const LoadProgress& progress) {
      name == "m.bin" ? void(loadLlmcCheckpoint(path, progress)) : void(loadModel(path, progress));
    };
    std::vector<std::pair<int, int>> calls;
    load([&](int done, int total) { calls.emplace_back(done, total); });
    ASSERT_GE(calls.size(), 2u) << name;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].first, static_cast<int>(i + 1)) << name;
      EXPECT_EQ(calls[i].second, calls.back().first) << name;
    }
    int seen = 0;
    EXPECT_THROW(load([&](int done, int) {
                   seen = done;
                   if (done == 2) throw std::runtime_error("stop");
                 }),
                 std::runtime_error)
        << name;
    EXPECT_EQ(seen, 2) << name;
  }
}

TEST(ModelIo, LlmcCheckpointLoadsTransposedAndUnpadded) {
  TempDir dir;
  Weights w = tscope::testing::randomWeights(tinyConfig(), 2);
  writeLlmc(dir.path() / "m.bin", w, 32);
  Weights loaded = loadLlmcCheckpoint((dir.path() / "m.bin").string());
  EXPECT_TRUE(sameWeights(loaded, w));
  // Vectors and wte are read in place from the mapped file; the (out, in) matrices are transposed copies.
  for (const char* name : {"wte.weight", "wpe.weight", "h.1.ln_2.bias", "h.0.attn.c_attn.bias", "ln_f.weight"})
    EXPECT_TRUE(loaded.readsInPlace(name)) << name;
  for (const char* name : {"h.0.attn.c_attn.weight", "h.1.mlp.c_proj.weight"}) EXPECT_FALSE(loaded.readsInPlace(name)) << name;
}

TEST(ModelIo, LlmcCorruptionsAreNamed) {
  TempDir dir;
  Weights w = tscope::testing::randomWeights(tinyConfig(), 3);
  writeLlmc(dir.path() / "bad_magic.bin", w, 32, 12345);
  EXPECT_NE(errorOf([&] { loadLlmcCheckpoint((dir.path() / "bad_magic.bin").string()); }).find("magic 12345"), std::string::npos);
  writeLlmc(dir.path() / "short.bin", w, 32);
  fs::resize_file(dir.path() / "short.bin", fs::file_size(dir.path() / "short.bin") - 4);
  EXPECT_NE(errorOf([&] { loadLlmcCheckpoint((dir.path() / "short.bin").string()); }).find("does not match the header"), std::string::npos);
  fs::resize_file(dir.path() / "short.bin", 100);
  EXPECT_NE(errorOf([&] { loadLlmcCheckpoint((dir.path() / "short.bin").string()); }).find("truncated"), std::string::npos);
  writeLlmc(dir.path() / "pad.bin", w, 10);  // padded vocab below the vocab
  EXPECT_NE(errorOf([&] { loadLlmcCheckpoint((dir.path() / "pad.bin").string()); }).find("padded_vocab_size"), std::string::npos);
}

TEST(ModelIo, HfDirectoryErrorsNameTheProblem) {
  TempDir dir;
  const ModelConfig c = tinyConfig();
  Weights w = tscope::testing::randomWeights(c, 4);
  const fs::path m = dir.path() / "m";
  saveModelDir(m.string(), w, nullptr);
  // Wrong shape: claim a larger n_embd in config.json than the tensors have.
  nlohmann::json config = nlohmann::json::parse(std::ifstream(m / "config.json"));
  config["n_embd"] = 16;
  std::ofstream(m / "config.json") << config.dump();
  std::string msg = errorOf([&] { loadModel(m.string()); });
  EXPECT_NE(msg.find("wte.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("shape"), std::string::npos) << msg;
  // Invalid combination in config.json.
  config["n_embd"] = 8;
  config["n_head"] = 3;
  std::ofstream(m / "config.json") << config.dump();
  msg = errorOf([&] { loadModel(m.string()); });
  EXPECT_NE(msg.find("n_head (3) must divide n_embd (8)"), std::string::npos) << msg;
  // Malformed config.json.
  std::ofstream(m / "config.json") << "{\"n_layer\": ";
  EXPECT_NE(errorOf([&] { loadModel(m.string()); }).find("malformed JSON"), std::string::npos);
  // Missing tensor and unexpected tensor.
  config["n_head"] = 2;
  std::ofstream(m / "config.json") << config.dump();
  std::vector<TensorToWrite> tensors;
  for (const auto& s : w.layout())
    if (s.name != "h.1.ln_2.bias") tensors.push_back({s.name, s.shape, w.arena() + s.offset});
  writeSafetensors((m / "model.safetensors").string(), tensors);
  msg = errorOf([&] { loadModel(m.string()); });
  EXPECT_NE(msg.find("missing tensor 'h.1.ln_2.bias'"), std::string::npos) << msg;
  tensors.push_back({"h.1.ln_2.bias", {8}, w.layers[1].ln2Bias});
  tensors.push_back({"h.9.mystery", {8}, w.layers[1].ln2Bias});
  writeSafetensors((m / "model.safetensors").string(), tensors);
  msg = errorOf([&] { loadModel(m.string()); });
  EXPECT_NE(msg.find("unexpected tensor 'h.9.mystery'"), std::string::npos) << msg;
  // A differing lm_head is refused; the HF mask buffers are ignored.
  tensors.pop_back();
  std::vector<float> head(w.wte, w.wte + 20 * 8);
  head[3] += 1;
  std::vector<float> mask(16 * 16, 1.0f);
  tensors.push_back({"h.0.attn.bias", {1, 1, 16, 16}, mask.data()});
  writeSafetensors((m / "model.safetensors").string(), tensors);
  EXPECT_TRUE(sameWeights(loadModel(m.string()).weights, w));
  tensors.push_back({"lm_head.weight", {20, 8}, head.data()});
  writeSafetensors((m / "model.safetensors").string(), tensors);
  EXPECT_NE(errorOf([&] { loadModel(m.string()); }).find("lm_head.weight"), std::string::npos);
  // Missing things.
  EXPECT_NE(errorOf([&] { loadModel((dir.path() / "nope").string()); }).find("no such file"), std::string::npos);
  fs::remove(m / "model.safetensors");
  EXPECT_NE(errorOf([&] { loadModel(m.string()); }).find("no model.safetensors"), std::string::npos);
}

// configToJson and configFromJson walk one field list (config.cpp's configFields): the shipped
// models' config.json files, written by an earlier configToJson, read back and written again give
// the same keys and values (and tscope_version, which saveModelDir adds), for a decoder, a mixture
// of experts, an encoder-decoder and a character-level model.
TEST(ModelIo, ShippedConfigsWriteBackKeyForKey) {
  for (const char* name : {"brown-small", "brown-moe", "dates-encdec", "induction-2l"}) {
    SCOPED_TRACE(name);
    std::ifstream in(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/" + name + "/config.json");
    ASSERT_TRUE(in);
    nlohmann::json file = nlohmann::json::parse(in);
    EXPECT_EQ(unknownConfigKey(file), "");
    nlohmann::json written = configToJson(configFromJson(file));
    file.erase("tscope_version");
    EXPECT_EQ(written, file) << "written " << written.dump() << "\nfile    " << file.dump();
  }
}

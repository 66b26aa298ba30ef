// GGUF models (model/io/gguf_model.h): golden logits of tiny llama / qwen2 / qwen3 files in every
// type tscope reads against the float64 PyTorch forward of the weights their blocks hold
// (tests/golden/gguf_reference.py, run here at test time), the matrices kept packed in the file's
// type, and one line for every file tscope refuses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/io/gguf.h"
#include "model/io/gguf_model.h"
#include "model/io/model_io.h"
#include "model/io/npy.h"
#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;

namespace {

// The golden files, written once per test process.
const fs::path& goldenDir() {
  static ScratchDir dir("tscope_gguf_golden");
  static const bool written = [] {
    const std::string command =
        std::string(TSCOPE_PYTHON_WITH_TORCH) + " " + TSCOPE_SOURCE_DIR + "/tests/golden/gguf_reference.py " + dir.path().string();
    return std::system(command.c_str()) == 0;
  }();
  EXPECT_TRUE(written) << "gguf_reference.py failed";
  return dir.path();
}

// The type parameter `name` is held in (F32 when it is a float32 parameter).
WeightType heldType(const Weights& weights, const std::string& name) {
  for (size_t i = 0; i < weights.layout().size(); ++i)
    if (weights.layout()[i].name == name) return weights.packed(i) ? weights.packed(i).type : WeightType::F32;
  ADD_FAILURE() << "no parameter " << name;
  return WeightType::F32;
}

struct Golden {
  const char* name;
  const char* wte;    // the types the embedding, c_attn and c_fc are held in
  const char* cAttn;  // c_attn is float32 when q, k and v differ in type (Q4_K_M's Q6_K attn_v)
  const char* cFc;
};
constexpr Golden kGolden[] = {{"llama_q8_0", "Q8_0", "Q8_0", "Q8_0"},
                              {"llama_k_quants_v2", "Q4_K", "F32", "Q5_K"},
                              {"qwen2_q4_0", "Q4_0", "Q4_0", "Q4_0"},
                              {"qwen3_f16_q5_k", "Q5_K", "F16", "Q5_K"},
                              {"smollm_bf16", "BF16", "BF16", "BF16"}};

}  // namespace

TEST(GgufModel, LogitsMatchTheFloat64ForwardOfTheWeightsTheBlocksHold) {
  const fs::path& dir = goldenDir();
  const NpyArray tokens = readNpy((dir / "tokens.npy").string());
  const std::vector<int> ids(tokens.data.begin(), tokens.data.end());
  for (const Golden& golden : kGolden) {
    SCOPED_TRACE(golden.name);
    LoadedModel model = loadModel((dir / (std::string(golden.name) + ".gguf")).string());
    EXPECT_EQ(model.format, "gguf");
    EXPECT_EQ(model.tokenizer, nullptr);
    expectMentions(model.tokenizerNote, {"no tokenizer", "tokenizer.ggml.model"});
    EXPECT_EQ(weightTypeInfo(heldType(model.weights, "wte.weight")).name, golden.wte);
    EXPECT_EQ(weightTypeInfo(heldType(model.weights, "h.0.attn.c_attn.weight")).name, golden.cAttn);
    EXPECT_EQ(weightTypeInfo(heldType(model.weights, "h.1.mlp.c_fc.weight")).name, golden.cFc);
    EXPECT_EQ(heldType(model.weights, "h.0.ln_1.weight"), WeightType::F32);
    const NpyArray logits = readNpy((dir / (std::string(golden.name) + ".logits.npy")).string());
    for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(2); }}) {
      auto backend = makeBackend();
      Transformer transformer(model.weights, *backend);
      const std::vector<float> ours = transformer.logitsFor(ids);
      const Difference d = compare(ours, logits.data);
      EXPECT_LT(d.relative(), 1e-4) << backend->name() << " logits: " << d.describe();
      // Decode (one row at a time: the CPU backend's few-rows kernels) agrees with the prompt's rows.
      KVCache cache(*backend, model.weights.config());
      std::vector<float> last;
      for (const int id : ids) transformer.forward(std::span<const int>(&id, 1), cache, last, false);
      const size_t V = static_cast<size_t>(model.weights.config().vocab_size);
      const Difference step = compare(last.data(), logits.data.data() + (ids.size() - 1) * V, V);
      EXPECT_LT(step.relative(), 1e-4) << backend->name() << " decode: " << step.describe();
    }
  }
}

TEST(GgufModel, PackedWeightsCostTheFileNotFloat32) {
  LoadedModel model = loadModel((goldenDir() / "llama_q8_0.gguf").string());
  size_t floatBytes = 0;
  for (const ParamSpec& spec : model.weights.layout()) floatBytes += spec.numel() * sizeof(float);
  EXPECT_TRUE(model.weights.hasPacked());
  EXPECT_LT(model.weights.heldBytes(), floatBytes * 0.3) << "Q8_0 is 8.5 bits a weight against float32's 32";
  EXPECT_LE(model.weights.heldBytes(), fs::file_size(goldenDir() / "llama_q8_0.gguf") + 64 * 1024);
}

TEST(GgufModel, RefusesWhatItCannotReadInOneLine) {
  const fs::path& dir = goldenDir();
  std::ifstream in(dir / "bad.json");
  const nlohmann::json bad = nlohmann::json::parse(in);
  ASSERT_GE(bad.size(), 8u);
  for (const auto& [name, words] : bad.items()) {
    SCOPED_TRACE(name);
    const std::string message = errorMessage([&] { loadModel((dir / (name + ".gguf")).string()); });
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    expectMentions(message, {name + ".gguf"});
    for (const auto& word : words) expectMentions(message, {word.get<std::string>()});
  }
  // A tokenizer tscope cannot read leaves a working model and a note naming it.
  const LoadedModel model = loadModel((dir / "tokenizer_unknown_pre.gguf").string());
  EXPECT_EQ(model.tokenizer, nullptr);
  expectMentions(model.tokenizerNote, {"exotic-pre", "tokenizer.ggml.pre"});
}

TEST(GgufModel, TheConfigIsTheOneAHuggingFaceCheckpointWouldHave) {
  const GgufFile file = GgufFile::open((goldenDir() / "qwen3_f16_q5_k.gguf").string());
  const nlohmann::json j = ggufHfConfig(file);
  EXPECT_EQ(j["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(j["hidden_size"], 256);
  EXPECT_EQ(j["head_dim"], 128);
  EXPECT_EQ(j["num_key_value_heads"], 2);
  EXPECT_EQ(j["vocab_size"], 64);
  EXPECT_EQ(j["tie_word_embeddings"], true);
  EXPECT_DOUBLE_EQ(j["rope_theta"].get<double>(), 1e6);
  EXPECT_TRUE(ggufArchitectureSupported("llama"));
  EXPECT_FALSE(ggufArchitectureSupported("gemma2"));
}

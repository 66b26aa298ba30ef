// HuggingFace ViTForImageClassification (model/io/hf_vit.cpp): golden class logits against the
// independent float64 forward of tests/golden/hf_vit_reference.py (run here at test time), the class
// names from id2label, checkpoints without the vit. prefix and in the HF cache layout, and one clear
// line for every config and checkpoint tscope cannot read.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/io/hf_vit.h"
#include "model/io/model_io.h"
#include "model/io/npy.h"
#include "model/io/safetensors.h"
#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "test_files.h"
#include "test_helpers.h"
#include "tests/golden_checkpoints.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;
using json = nlohmann::json;

namespace {

const char* const kVitVariants[] = {"vit_grey", "vit_rgb_gelu_new", "vit_no_qkv_bias_f16"};

// The reference's checkpoints, written once for the whole file.
const fs::path& goldenDir() { return goldenCheckpoints("tscope_hf_vit_golden", "hf_vit_reference.py", ""); }

json readJson(const fs::path& path) { return json::parse(readBytes(path.string())); }

// The class logits of `folder`'s model on its pixels.npy, on `backend`.
std::vector<float> classLogitsOf(const LoadedModel& model, const fs::path& folder, Backend& backend) {
  const NpyArray pixels = readNpy((folder / "pixels.npy").string());
  Transformer transformer(model.weights, backend);
  return transformer.classLogits(pixels.data);
}

// Every tensor of a safetensors file as float32, to be changed and written back.
std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> readAll(const fs::path& path) {
  SafetensorsFile file(path.string());
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> all;
  for (const auto& [name, info] : file.tensors()) all[name] = {info.shape, file.readFloat(name)};
  return all;
}

void writeAll(const fs::path& path, const std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>& all) {
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, tensor] : all) tensors.push_back({name, tensor.first, tensor.second.data()});
  writeSafetensors(path.string(), tensors);
}

// A copy of the vit_grey checkpoint whose tensors `change` edits (names, shapes, values).
fs::path editedCopy(const fs::path& root, const std::string& name,
                    const std::function<void(std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>&)>& change) {
  const fs::path folder = root / name;
  fs::copy(goldenDir() / "vit_grey", folder, fs::copy_options::recursive);
  auto all = readAll(folder / "model.safetensors");
  change(all);
  writeAll(folder / "model.safetensors", all);
  return folder;
}

// vit_grey's config.json as the reference writes it (8 x 8 grey, patches of 2, C 16, 2 heads, 10 classes).
json greyConfig() {
  json labels;
  for (int i = 0; i < 10; ++i) labels[std::to_string(i)] = std::to_string(i);
  return {{"architectures", {"ViTForImageClassification"}},
          {"model_type", "vit"},
          {"hidden_size", 16},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 2},
          {"intermediate_size", 32},
          {"hidden_act", "gelu"},
          {"layer_norm_eps", 1e-6},
          {"image_size", 8},
          {"patch_size", 2},
          {"num_channels", 1},
          {"qkv_bias", true},
          {"encoder_stride", 16},
          {"id2label", labels}};
}

// The one-line error of loading a directory holding only `config` as config.json (the config is
// refused before any weights are read).
std::string configError(const ScratchDir& dir, const std::string& name, const json& config) {
  const fs::path folder = dir.path() / name;
  fs::create_directories(folder);
  writeBytes((folder / "config.json").string(), config.dump());
  return errorMessage([&] { loadModel(folder.string()); });
}

}  // namespace

TEST(HfVit, MatchesPyTorchReference) {
  for (const char* variant : kVitVariants) {
    SCOPED_TRACE(variant);
    const fs::path folder = goldenDir() / variant;
    const json hfConfig = readJson(folder / "config.json");
    const LoadedModel model = loadModel(folder.string());
    EXPECT_EQ(model.format, "hf-vit");
    const ModelConfig& c = model.weights.config();
    EXPECT_TRUE(c.isImage());
    EXPECT_FALSE(c.causal);
    EXPECT_TRUE(c.pre_norm);
    EXPECT_TRUE(c.hasFinalNorm());
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.num_channels, hfConfig["num_channels"].get<int>());
    EXPECT_EQ(c.n_positions, 1 + c.numPatches());
    EXPECT_EQ(model.preprocessing.width, c.image_size);  // preprocessor_config.json's size
    const NpyArray expected = readNpy((folder / "expected_logits.npy").string());
    EXPECT_EQ(c.vocab_size, static_cast<int>(expected.data.size()));
    // The class names: id2label's, or HF's LABEL_i defaults when config.json has num_labels only.
    ASSERT_NE(model.tokenizer, nullptr) << model.tokenizerNote;
    EXPECT_EQ(model.tokenizer->kind(), TokenizerKind::Labels);
    EXPECT_EQ(model.tokenizer->vocabSize(), c.vocab_size);
    const std::string first = hfConfig.contains("id2label") ? hfConfig["id2label"]["0"].get<std::string>() : "LABEL_0";
    EXPECT_EQ(model.tokenizer->tokenBytes(0), first);
    const std::string last = std::to_string(c.vocab_size - 1);
    EXPECT_EQ(model.tokenizer->tokenBytes(c.vocab_size - 1),
              hfConfig.contains("id2label") ? hfConfig["id2label"][last].get<std::string>() : "LABEL_" + last);
    for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(1); }}) {
      auto backend = makeBackend();
      const std::vector<float> ours = classLogitsOf(model, folder, *backend);
      const Difference diff = compare(ours, expected.data);
      EXPECT_LT(diff.relative(), 1e-4) << backend->name() << ": " << diff.describe();
      std::printf("%-9s %-20s class logits: %s\n", backend->name().c_str(), variant, diff.describe().c_str());
    }
  }
}

// The weights land where tscope's layout keeps them: [CLS] and the patch bias as wte's rows, the
// convolution (C, channels, p, p) as patch.weight (K, C), the classifier as it is stored.
TEST(HfVit, PlacesTheEmbeddingsAndClassifier) {
  const fs::path folder = goldenDir() / "vit_rgb_gelu_new";
  const LoadedModel model = loadModel(folder.string());
  const ModelConfig& c = model.weights.config();
  const auto all = readAll(folder / "model.safetensors");
  const int C = c.n_embd, K = c.patchDim(), V = c.vocab_size;
  ASSERT_EQ(K, 3 * 4 * 4);
  const std::vector<float>& cls = all.at("vit.embeddings.cls_token").second;
  const std::vector<float>& bias = all.at("vit.embeddings.patch_embeddings.projection.bias").second;
  const std::vector<float>& conv = all.at("vit.embeddings.patch_embeddings.projection.weight").second;
  const std::vector<float>& classifier = all.at("classifier.weight").second;
  for (int i = 0; i < C; ++i) {
    EXPECT_EQ(model.weights.wte[i], cls[i]) << i;
    EXPECT_EQ(model.weights.wte[C + i], bias[i]) << i;
    for (int k = 0; k < K; ++k) EXPECT_EQ(model.weights.patchWeight[(size_t)k * C + i], conv[(size_t)i * K + k]) << i << " " << k;
  }
  for (int v = 0; v < V; ++v)
    for (int i = 0; i < C; ++i) EXPECT_EQ(model.weights.param("lm_head.weight")[(size_t)v * C + i], classifier[(size_t)v * C + i]);
  for (int v = 0; v < V; ++v) EXPECT_EQ(model.weights.lmHeadBias[v], all.at("classifier.bias").second[v]);
}

// Without qkv_bias the fused c_attn bias is zero; the other biases are loaded.
TEST(HfVit, NoQkvBiasLeavesTheAttentionBiasZero) {
  const LoadedModel model = loadModel((goldenDir() / "vit_no_qkv_bias_f16").string());
  const ModelConfig& c = model.weights.config();
  for (int l = 0; l < c.n_layer; ++l) {
    const float* qkv = model.weights.param("h." + std::to_string(l) + ".attn.c_attn.bias");
    for (int i = 0; i < 3 * c.n_embd; ++i) EXPECT_EQ(qkv[i], 0.0f) << l << " " << i;
  }
}

// A checkpoint saved without the vit. prefix reads the same.
TEST(HfVit, ReadsNamesWithoutTheVitPrefix) {
  ScratchDir dir("tscope_hf_vit_prefix");
  const fs::path folder = editedCopy(dir.path(), "bare", [](auto& all) {
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> renamed;
    for (auto& [name, tensor] : all) renamed[name.starts_with("vit.") ? name.substr(4) : name] = std::move(tensor);
    all = std::move(renamed);
  });
  ASSERT_FALSE(SafetensorsFile((folder / "model.safetensors").string()).has("vit.layernorm.weight"));
  auto backend = makeCpuBackend(1);
  const std::vector<float> bare = classLogitsOf(loadModel(folder.string()), folder, *backend);
  const std::vector<float> prefixed = classLogitsOf(loadModel((goldenDir() / "vit_grey").string()), folder, *backend);
  EXPECT_EQ(bare, prefixed);
}

// The HuggingFace cache layout (models--org--name/snapshots/HASH, refs/main), as for the other HF models.
TEST(HfVit, LoadsFromTheCacheLayout) {
  const fs::path hub = goldenDir() / "hub";
  const char* saved = std::getenv("HF_HUB_CACHE");
  const std::string savedValue = saved ? saved : "";
  ::setenv("HF_HUB_CACHE", hub.c_str(), 1);
  LoadedModel model;
  const std::string error = [&] {
    try {
      model = loadModel("tiny-org/tiny-vit");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  if (saved) ::setenv("HF_HUB_CACHE", savedValue.c_str(), 1);
  else ::unsetenv("HF_HUB_CACHE");
  ASSERT_EQ(error, "");
  EXPECT_EQ(model.format, "hf-vit");
  const fs::path snapshot = hub / "models--tiny-org--tiny-vit" / "snapshots" / "0123456789abcdef0123456789abcdef01234567";
  EXPECT_EQ(model.path, snapshot.string());
  auto backend = makeCpuBackend(1);
  const Difference diff = compare(classLogitsOf(model, snapshot, *backend), readNpy((snapshot / "expected_logits.npy").string()).data);
  EXPECT_LT(diff.relative(), 1e-4) << diff.describe();
}

// What config.json says maps onto ModelConfig; the ids of id2label order the class names.
TEST(HfVit, ReadsTheConfigFields) {
  json j = greyConfig();
  EXPECT_TRUE(isHfVit(j));
  EXPECT_TRUE(isHfVit(json{{"model_type", "vit"}}));
  EXPECT_FALSE(isHfVit(json{{"architectures", {"BertForMaskedLM"}}, {"model_type", "bert"}}));
  ModelConfig c = hfVitConfig(j);
  EXPECT_EQ(c.n_embd, 16);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_EQ(c.d_ff, 32);
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_EQ(c.image_size, 8);
  EXPECT_EQ(c.patch_size, 2);
  EXPECT_EQ(c.num_channels, 1);
  EXPECT_EQ(c.n_positions, 17);
  EXPECT_EQ(c.tokenizer, "labels");
  EXPECT_EQ(c.activation, Activation::GeluErf);
  EXPECT_DOUBLE_EQ(c.layer_norm_epsilon, 1e-6);
  j["hidden_act"] = "gelu_pytorch_tanh";
  EXPECT_EQ(hfVitConfig(j).activation, Activation::GeluTanh);
  j["hidden_act"] = "relu";
  j["image_size"] = {8, 8};
  j["patch_size"] = {4, 4};
  c = hfVitConfig(j);
  EXPECT_EQ(c.activation, Activation::Relu);
  EXPECT_EQ(c.n_positions, 5);
  j["id2label"] = {{"2", "car"}, {"0", "apple"}, {"1", "bee"}};
  EXPECT_EQ(hfVitLabels(j), (std::vector<std::string>{"apple", "bee", "car"}));
  EXPECT_EQ(hfVitConfig(j).vocab_size, 3);
  j.erase("id2label");
  j["num_labels"] = 2;
  EXPECT_EQ(hfVitLabels(j), (std::vector<std::string>{"LABEL_0", "LABEL_1"}));
  EXPECT_EQ(hfVitConfig(j).vocab_size, 2);
}

TEST(HfVit, UnreadableConfigsAreOneLine) {
  ScratchDir dir("tscope_hf_vit_bad_config");
  auto changed = [](const std::function<void(json&)>& change) {
    json j = greyConfig();
    change(j);
    return j;
  };
  expectMentions(configError(dir, "patch", changed([](json& j) { j["patch_size"] = 3; })),
                 {"config.json", "patch_size 3", "does not divide image_size 8"});
  const json oblong = changed([](json& j) { j["image_size"] = {8, 6}; });
  expectMentions(configError(dir, "oblong", oblong), {"config.json", "image_size", "[8, 6]", "not square"});
  expectMentions(configError(dir, "classes", changed([](json& j) { j.erase("id2label"); })), {"config.json", "id2label", "num_labels"});
  expectMentions(configError(dir, "heads", changed([](json& j) { j["hidden_size"] = 15; })),
                 {"config.json", "hidden_size 15", "num_attention_heads 2"});
  expectMentions(configError(dir, "mask", changed([](json& j) { j["use_mask_token"] = true; })), {"config.json", "use_mask_token"});
  expectMentions(configError(dir, "mim", changed([](json& j) { j["architectures"] = {"ViTForMaskedImageModeling"}; })),
                 {"config.json", "ViTForMaskedImageModeling", "not a classifier", "ViTForImageClassification"});
  expectMentions(configError(dir, "act", changed([](json& j) { j["hidden_act"] = "swish"; })), {"config.json", "hidden_act", "swish"});
  expectMentions(configError(dir, "ids", changed([](json& j) { j["id2label"] = {{"0", "a"}, {"7", "b"}}; })), {"config.json", "id2label", "\"7\""});
  expectMentions(configError(dir, "disagree", changed([](json& j) { j["num_labels"] = 4; })), {"config.json", "num_labels 4", "10 classes"});
  expectMentions(configError(dir, "missing", changed([](json& j) { j.erase("hidden_size"); })), {"config.json", "hidden_size"});
}

TEST(HfVit, UnreadableCheckpointsAreOneLine) {
  ScratchDir dir("tscope_hf_vit_bad_weights");
  const std::string conv = "vit.embeddings.patch_embeddings.projection.weight";
  const fs::path missing = editedCopy(dir.path(), "missing", [](auto& all) { all.erase("vit.encoder.layer.1.layernorm_after.bias"); });
  expectMentions(errorMessage([&] { loadModel(missing.string()); }),
                 {"model.safetensors", "missing tensor", "vit.encoder.layer.1.layernorm_after.bias"});
  const fs::path shape = editedCopy(dir.path(), "shape", [&](auto& all) { all.at(conv).first = {16, 1, 4, 1}; });
  expectMentions(errorMessage([&] { loadModel(shape.string()); }), {"model.safetensors", conv, "[16, 1, 4, 1]", "[16, 1, 2, 2]"});
  const fs::path extra = editedCopy(dir.path(), "extra", [](auto& all) { all["vit.embeddings.mask_token"] = {{1, 1, 16}, std::vector<float>(16)}; });
  expectMentions(errorMessage([&] { loadModel(extra.string()); }), {"unexpected tensor", "vit.embeddings.mask_token", "ViTForImageClassification"});
  const fs::path pooled = editedCopy(dir.path(), "pooled", [](auto& all) {  // ViTModel's pooler: not used, not refused
    all["vit.pooler.dense.weight"] = {{16, 16}, std::vector<float>(256)};
    all["vit.pooler.dense.bias"] = {{16}, std::vector<float>(16)};
  });
  EXPECT_EQ(loadModel(pooled.string()).format, "hf-vit");
}

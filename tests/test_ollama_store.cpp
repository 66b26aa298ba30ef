// Ollama's store (model/io/ollama_store.h) found without Ollama: a fake store of manifests and
// blobs in the layout `ollama pull` writes, listed by name, resolved by name and shown by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "model/io/hf_checkpoint.h"
#include "model/io/ollama_store.h"
#include "tests/test_files.h"

namespace tscope {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;
using testing::writeBytes;

// $OLLAMA_MODELS set to `dir` while the object lives (HOME's store, if any, still follows it).
class OllamaModelsEnv {
 public:
  explicit OllamaModelsEnv(const std::string& dir) {
    if (const char* v = std::getenv("OLLAMA_MODELS")) saved_ = v, hadValue_ = true;
    ::setenv("OLLAMA_MODELS", dir.c_str(), 1);
  }
  ~OllamaModelsEnv() { hadValue_ ? void(::setenv("OLLAMA_MODELS", saved_.c_str(), 1)) : void(::unsetenv("OLLAMA_MODELS")); }

 private:
  std::string saved_;
  bool hadValue_ = false;
};

std::string digestOf(char fill) { return std::string(64, fill); }

// A manifest of `name` (registry/namespace/model/tag) whose model layer is blob `hex`, plus other layers.
void writeManifest(const ScratchDir& store, const std::string& name, const std::string& hex, bool writeBlob = true) {
  const fs::path manifest = store.path() / "manifests" / name;
  fs::create_directories(manifest.parent_path());
  writeBytes(manifest.string(), R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
    "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
                                    digestOf('0') + R"(","size":10},
    "layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
                                    digestOf('1') +
                                    R"(","size":5},
              {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                                    hex + R"(","size":1234}]})");
  fs::create_directories(store.path() / "blobs");
  if (writeBlob) writeBytes((store.path() / "blobs" / ("sha256-" + hex)).string(), "GGUF");
}

TEST(OllamaStore, ListsModelsByTheNamesOllamaPrints) {
  ScratchDir store("tscope_ollama");
  OllamaModelsEnv env(store.path().string());
  writeManifest(store, "registry.ollama.ai/library/llama3.2/3b", digestOf('a'));
  writeManifest(store, "registry.ollama.ai/someone/tiny/latest", digestOf('b'));
  writeManifest(store, "hf.co/bartowski/SmolLM2-GGUF/Q4_K_M", digestOf('c'));
  writeManifest(store, "registry.ollama.ai/library/gone/1b", digestOf('d'), false);
  // Not a model: a manifest without a model layer, one with a digest that could leave the store, one not JSON.
  writeBytes((store.path() / "manifests/registry.ollama.ai/library/llama3.2/nolayer").string(), R"({"layers":[]})");
  writeBytes((store.path() / "manifests/registry.ollama.ai/library/llama3.2/evil").string(),
             R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../etc/passwd"}]})");
  writeBytes((store.path() / "manifests/registry.ollama.ai/library/llama3.2/garbage").string(), "\xff{not json");

  std::vector<OllamaModel> models;
  for (auto& m : findOllamaModels())
    if (fs::path(m.blobPath).parent_path().parent_path() == store.path()) models.push_back(m);
  ASSERT_EQ(models.size(), 4u);
  EXPECT_EQ(models[0].name, "gone:1b");
  EXPECT_NE(models[0].problem.find("is not in"), std::string::npos) << models[0].problem;
  EXPECT_EQ(models[1].name, "hf.co/bartowski/SmolLM2-GGUF:Q4_K_M");
  EXPECT_EQ(models[2].name, "llama3.2:3b");
  EXPECT_EQ(models[2].blobPath, (store.path() / "blobs" / ("sha256-" + digestOf('a'))).string());
  EXPECT_EQ(models[2].bytes, 1234u);
  EXPECT_TRUE(models[2].problem.empty());
  EXPECT_EQ(models[3].name, "someone/tiny:latest");

  // The loader and the screen know them by name.
  EXPECT_EQ(resolveHfModelPath("llama3.2:3b"), models[2].blobPath);
  EXPECT_EQ(resolveHfModelPath("someone/tiny"), models[3].blobPath);  // :latest
  EXPECT_EQ(resolveHfModelPath("gone:1b"), "gone:1b");                // no blob: unchanged, loadModel says it is missing
  EXPECT_EQ(modelDisplayName(models[2].blobPath), "llama3.2:3b");
  EXPECT_EQ(ollamaNameOfBlob((store.path() / "blobs" / ("sha256-" + digestOf('1'))).string()), "");  // a template blob

  // The model pickers' list: the HuggingFace cache's, then Ollama's under its own heading.
  bool listed = false;
  for (const DownloadedModel& m : findDownloadedModels())
    if (m.id == "llama3.2:3b") listed = m.source == "Ollama" && m.path == models[2].blobPath;
  EXPECT_TRUE(listed);
}

TEST(OllamaStore, AMissingStoreListsNothingFromIt) {
  ScratchDir empty("tscope_ollama_none");
  OllamaModelsEnv env((empty.path() / "absent").string());
  for (const auto& dir : ollamaStoreDirs()) EXPECT_NE(dir, empty.path() / "absent");
  EXPECT_EQ(ollamaNameOfBlob((empty.path() / "blobs/sha256-00").string()), "");
}

}  // namespace
}  // namespace tscope

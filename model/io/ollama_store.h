// Ollama's model store: the GGUF files `ollama pull` downloaded, kept as content-addressed blobs
// (blobs/sha256-<hex>) named by manifests (manifests/<registry>/<namespace>/<model>/<tag>, JSON
// whose layer of media type application/vnd.ollama.image.model is the GGUF weights). The store is
// $OLLAMA_MODELS, else ~/.ollama/models, else /usr/share/ollama/.ollama/models (the Linux service's).
// Layout as Ollama's manifest.go and its docs/faq.md describe it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tscope {

struct OllamaModel {
  std::string name;      // as `ollama list` prints it: "llama3.2:3b", "user/model:tag", "host/ns/model:tag"
  std::string blobPath;  // the GGUF file
  uint64_t bytes = 0;    // the manifest's size of that layer
  std::string problem;   // "" when the blob is there, else one line why it cannot be opened
};

// The stores that exist, in the order above.
std::vector<std::filesystem::path> ollamaStoreDirs();
// Every manifest of every store with a model layer, sorted by name within a store (a name in two
// stores: the first one's). Unreadable manifests are skipped.
std::vector<OllamaModel> findOllamaModels();
// The model name of a blob path inside a store ("" when `path` is no store's model blob).
std::string ollamaNameOfBlob(const std::string& path);

}  // namespace tscope

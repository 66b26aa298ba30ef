// The app's generation against tscope-cli generate: the GUI's Session (no GL) is driven as the
// Next-token panel drives it (Generate N once, or Step N times carrying the generated ids on), and
// the real CLI binary runs with the same prompt, seed and knobs. Token for token they must agree,
// sampled and greedy, on a random GPT-2-tokenized model and on the character-level induction-2l.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/session/session.h"
#include "tests/test_session_helpers.h"
#include "model/io/model_io.h"
#include "tests/test_files.h"

using tscope::testing::CliRun;
using tscope::testing::runCli;
using tscope::testing::ScratchDir;
using namespace tscope;
using namespace tscope::session;

namespace {

std::shared_ptr<const Snapshot> compute(Session& session, const Request& request) { return tscope::testing::computeSnapshot(session, request); }

struct Knobs {
  SamplingParams params;
  std::string cliFlags() const {
    if (params.greedy) return "--greedy";
    return "--seed " + std::to_string(params.seed) + " --temperature " + std::to_string(params.temperature) + " --top-k " +
           std::to_string(params.topK) + " --top-p " + std::to_string(params.topP);
  }
};

std::vector<Knobs> knobSets() {
  std::vector<Knobs> sets;
  for (uint64_t seed : {1u, 42u, 9001u}) {
    Knobs k;
    k.params.seed = seed;
    k.params.temperature = 1.25f;
    k.params.topK = 40;
    k.params.topP = 0.9f;
    sets.push_back(k);
  }
  Knobs plain;  // temperature 1, no filtering: every token can be drawn
  plain.params.seed = 5;
  sets.push_back(plain);
  Knobs greedy;
  greedy.params.greedy = true;
  sets.push_back(greedy);
  return sets;
}

std::vector<int> cliGenerate(const std::string& model, const std::string& prompt, int maxNew, const Knobs& knobs, const ScratchDir& dir,
                             std::string* stop = nullptr) {
  tscope::testing::writeBytes(dir.file("prompt.txt"), prompt);
  const CliRun run = runCli("generate --backend cpu --model " + model + " --prompt-file " + dir.file("prompt.txt") + " --max-new " +
                                std::to_string(maxNew) + " " + knobs.cliFlags(),
                            dir);
  EXPECT_EQ(run.exitCode, 0) << run.err;
  if (run.exitCode != 0) return {};
  const auto j = nlohmann::json::parse(run.out);
  if (stop) *stop = j["stop"];
  return j["ids"].get<std::vector<int>>();
}

// Generate N once, then Step N times from the same prompt, against the CLI; counts the cases
// where re-encoding the generated text would have given other tokens than the generated ids.
void checkAgreement(const std::string& modelPath, const std::string& prompt, int count, int& reencodedDiffers) {
  ScratchDir dir("tscope_session_generate");
  Session session(loadModel(modelPath), "cpu");
  const Tokenizer& tokenizer = *session.tokenizer();
  const std::vector<int> promptIds = tokenizer.encode(prompt);
  for (const Knobs& knobs : knobSets()) {
    const std::string what = (knobs.params.greedy ? "greedy" : "seed " + std::to_string(knobs.params.seed)) + " on " + modelPath;
    const std::vector<int> cli = cliGenerate(modelPath, prompt, count, knobs, dir);
    ASSERT_EQ(cli.size(), static_cast<size_t>(count)) << what;

    Request request;
    request.prompt = prompt;
    request.sampling = knobs.params;
    request.generateTokens = count;
    const auto generated = compute(session, request);
    ASSERT_TRUE(generated && generated->generation) << what;
    EXPECT_EQ(generated->generation->newIds, cli) << "Generate " << count << " vs the CLI, " << what;
    EXPECT_EQ(generated->error, "") << what;
    // The strip and every panel show the prompt's tokens followed by exactly the generated ones.
    std::vector<int> expected = promptIds;
    expected.insert(expected.end(), cli.begin(), cli.end());
    EXPECT_EQ(generated->ids, expected) << what;
    EXPECT_EQ(generated->request.prompt, prompt + tokenizer.decode(cli)) << what;
    reencodedDiffers += tokenizer.encode(generated->request.prompt) != expected;

    Request step;
    step.prompt = prompt;
    step.sampling = knobs.params;
    std::vector<int> stepped;
    for (int i = 0; i < count; ++i) {
      step.generateTokens = 1;
      const auto snapshot = compute(session, step);
      ASSERT_TRUE(snapshot && snapshot->generation) << what;
      ASSERT_EQ(snapshot->generation->newIds.size(), 1u) << what << ": " << snapshot->generation->stopReason;
      stepped.push_back(snapshot->generation->newIds[0]);
      EXPECT_EQ(snapshot->generation->streamTokens, i + 1) << what;
      step = snapshot->request;  // the prompt box's new text with its generated ids, as the app posts it
      EXPECT_EQ(step.generateTokens, 0);
    }
    EXPECT_EQ(stepped, cli) << "Step x" << count << " vs the CLI, " << what;
    EXPECT_EQ(step.prompt, prompt + tokenizer.decode(cli)) << what;
  }
}

std::string initSmallModel(const ScratchDir& dir) {
  const CliRun init = runCli("init --out " + dir.file("m") + " --layers 2 --heads 2 --embd 32 --positions 64 --seed 11", dir);
  EXPECT_EQ(init.exitCode, 0) << init.err;
  return dir.file("m");
}

}  // namespace

TEST(SessionGenerate, AgreesWithTheCliOnAGpt2TokenizedModel) {
  ScratchDir dir("tscope_session_model");
  const std::string model = initSmallModel(dir);
  int differs = 0;
  checkAgreement(model, "The lecturer asked the students to", 8, differs);
  // Random subword tokens often merge into other tokens when their text is encoded again: the
  // session must have kept the ids (the comparisons above), not the text.
  std::printf("re-encoding the generated text would have changed the tokens in %d of %zu runs\n", differs, knobSets().size());
  EXPECT_GT(differs, 0) << "no run here would catch a session that re-encodes the text";
}

TEST(SessionGenerate, AgreesWithTheCliOnTheCharacterLevelModel) {
  int differs = 0;
  checkAgreement(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l", "abcdefgabc", 6, differs);
}

TEST(SessionGenerate, StopsWhenTheContextIsFullAsTheCliDoes) {
  ScratchDir dir("tscope_session_full");
  const std::string model = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l";  // context 31
  Session session(loadModel(model), "cpu");
  Knobs knobs;
  knobs.params.seed = 3;
  const std::string prompt = "abcdefghijklmnopqrstuvwxyzabc";  // 29 characters: room for 2
  std::string stop;
  const std::vector<int> cli = cliGenerate(model, prompt, 10, knobs, dir, &stop);
  EXPECT_EQ(cli.size(), 2u);
  EXPECT_EQ(stop, "context_full");
  Request request;
  request.prompt = prompt;
  request.sampling = knobs.params;
  request.generateTokens = 10;
  const auto first = compute(session, request);
  ASSERT_TRUE(first && first->generation);
  EXPECT_EQ(first->generation->newIds, cli);
  EXPECT_NE(first->generation->stopReason.find("context (31 tokens) is full"), std::string::npos) << first->generation->stopReason;
  EXPECT_EQ(first->ids.size(), 31u);
  EXPECT_TRUE(first->droppedIds.empty());
  // One more Step from the full context: nothing drawn, the same one line.
  Request again = first->request;
  again.generateTokens = 1;
  const auto second = compute(session, again);
  ASSERT_TRUE(second && second->generation);
  EXPECT_TRUE(second->generation->newIds.empty());
  EXPECT_NE(second->generation->stopReason.find("is full"), std::string::npos) << second->generation->stopReason;
  EXPECT_EQ(second->request.prompt, first->request.prompt);
}

TEST(SessionGenerate, AnEditedPromptDropsTheGeneratedIds) {
  ScratchDir dir("tscope_session_edit");
  const std::string model = initSmallModel(dir);
  Session session(loadModel(model), "cpu");
  Request request;
  request.prompt = "Once upon a time";
  request.sampling.seed = 8;
  request.generateTokens = 6;
  const auto generated = compute(session, request);
  ASSERT_TRUE(generated && generated->generation);
  ASSERT_EQ(generated->generation->newIds.size(), 6u);
  Request edited = generated->request;
  edited.prompt += "!";  // the user typed: the text is encoded afresh
  const auto shown = compute(session, edited);
  ASSERT_TRUE(shown);
  EXPECT_FALSE(shown->generation.has_value());
  EXPECT_EQ(shown->ids, session.tokenizer()->encode(edited.prompt));
}

TEST(SessionGenerate, StopKeepsTheTokensSoFarAndTheNextStepContinuesTheStream) {
  ScratchDir dir("tscope_session_stop");
  const CliRun init = runCli("init --out " + dir.file("m") + " --layers 4 --heads 4 --embd 128 --positions 256 --seed 12", dir);
  ASSERT_EQ(init.exitCode, 0) << init.err;
  Session session(loadModel(dir.file("m")), "cpu");
  Knobs knobs;
  knobs.params.seed = 21;
  const std::string prompt = "Stop here";
  Request request;
  request.prompt = prompt;
  request.sampling = knobs.params;
  request.generateTokens = 200;
  // 200 single-token forwards take far longer than the call to stopGeneration right after post.
  session.post(request);
  session.stopGeneration();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (session.busy() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto cut = session.latest();
  ASSERT_TRUE(cut && cut->generation);
  const size_t made = cut->generation->newIds.size();
  EXPECT_LT(made, 200u);
  EXPECT_EQ(cut->generation->stopReason, "generation stopped");
  // What it drew is the start of the CLI's stream, and a Step after it draws the CLI's next token.
  const std::vector<int> cli = cliGenerate(dir.file("m"), prompt, static_cast<int>(made) + 1, knobs, dir);
  ASSERT_EQ(cli.size(), made + 1);
  EXPECT_EQ(cut->generation->newIds, std::vector<int>(cli.begin(), cli.end() - 1));
  Request step = cut->request;
  step.generateTokens = 1;
  const auto next = compute(session, step);
  ASSERT_TRUE(next && next->generation);
  EXPECT_EQ(next->generation->newIds, std::vector<int>{cli.back()});
}

// The Next-token panel's "measure decode speed": 16 tokens through the KV cache, the same tokens
// again rerunning the whole sequence while the 2 s budget lasts (at least one); a prompt that
// leaves no room for two new tokens gets a timing of no tokens, not a wait that never ends.
TEST(SessionGenerate, DecodeSpeedMeasureIsBoundedAndSaysWhenTheContextIsFull) {
  const std::string model = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l";  // context 31
  Session session(loadModel(model), "cpu");
  Request request;
  request.prompt = "abcabc";
  request.measureKvCache = true;
  const auto measured = compute(session, request);
  ASSERT_TRUE(measured && measured->kvTiming) << (measured ? measured->error : "no snapshot");
  const KvCacheTiming& t = *measured->kvTiming;
  EXPECT_EQ(t.tokens, 15);  // 16 new tokens: the first from the prompt's forward, 15 decode steps
  EXPECT_GE(t.withoutCacheTokens, 1);
  EXPECT_LE(t.withoutCacheTokens, t.tokens);
  EXPECT_GT(t.withCacheMsPerToken, 0);
  EXPECT_GT(t.withoutCacheMsPerToken, 0);
  // No budget left after the first rerun: exactly one.
  request.withoutCacheBudgetMs = 0;
  const auto once = compute(session, request);
  ASSERT_TRUE(once && once->kvTiming);
  EXPECT_EQ(once->kvTiming->tokens, 15);
  EXPECT_EQ(once->kvTiming->withoutCacheTokens, 1);
  // 30 of 31 positions used: one new token fits, no decode step to time.
  request.prompt = "abcdefghijklmnopqrstuvwxyzabcd";
  const auto full = compute(session, request);
  ASSERT_TRUE(full && full->kvTiming) << (full ? full->error : "no snapshot");
  EXPECT_TRUE(full->error.empty()) << full->error;
  EXPECT_EQ(full->kvTiming->tokens, 0);
  EXPECT_EQ(full->kvTiming->withoutCacheTokens, 0);
  EXPECT_EQ(full->kvTiming->withCacheMsPerToken, 0);
}

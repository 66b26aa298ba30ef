// lessonCheckAnswer on the shipped models through a real Session: the induction head of
// induction-2l, brown-small's next token, brown-moe's top expert, parameter counts of GPT-2-shaped
// architectures, token counts and dates-encdec's cross-attention; plus the checks a snapshot cannot
// decide (one line why).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "app/session/lesson.h"
#include "app/session/session.h"
#include "model/core/error.h"
#include "model/io/model_io.h"
#include "model/theory/cost.h"
#include "tests/test_session_helpers.h"

namespace tscope::session {
namespace {

using tscope::testing::computeSnapshot;

std::string modelDir(const std::string& name) { return std::string(TSCOPE_SOURCE_DIR) + "/assets/models/" + name; }

LessonCheck makeCheck(LessonCheckKind kind, std::vector<std::string> choices, int key = -1) {
  LessonCheck check;
  check.question = "?";
  check.kind = kind;
  check.choices = std::move(choices);
  check.answer = check.choices[0];
  check.key = key;
  return check;
}

struct Live {
  Session session;
  AppState state;
  std::shared_ptr<const Snapshot> snapshot;
  Live(const std::string& model, const std::string& prompt) : session(loadModel(modelDir(model)), "cpu") {
    state.prompt = prompt;
    snapshot = computeSnapshot(session, requestFor(state, session.config()));
    EXPECT_TRUE(snapshot && snapshot->error.empty()) << (snapshot ? snapshot->error : "no snapshot");
  }
  std::string answer(const LessonCheck& check, std::string* why = nullptr) const {
    return lessonCheckAnswer(check, *snapshot, session, state, std::nullopt, why);
  }
};

TEST(LessonCheck, TheInductionHeadOfInduction2lWinsOnARepeatedRandomSequence) {
  // Random characters, then the same again: at the last token the induction target is the
  // token after its first occurrence.
  Live live("induction-2l", "qjxvkzbwmfqjxvkzbw");
  const int T = (int)live.snapshot->ids.size();
  ASSERT_EQ(T, 18);
  std::vector<std::string> heads;
  for (int h = 0; h < 4; ++h) heads.push_back("1." + std::to_string(h));
  heads.push_back("0.0");
  heads.push_back("0.1");
  const std::string induction = live.answer(makeCheck(LessonCheckKind::Head, heads));
  ASSERT_FALSE(induction.empty());
  EXPECT_EQ(induction[0], '1') << "an induction head sits in the second layer, got " << induction;
  // Its weight on the target (position 8, after the first 'w' at 7) is most of its attention.
  const int target = 8;
  const int head = induction[2] - '0';
  const std::vector<float> map = live.snapshot->attention.map(live.snapshot->trace.capturedIndex(1).value(), head, false);
  std::printf("induction head %s puts %.3f of its attention on the target\n", induction.c_str(), map[(size_t)(T - 1) * T + target]);
  EXPECT_GT(map[(size_t)(T - 1) * T + target], 0.3f);
  // The same heads asked about the query's own previous token (a non-induction key) answer differently.
  const std::string previous = live.answer(makeCheck(LessonCheckKind::Head, heads, T - 2));
  EXPECT_FALSE(previous.empty());
  EXPECT_NE(previous, induction) << "the head attending to the previous token is not the induction head";
  // A key given as the target itself gives the induction answer again.
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::Head, heads, target)), induction);
}

TEST(LessonCheck, AHeadCheckWithNoEarlierOccurrenceSaysWhy) {
  Live live("induction-2l", "abcdefg");
  std::string why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::Head, {"1.0", "1.1"}), &why), "");
  EXPECT_NE(why.find("induction target"), std::string::npos) << why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::Head, {"1.0", "7.1"}, 2), &why), "");
  EXPECT_NE(why.find("7.1"), std::string::npos) << why;
}

TEST(LessonCheck, BrownSmallSaysAmericaAfterTheUnitedStatesOf) {
  // tscope-cli forward ranks " the" (0.155) then " America" (0.077) after this prompt.
  Live live("brown-small", "The United States of");
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::NextToken, {" banana", " America", " seventeen"})), " America");
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::NextToken, {" America", " the"})), " the");
  // The raw distribution decides, not the knobs: top_k 1 keeps only " the" but " America" still beats " banana".
  live.state.sampling.topK = 1;
  live.snapshot = computeSnapshot(live.session, requestFor(live.state, live.session.config()));
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::NextToken, {" banana", " America"})), " America");
  std::string why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::Expert, {"0", "1"}), &why), "");
  EXPECT_NE(why.find("no experts"), std::string::npos) << why;
}

TEST(LessonCheck, AttendedTokenComparesTrimmedTokenText) {
  Live live("induction-2l", "qjxvkzbwmfqjxvkzbw");
  live.state.layer = 1;
  live.state.head = live.answer(makeCheck(LessonCheckKind::Head, {"1.0", "1.1", "1.2", "1.3"}))[2] - '0';
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::AttendedToken, {"q", " m ", "w"})), " m ") << "the induction target is the 'm' at position 8";
  std::string why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::AttendedToken, {"a", "b"}), &why), "");
  EXPECT_NE(why.find("not a choice"), std::string::npos) << why;
}

TEST(LessonCheck, BrownMoeNamesTheRoutersTopExpert) {
  Live live("brown-moe", "The river flows into the sea and the ships sail");
  const Trace& trace = live.snapshot->trace;
  std::vector<std::string> experts;
  for (int e = 0; e < 6; ++e) experts.push_back(std::to_string(e));
  int decided = 0;
  for (int layer = 0; layer < live.session.config().n_layer; ++layer) {
    for (int token = 0; token < (int)live.snapshot->ids.size(); ++token) {
      live.state.layer = layer;
      live.state.token = token;
      // The router's first choice for this token (token choice: assignments in (token, rank) order).
      const MoeRouting& routing = trace.moe[layer];
      int first = -1;
      for (const MoeAssignment& a : routing.assignments)
        if (a.token == token) {
          first = a.expert;
          break;
        }
      std::string why;
      const std::string answer = live.answer(makeCheck(LessonCheckKind::Expert, experts), &why);
      if (first < 6) {
        EXPECT_EQ(answer, std::to_string(first)) << "layer " << layer << " token " << token;
        ++decided;
      } else {
        EXPECT_EQ(answer, "") << "expert " << first << " is not a choice";
        EXPECT_NE(why.find("not a choice"), std::string::npos) << why;
      }
    }
  }
  EXPECT_GT(decided, 10);
}

TEST(LessonCheck, ParametersPicksTheNearestCount) {
  ModelConfig gpt2;
  gpt2.n_layer = 12;
  gpt2.n_head = 12;
  gpt2.n_embd = 768;
  gpt2.d_ff = 3072;
  gpt2.vocab_size = 50257;
  gpt2.n_positions = 1024;
  ASSERT_EQ(validateConfig(gpt2), "");
  const double total = (double)countParameters(gpt2).total;
  std::printf("GPT-2 small: %.4g parameters\n", total);
  EXPECT_NEAR(total, 124.4e6, 1e6);
  Live live("induction-2l", "ab");  // any snapshot: Parameters reads the architecture only
  const LessonCheck check = makeCheck(LessonCheckKind::Parameters, {"12M", "124M", "1.5B"});
  EXPECT_EQ(lessonCheckAnswer(check, *live.snapshot, live.session, live.state, gpt2), "124M");
  ModelConfig xl = gpt2;
  xl.n_layer = 48;
  xl.n_head = 25;
  xl.n_embd = 1600;
  xl.d_ff = 6400;
  EXPECT_EQ(lessonCheckAnswer(check, *live.snapshot, live.session, live.state, xl), "1.5B");
  std::string why;
  EXPECT_EQ(lessonCheckAnswer(check, *live.snapshot, live.session, live.state, std::nullopt, &why), "");
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(lessonCheckAnswer(makeCheck(LessonCheckKind::Parameters, {"many", "124M"}), *live.snapshot, live.session, live.state, gpt2, &why), "");
  EXPECT_NE(why.find("many"), std::string::npos) << why;
}

TEST(LessonCheck, TokenCountIsWhatTheTokenizerCutsThePromptInto) {
  // tscope-cli tokenize: ' Re' 'y' 'k' 'j' 'av' 'ik' for the rare word, ' fle' 'w' for ' flew'.
  Live live("brown-small", "The jury flew to Reykjavik");
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::TokenCount, {"5", "11", "26"})), "11");
  std::string why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::TokenCount, {"5", "6"}), &why), "");
  EXPECT_NE(why.find("11 tokens"), std::string::npos) << why;
  EXPECT_EQ(live.answer(makeCheck(LessonCheckKind::TokenCount, {"many", "11"}), &why), "");
  EXPECT_NE(why.find("many"), std::string::npos) << why;
  Live chars("induction-2l", "ZXqwertyuiopqwert");  // a character per token
  EXPECT_EQ(chars.answer(makeCheck(LessonCheckKind::TokenCount, {"1", "17", "34"})), "17");
}

TEST(LessonCheck, SourceWordIsTheWordTheCrossAttentionReads) {
  Session session(loadModel(modelDir("dates-encdec")), "cpu");
  AppState state;
  state.source = "the twenty first of march nineteen ninety nine";
  state.layer = 1;
  state.head = 1;
  auto answer = [&](const std::string& target, std::vector<std::string> choices, std::string* why = nullptr) {
    state.prompt = target;
    const auto snapshot = computeSnapshot(session, requestFor(state, session.config()));
    EXPECT_TRUE(snapshot && snapshot->error.empty()) << (snapshot ? snapshot->error : "no snapshot");
    return lessonCheckAnswer(makeCheck(LessonCheckKind::SourceWord, std::move(choices)), *snapshot, session, state, std::nullopt, why);
  };
  // The month's second digit reads "march"; the day's last digit "first" (the non-monotone alignment).
  EXPECT_EQ(answer("1999-0", {"twenty", "first", "march", "nineteen"}), "march");
  EXPECT_EQ(answer("1999-03-2", {"twenty", "first", "march", "nine"}), "first");
  state.averageHeads = true;  // the mean over heads, as the panel shows it then
  EXPECT_EQ(answer("1999-0", {"twenty", "march"}), "march");
  std::string why;
  EXPECT_EQ(answer("1999-0", {"march", "june"}, &why), "");
  EXPECT_NE(why.find("june"), std::string::npos) << why;
  Live decoderOnly("brown-small", "The jury");
  EXPECT_EQ(decoderOnly.answer(makeCheck(LessonCheckKind::SourceWord, {"jury", "The"}), &why), "");
  EXPECT_NE(why.find("encoder-decoder"), std::string::npos) << why;
}

TEST(LessonCheck, RunLessonChecksRunsTheSampleAndReportsAMissingModel) {
  const Lesson sample = loadLessonFile(std::string(TSCOPE_SOURCE_DIR) + "/tests/data/lessons/sample.json");
  const auto results = runLessonChecks(sample, std::string(TSCOPE_SOURCE_DIR) + "/assets/models");
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[1].check);
  EXPECT_EQ(results[1].liveAnswer, " America") << results[1].why;
  EXPECT_TRUE(results[1].agrees);
  EXPECT_FALSE(results[2].modelMissing);
  const auto missing = runLessonChecks(sample, "/no/such/models");
  EXPECT_TRUE(missing[1].modelMissing);
  EXPECT_FALSE(missing[1].agrees);
  EXPECT_NE(missing[1].why.find("not installed"), std::string::npos) << missing[1].why;
}

}  // namespace
}  // namespace tscope::session

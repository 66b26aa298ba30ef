// Lesson files: a valid lesson with every field parses; every refusal is one line naming the file,
// the step (1-based) and the field; the cumulative state, the model and the architecture at a step.
// The live checks (lessonCheckAnswer on shipped models) are in test_lesson_check.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/session/lesson.h"
#include "app/session/session_file.h"
#include "model/core/error.h"
#include "model/nn/what_if.h"

namespace tscope::session {
namespace {

const std::string kSample = std::string(TSCOPE_SOURCE_DIR) + "/tests/data/lessons/sample.json";
const std::string kModels = std::string(TSCOPE_SOURCE_DIR) + "/assets/models";

// A one-step lesson whose step is `step` (JSON object text) and whose top-level extras are `extra`.
std::string lessonText(const std::string& step, const std::string& extra = "") {
  return R"({"format": "tscope-lesson", "version": 1, "title": "T", "lecture": "L", "summary": "S", "model": "brown-small", )" + extra +
         R"("steps": [{"title": "first", "caption": "Fine."}, )" + step + "]}";
}

// The message lessonFromJsonText refuses `text` with ("" when it parses).
std::string refusal(const std::string& text) {
  try {
    lessonFromJsonText("dir/my.json", text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A refusal of a bad second step: one line with the path, "step 2" and the field.
void expectStepRefusal(const std::string& step, const std::string& field) {
  const std::string message = refusal(lessonText(step));
  SCOPED_TRACE(step);
  ASSERT_FALSE(message.empty()) << "parsed";
  EXPECT_EQ(message.rfind("dir/my.json: step 2", 0), 0u) << message;
  EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(Lesson, TheSampleParsesWithEveryField) {
  const Lesson lesson = loadLessonFile(kSample);
  EXPECT_EQ(lesson.name, "sample");
  EXPECT_EQ(lesson.title, "Sample: attention in three steps");
  EXPECT_EQ(lesson.lecture, "The Transformer");
  EXPECT_EQ(lesson.model, "brown-small");
  EXPECT_FALSE(lesson.projector);
  ASSERT_EQ(lesson.steps.size(), 3u);
  const LessonStep& first = lesson.steps[0];
  EXPECT_EQ(first.formula, "x = E[token] + P[pos]");
  EXPECT_EQ(first.highlight, "token_strip");
  EXPECT_EQ(nlohmann::json::parse(first.stateJson), nlohmann::json::parse(R"({"prompt": "The United States of", "panel": "prompt", "layer": 1})"));
  ASSERT_TRUE(lesson.steps[1].check);
  EXPECT_EQ(lesson.steps[1].check->kind, LessonCheckKind::NextToken);
  EXPECT_EQ(lesson.steps[1].check->choices.size(), 3u);
  EXPECT_EQ(lesson.steps[1].check->answer, " America");
  const LessonStep& third = lesson.steps[2];
  EXPECT_EQ(third.model, "brown-moe");
  EXPECT_EQ(third.expert, 1);
  EXPECT_EQ(third.trainPreset, "induction");
  EXPECT_EQ(third.trainSteps, 50);
  EXPECT_FALSE(third.architectureJson.empty());
  EXPECT_EQ(lesson.steps[0].expert, -1);
  EXPECT_FALSE(lesson.steps[0].check);
}

TEST(Lesson, LessonLevelRefusalsNameTheFileAndTheField) {
  const std::string good = lessonText(R"({"title": "x", "caption": "y"})");
  ASSERT_EQ(refusal(good), "");
  struct Case {
    std::string text, field;
  };
  const Case cases[] = {
      {"{not json", "malformed JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"format": "tscope-session", "version": 1})", "'format'"},
      {R"({"format": "tscope-lesson", "version": 2})", "'version'"},
      {lessonText(R"({"title": "x", "caption": "y"})", R"("colour": 1, )"), "'colour'"},
      {lessonText(R"({"title": "x", "caption": "y"})", R"("projector": "yes", )"), "'projector'"},
      {R"({"format": "tscope-lesson", "version": 1, "title": "T", "lecture": "L", "summary": "S", "model": "m", "steps": []})", "'steps'"},
      {R"({"format": "tscope-lesson", "version": 1, "lecture": "L", "summary": "S", "model": "m", "steps": [{}]})", "'title'"},
      // A key with a newline, a quote and 200 characters is shown escaped and cut (the libFuzzer find of 2026-11-27).
      {lessonText(R"({"title": "x", "caption": "y"})", R"("lec\ntu're": 1, )"), R"('lec\ntu're')"},
      {lessonText(R"({"title": "x", "caption": "y"})", "\"" + std::string(200, 'k') + "\": 1, "), "'" + std::string(57, 'k') + "...'"},
      {lessonText(R"({"title": "x", "caption": "y", "ti\ntle": 1})"), R"('ti\ntle')"},
      {lessonText(R"({"title": "x", "caption": "y", "check": {"question\n": 1}})"), R"('question\n')"},
      {lessonText(R"({"title": "x", "caption": "y", "architecture": {"n_la\nyer": 1}})"), R"('n_la\nyer')"},
  };
  for (const Case& c : cases) {
    const std::string message = refusal(c.text);
    EXPECT_EQ(message.rfind("dir/my.json: ", 0), 0u) << c.text << " -> " << message;
    EXPECT_NE(message.find(c.field), std::string::npos) << c.text << " -> " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  std::string many = R"({"format": "tscope-lesson", "version": 1, "title": "T", "lecture": "L", "summary": "S", "model": "m", "steps": [)";
  for (int i = 0; i < 41; ++i) many += std::string(i ? ", " : "") + R"({"title": "x", "caption": "y"})";
  const std::string message = refusal(many + "]}");
  EXPECT_NE(message.find("'steps'"), std::string::npos) << message;
  EXPECT_NE(message.find("41"), std::string::npos) << message;
}

TEST(Lesson, StepRefusalsNameTheStepAndTheField) {
  expectStepRefusal(R"({"caption": "No title."})", "title");
  expectStepRefusal(R"({"title": "x"})", "caption");
  expectStepRefusal(R"({"title": "x", "caption": "One. Two. Three. Four."})", "caption");
  expectStepRefusal(R"({"title": "x", "caption": ")" + std::string(401, 'a') + R"("})", "caption");
  expectStepRefusal(R"({"title": "x", "caption": "y", "captoin": "typo"})", "captoin");
  expectStepRefusal(R"({"title": "x", "caption": "y", "panel": "atention"})", "panel");
  expectStepRefusal(R"({"title": "x", "caption": "y", "layer": "two"})", "layer");
  expectStepRefusal(R"({"title": "x", "caption": "y", "layer": -1})", "layer");
  expectStepRefusal(R"({"title": "x", "caption": "y", "token": -2})", "token");
  expectStepRefusal(R"({"title": "x", "caption": "y", "temperature": "hot"})", "temperature");
  expectStepRefusal(R"({"title": "x", "caption": "y", "beam_width": 99})", "beam_width");
  expectStepRefusal(R"({"title": "x", "caption": "y", "interventions": [{"layer": "a"}]})", "interventions");
  expectStepRefusal(R"({"title": "x", "caption": "y", "ablation_kind": "half"})", "ablation_kind");
  expectStepRefusal(R"({"title": "x", "caption": "y", "expert": -2})", "expert");
  expectStepRefusal(R"({"title": "x", "caption": "y", "model": 3})", "model");
  expectStepRefusal(R"({"title": "x", "caption": "y", "architecture": {"n_head": 5, "n_embd": 64}})", "architecture");
  expectStepRefusal(R"({"title": "x", "caption": "y", "architecture": {"n_layers": 4}})", "architecture");
  expectStepRefusal(R"({"title": "x", "caption": "y", "architecture": 4})", "architecture");
  expectStepRefusal(R"({"title": "x", "caption": "y", "train_preset": "nope"})", "train_preset");
  expectStepRefusal(R"({"title": "x", "caption": "y", "panel": "scaling", "tab": "scaling_tab_mine"})", "tab");
  expectStepRefusal(R"({"title": "x", "caption": "y", "tab": "scaling_tab_runs"})", "tab");  // the step shows Attention
  expectStepRefusal(R"({"title": "x", "caption": "y", "panel": "efficient", "tab": "scaling_tab_runs"})", "tab");
  expectStepRefusal(R"({"title": "x", "caption": "y", "train_preset": "copy", "train_steps": -1})", "train_steps");
  const std::string check = R"({"title": "x", "caption": "y", "check": )";
  expectStepRefusal(check + R"("what"})", "check");
  expectStepRefusal(check + R"({"question": "q", "kind": "colour", "choices": ["a", "b"], "answer": "a"}})", "kind");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["0.1", "0.2"], "answer": "1.1"}})", "answer");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["0.1"], "answer": "0.1"}})", "choices");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["a", "b", "c", "d", "e", "f", "g"], "answer": "a"}})", "choices");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["a", "a"], "answer": "a"}})", "choices");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["a", 1], "answer": "a"}})", "choices");
  expectStepRefusal(check + R"({"question": "q", "kind": "expert", "choices": ["0", "1"], "answer": "0", "key": 2}})", "key");
  expectStepRefusal(check + R"({"question": "q", "kind": "head", "choices": ["0.0", "1.1"], "answer": "0.0", "hint": 2}})", "hint");
  expectStepRefusal(check + R"({"kind": "head", "choices": ["0.0", "1.1"], "answer": "0.0"}})", "question");
}

// A tab belongs to the panel in effect at its step: named there, or on an earlier step.
TEST(Lesson, ATabOfThePanelShownParses) {
  const Lesson lesson = lessonFromJsonText("dir/my.json", lessonText(R"({"title": "x", "caption": "y", "panel": "scaling", "tab": "scaling_tab_runs"},
      {"title": "z", "caption": "w", "tab": "scaling_tab_emergence"})"));
  ASSERT_EQ(lesson.steps.size(), 3u);
  EXPECT_EQ(lesson.steps[1].tab, "scaling_tab_runs");
  EXPECT_EQ(lesson.steps[2].tab, "scaling_tab_emergence");
  EXPECT_TRUE(lesson.steps[0].tab.empty());
  const std::string refused = refusal(lessonText(R"({"title": "x", "caption": "y", "panel": "training", "tab": "efficient_tab_flash"})"));
  for (const char* words : {"efficient_tab_flash", "Efficient attention", "Training"}) EXPECT_NE(refused.find(words), std::string::npos) << refused;
}

TEST(Lesson, CaptionSentencesAreCountedByTheirEnds) {
  EXPECT_EQ(refusal(lessonText(R"({"title": "x", "caption": "One, 2.5 times. Two! Three?"})")), "");
  EXPECT_EQ(refusal(lessonText(R"({"title": "x", "caption": "No full stop at all"})")), "");
  EXPECT_NE(refusal(lessonText(R"({"title": "x", "caption": "One. Two! Three? Four"})")), "");  // the fourth has no stop but is a sentence
}

TEST(Lesson, AMissingModelParsesAndResolvesToAPathThatDoesNotExist) {
  const Lesson lesson = lessonFromJsonText("lessons/x.json", lessonText(R"({"title": "x", "caption": "y", "model": "no-such-model"})"));
  EXPECT_EQ(lessonModelAtStep(lesson, -1, kModels), kModels + "/brown-small");
  EXPECT_EQ(lessonModelAtStep(lesson, 0, kModels), kModels + "/brown-small");
  EXPECT_EQ(lessonModelAtStep(lesson, 1, kModels), kModels + "/no-such-model");
  const Lesson relative = lessonFromJsonText("lessons/x.json", lessonText(R"({"title": "x", "caption": "y", "model": "../models/mine"})"));
  EXPECT_EQ(lessonModelAtStep(relative, 1, kModels), "models/mine");
}

TEST(Lesson, StateAtStepIsCumulativeAndJumpingEqualsWalking) {
  const Lesson lesson = loadLessonFile(kSample);
  ModelConfig config;
  config.n_layer = 4;
  config.n_head = 4;
  const AppState start;
  const AppState one = stateAtStep(lesson, 0, start, config);
  EXPECT_EQ(one.prompt, "The United States of");
  EXPECT_EQ(one.panel, PanelId::Prompt);
  EXPECT_EQ(one.layer, 1);
  EXPECT_FALSE(one.projector);  // the lesson says false
  const AppState two = stateAtStep(lesson, 1, start, config);
  EXPECT_EQ(two.layer, 1) << "step 2 keeps step 1's layer";
  EXPECT_EQ(two.head, 2);
  EXPECT_EQ(two.panel, PanelId::Attention);
  EXPECT_EQ(two.prompt, one.prompt);
  const AppState three = stateAtStep(lesson, 2, start, config);
  EXPECT_FLOAT_EQ(three.sampling.temperature, 0.7f);
  ASSERT_EQ(three.interventions.size(), 1u);
  // Walking 1, 2, 3 (each step over the state before) equals jumping to 3.
  AppState walked = start;
  for (int step = 0; step < 3; ++step) walked = stateAtStep(lesson, step, walked, config);
  EXPECT_EQ(sessionFileToJsonText({"", walked, ""}), sessionFileToJsonText({"", three, ""}));
}

TEST(Lesson, WhatIfsAndInterventionsCarryOverAndAStepsListReplacesThem) {
  // Step 2 changes only the prompt: its model still has step 1's what-ifs and intervention; step 3's
  // list replaces step 1's (not added to it); step 4's "" and [] take them all out.
  const Lesson lesson = lessonFromJsonText("carry.json", R"({"format": "tscope-lesson", "version": 1, "title": "W", "lecture": "L",
    "summary": "S", "model": "induction-2l", "steps": [
      {"title": "1", "caption": "c", "prompt": "abc", "what_ifs": "no-positions,no-causal-mask", "compare_what_ifs": "no-scale",
       "interventions": [{"layer": 0, "head": 1, "kind": "zero"}]},
      {"title": "2", "caption": "c", "prompt": "cba"},
      {"title": "3", "caption": "c", "interventions": [{"layer": 1, "head": 0, "kind": "zero"}]},
      {"title": "4", "caption": "c", "what_ifs": "", "interventions": []}]})");
  ModelConfig config;
  config.n_layer = 2;
  config.n_head = 4;
  const AppState two = stateAtStep(lesson, 1, AppState{}, config);
  EXPECT_EQ(two.prompt, "cba");
  EXPECT_EQ(two.whatIfs, parseWhatIfNames("no-positions,no-causal-mask"));
  EXPECT_EQ(two.compareWhatIfs, parseWhatIfNames("no-scale"));
  ASSERT_EQ(two.interventions.size(), 1u);
  EXPECT_EQ(two.interventions[0].head, 1);
  const AppState three = stateAtStep(lesson, 2, AppState{}, config);
  ASSERT_EQ(three.interventions.size(), 1u) << "step 3's list replaces step 1's";
  EXPECT_EQ(three.interventions[0].layer, 1);
  const AppState four = stateAtStep(lesson, 3, AppState{}, config);
  EXPECT_TRUE(four.whatIfs.items.empty());
  EXPECT_TRUE(four.interventions.empty());
}

TEST(Lesson, AHandBuiltStepWithNoStateKeepsTheState) {
  Lesson lesson;
  lesson.steps.push_back(LessonStep{});
  lesson.steps[0].stateJson = "";
  AppState start;
  start.layer = 1;
  ModelConfig config;
  config.n_layer = 2;
  EXPECT_EQ(stateAtStep(lesson, 0, start, config).layer, 1);
  EXPECT_TRUE(stateAtStep(lesson, 0, start, config).projector) << "lessons switch projector mode on unless they say false";
}

TEST(Lesson, StateAtStepClampsToTheModel) {
  const Lesson lesson = loadLessonFile(kSample);
  ModelConfig config;
  config.n_layer = 1;  // the sample asks for layer 1 and head 2, and zeroes head 0.1
  config.n_head = 1;
  std::string warning;
  const AppState state = stateAtStep(lesson, 2, AppState{}, config, &warning);
  EXPECT_EQ(state.layer, 0);
  EXPECT_EQ(state.head, 0);
  EXPECT_TRUE(state.interventions.empty());
  EXPECT_NE(warning.find("layer 1"), std::string::npos) << warning;
  EXPECT_NE(warning.find("head 2"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), std::string::npos) << warning;
}

TEST(Lesson, ArchitectureAtStepAppliesTheLastOneOverTheBase) {
  const Lesson lesson = loadLessonFile(kSample);
  ModelConfig base;
  base.n_layer = 2;
  EXPECT_FALSE(architectureAtStep(lesson, 0, base));
  EXPECT_FALSE(architectureAtStep(lesson, 1, base));
  const auto config = architectureAtStep(lesson, 2, base);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->n_layer, 12);
  EXPECT_EQ(config->n_embd, 768);
  EXPECT_EQ(config->vocab_size, 50257);
  EXPECT_EQ(architectureAtStep(lesson, 99, base)->n_head, 12);  // past the end: the last step's
}

TEST(Lesson, LoadLessonsNamesBrokenFilesAndKeepsTheRest) {
  std::vector<std::string> problems;
  const auto lessons = loadLessons(std::string(TSCOPE_SOURCE_DIR) + "/tests/data/lessons", &problems);
  ASSERT_EQ(lessons.size(), 1u);
  EXPECT_EQ(lessons[0].name, "sample");
  EXPECT_TRUE(problems.empty());
  problems.clear();
  EXPECT_TRUE(loadLessons("/no/such/dir", &problems).empty());
  EXPECT_EQ(problems.size(), 1u);
}

TEST(Lesson, StateFieldNamesAreWhatSessionFilesWrite) {
  const nlohmann::json written = nlohmann::json::parse(sessionFileToJsonText({}));
  for (const std::string& name : stateFieldNames()) EXPECT_TRUE(written.contains(name)) << name;
  EXPECT_EQ(stateFieldNames().size() + 2, written.size()) << "tscope_session and model are the two that are not state";
}

}  // namespace
}  // namespace tscope::session

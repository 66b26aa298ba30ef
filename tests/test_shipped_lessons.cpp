// The shipped lessons (assets/lessons/*.json): each loads with no problem, has 8..15 steps, names
// models that are installed, and every check's answer is what the live model says (runLessonChecks:
// one Session per model, reused). With no lesson files at all this fails: lessons are shipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/session/lesson.h"

namespace tscope::session {
namespace {

const std::string kAssets = std::string(TSCOPE_SOURCE_DIR) + "/assets";

TEST(ShippedLessons, EveryLessonLoadsAndItsChecksAgreeWithTheModel) {
  std::vector<std::string> problems;
  const std::vector<Lesson> lessons = loadLessons(kAssets + "/lessons", &problems);
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
  if (lessons.empty()) FAIL() << "no shipped lessons in " << kAssets << "/lessons";
  for (const Lesson& lesson : lessons) {
    SCOPED_TRACE(lesson.path);
    EXPECT_GE(lesson.steps.size(), 8u) << "a lesson has 8 to 15 steps";
    EXPECT_LE(lesson.steps.size(), 15u) << "a lesson has 8 to 15 steps";
    int checks = 0;
    for (const LessonStepCheck& result : runLessonChecks(lesson, kAssets + "/models")) {
      const std::string step = "step " + std::to_string(result.step + 1);
      EXPECT_TRUE(std::filesystem::is_directory(result.model)) << step << ": no model directory " << result.model;
      if (!result.check) continue;
      ++checks;
      EXPECT_EQ(result.liveAnswer, result.check->answer)
          << step << " (" << lessonCheckKindName(result.check->kind) << ": " << result.check->question << "): the model says \"" << result.liveAnswer
          << "\"" << (result.why.empty() ? "" : " because " + result.why);
    }
    std::printf("%s: %zu steps, %d checks\n", lesson.name.c_str(), lesson.steps.size(), checks);
  }
}

}  // namespace
}  // namespace tscope::session

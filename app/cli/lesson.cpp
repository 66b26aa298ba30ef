// tscope-cli lesson FILE_OR_NAME: loads a lesson (a bare NAME is assets/lessons/NAME.json), runs
// every step's check on the live model and prints each step with the author's and the model's
// answer; exits 1 when any disagrees, so a lesson author can check a lesson before class.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/common/args.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/session/lesson.h"
#include "model/core/error.h"

using nlohmann::json;

namespace tscope::cli {

int runLesson(const Argv& argv) {
  if (argv.empty() || argv[0].starts_with("--")) throw UsageError("needs a lesson file or name, e.g. tscope-cli lesson attention");
  Args args("lesson", Argv(argv.begin() + 1, argv.end()), {"assets", "backend"}, {});
  const std::filesystem::path assets = args.str("assets", std::string(TSCOPE_SOURCE_DIR) + "/assets");
  const std::string& target = argv[0];
  const bool bareName = target.find('/') == std::string::npos && !target.ends_with(".json");
  const std::string path = bareName ? (assets / "lessons" / (target + ".json")).string() : target;
  const session::Lesson lesson = session::loadLessonFile(path);
  json steps = json::array();
  bool allAgree = true;
  std::string firstProblem;  // the first step that disagrees, for the one line on stderr
  for (const session::LessonStepCheck& result : session::runLessonChecks(lesson, (assets / "models").string(), args.str("backend", "cpu"))) {
    const session::LessonStep& step = lesson.steps[result.step];
    const json state = step.stateJson.empty() ? json::object() : json::parse(step.stateJson);
    json entry = {{"index", result.step + 1}, {"title", step.title}, {"model", result.model}, {"panel", state.value("panel", "")}};
    if (result.modelMissing) entry["model_missing"] = true;
    if (!result.stateWarning.empty()) entry["warning"] = result.stateWarning;
    if (result.check) {
      entry["check"] = {{"question", result.check->question},
                        {"kind", session::lessonCheckKindName(result.check->kind)},
                        {"answer", result.check->answer},
                        {"live_answer", result.liveAnswer},
                        {"agrees", result.agrees}};
      if (!result.why.empty()) entry["check"]["why"] = result.why;
    }
    if (!result.agrees && firstProblem.empty()) {
      firstProblem = "step " + std::to_string(result.step + 1) + " (" + step.title + "): ";
      if (result.modelMissing) firstProblem += "its model " + result.model + " is missing";
      else if (result.check)
        firstProblem += "the live model answers \"" + result.liveAnswer + "\", the lesson says \"" + result.check->answer + "\"" +
                        (result.why.empty() ? "" : " (" + result.why + ")");
      else firstProblem += result.why.empty() ? "it could not run" : result.why;
    }
    allAgree = allAgree && result.agrees;
    steps.push_back(std::move(entry));
  }
  print(json{{"name", lesson.name}, {"title", lesson.title}, {"path", path}, {"steps", steps}});
  if (!allAgree) {
    std::fprintf(stderr, "tscope-cli lesson: %s\n", oneLine(firstProblem).c_str());
    return 1;
  }
  return 0;
}

}  // namespace tscope::cli

// Fuzzes lesson files (JSON: steps with captions, state fields, architecture, checks). An accepted
// lesson keeps the format's limits, every error is one line, and the state at every step (what
// the app shows when a lecturer jumps there) is computed without a throw and inside the ranges.
#include <string>

#include "app/session/lesson.h"
#include "fuzz_check.h"
#include "model/core/error.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  session::Lesson lesson;
  try {
    lesson = session::lessonFromJsonText("lessons/fuzz.json", fuzz::asString(data, size));
  } catch (const Error& e) {
    const std::string message = e.what();
    FUZZ_CHECK(message.find('\n') == std::string::npos, "a refusal of more than one line: " + message);
    FUZZ_CHECK(message.rfind("lessons/fuzz.json: ", 0) == 0, "a refusal that does not name the file: " + message);
    return 0;
  }
  FUZZ_CHECK(!lesson.steps.empty() && lesson.steps.size() <= 40, "step count");
  ModelConfig config;
  config.n_layer = 2;
  config.n_head = 2;
  for (int step = 0; step < (int)lesson.steps.size(); ++step) {
    const session::LessonStep& s = lesson.steps[step];
    FUZZ_CHECK(s.caption.size() <= 400, "caption length");
    if (s.check) {
      FUZZ_CHECK(s.check->choices.size() >= 2 && s.check->choices.size() <= 6, "choices");
      FUZZ_CHECK(std::count(s.check->choices.begin(), s.check->choices.end(), s.check->answer) == 1, "answer among the choices");
    }
    try {
      const session::AppState state = session::stateAtStep(lesson, step, session::AppState{}, config);
      FUZZ_CHECK(state.layer >= 0 && state.layer < config.n_layer && state.head >= 0 && state.head < config.n_head, "clamped selection");
      for (const InterventionSpec& spec : state.interventions)
        FUZZ_CHECK(interventionProblem(spec, config).empty(), "an intervention that does not fit");
    } catch (const Error& e) {
      FUZZ_CHECK(false, std::string("stateAtStep threw on a lesson that parsed: ") + e.what());
    }
    // Over the default config (what parsing checked) the architecture applies; over another base it may refuse, in one line.
    try {
      session::architectureAtStep(lesson, step, ModelConfig{});
    } catch (const Error& e) {
      FUZZ_CHECK(false, std::string("architectureAtStep refused what parsing accepted: ") + e.what());
    }
    try {
      session::architectureAtStep(lesson, step, config);
    } catch (const Error& e) {
      FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos, e.what());
    }
    (void)session::lessonModelAtStep(lesson, step, "assets/models");
  }
  return 0;
}

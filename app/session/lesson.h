// Lessons: the two lectures as guided walkthroughs on the live model (assets/lessons/*.json, the
// format in docs/LESSONS.md). A lesson is an ordered list of steps; each step sets what the
// lecturer would otherwise click (model, prompt, panel, selection, knobs, architecture fields),
// shows a caption of at most three sentences and a formula, may outline a named screen region,
// and may ask a check question whose answer the live model decides (revealed on a key).
//
// Steps are cumulative: step n's state is the lesson's start state with steps 0..n applied in
// order (stateAtStep), so jumping to any step, leaving the lesson and coming back give the same
// screen. Parsing is strict (one line per problem, naming the file and the step); a step naming a
// model that is not installed is not an error: the lesson opens and says so at that step.
//
// Plain data and pure functions, no GL or ImGui: the app, tscope-cli, the tests and the fuzzer
// all use these.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "model/core/config.h"

namespace tscope::session {

struct Snapshot;
class Session;

// What a check asks, and how the live model decides the answer (lessonCheckAnswer).
enum class LessonCheckKind {
  NextToken,      // choices are token texts: the one whose first token the model ranks highest next
  AttendedToken,  // choices are token texts: the key token the step's layer/head/query attends to most
  Head,           // choices are "L.H": the head whose map puts the most weight on the step's key
                  // (`key`, a position; -1: the token after the query's previous occurrence, the induction target)
  Expert,         // choices are expert numbers "0".."E-1": the step's layer's top expert for the query token
  Parameters,     // choices are numbers: the one nearest the parameter count of the step's architecture
  FilledToken,    // choices are token texts: the one a masked LM ranks highest behind the prompt's first [MASK]
  TokenCount,     // choices are numbers: the one equal to how many tokens the model's tokenizer cuts the prompt into
  SourceWord,     // choices are words of the source: the one the step's layer/head's cross-attention weighs most from the
                  // query, summed over the word's tokens (encoder-decoder models: the Translation panel's map)
};

struct LessonCheck {
  std::string question;
  LessonCheckKind kind = LessonCheckKind::NextToken;
  std::vector<std::string> choices;  // 2..6
  std::string answer;                // the author's answer: must be one of the choices; the tests check the model agrees
  int key = -1;                      // Head: the key position (-1: the induction target)
};

struct LessonStep {
  std::string title;      // short, shown with the step number
  std::string caption;    // at most three sentences
  std::string formula;    // optional, plain text (Unicode allowed), shown large
  std::string model;      // "" = keep; else a name under assets/models or a path relative to the lesson file
  std::string highlight;  // optional region name to outline (a recordItem name, e.g. "attention_heatmap")
  std::string tab;        // optional sub-tab of the step's panel to open, by its region name
                          // (app_state.h's panelOfTab: "scaling_tab_runs", "efficient_tab_flash", ...)
  // Session-file fields this step sets (prompt, panel, layer, head, token, temperature, top_k,
  // top_p, greedy, seed, beam_width, ...; the same names and checks as session files), kept as
  // JSON and applied in order by stateAtStep.
  std::string stateJson = "{}";  // a JSON object's text ("{}" when the step sets none; "" reads as "{}")
  int expert = -1;               // the Experts panel's selected expert (-1: keep)
  // Architecture & cost panel: config.json fields put into its editor (validated like config.json
  // on load: one line), as a JSON object's text ("" = keep).
  std::string architectureJson;
  // Training panel: start this preset (`tscope --train-preset` keys: induction, copy, ...) when the
  // step is entered, unless a run of it is already going; pause after trainSteps steps (0: run on).
  std::string trainPreset;
  int trainSteps = 0;
  std::optional<LessonCheck> check;
};

struct Lesson {
  std::string name;  // the file's stem: "attention"
  std::string path;  // the file it came from
  std::string title;
  std::string lecture;            // "The Transformer" or "Advanced Transformers"
  std::string summary;            // one or two sentences for the picker
  std::string model;              // the model the lesson starts with (same rules as a step's)
  bool projector = true;          // lessons switch projector mode on unless they say false
  std::vector<LessonStep> steps;  // 1..40
};

// Parses and validates a lesson (`path` names it in every message; its stem is the lesson's
// name). Throws tscope::Error with one line: the file, the step ("step 3"), the field and why.
Lesson lessonFromJsonText(const std::string& path, const std::string& text);
Lesson loadLessonFile(const std::string& path);  // throws tscope::Error (cannot open, or the above)

// The shipped lessons (assets/lessons/*.json under `root`, sorted by file name); a broken file
// is left out and named in `problems` (one line each), never thrown.
std::vector<Lesson> loadLessons(const std::string& lessonsDir, std::vector<std::string>* problems = nullptr);

// The model directory a step (or the lesson, for step -1) runs on: the last model named at or
// before that step, resolved against `modelsDir` (a bare name) or the lesson file's folder (a
// relative path). "" when none was named.
std::string lessonModelAtStep(const Lesson& lesson, int step, const std::string& modelsDir);

// The AppState at `step`: `start` with the lesson's projector setting and steps 0..step applied
// in order, clamped to `config` (layer, head, and interventions that do not fit). `warning` gets
// one line for anything left out.
AppState stateAtStep(const Lesson& lesson, int step, const AppState& start, const ModelConfig& config, std::string* warning = nullptr);

// The Architecture panel's config at `step` (the last architectureJson at or before it applied
// over `base`), or nullopt when no step so far sets one. Throws tscope::Error (one line naming
// the step) when the fields make an invalid model over this base (parsing checked them over the
// default config).
std::optional<ModelConfig> architectureAtStep(const Lesson& lesson, int step, const ModelConfig& base);

// The live model's answer to a check: one of check.choices, or "" with `why` set when the
// snapshot cannot decide it (no such layer or head, a token not in the prompt, not an MoE model).
// `state` is the step's state (layer, head, token); `architecture` the step's (Parameters).
std::string lessonCheckAnswer(const LessonCheck& check, const Snapshot& snapshot, const Session& session, const AppState& state,
                              const std::optional<ModelConfig>& architecture, std::string* why = nullptr);

const char* lessonCheckKindName(LessonCheckKind kind);  // "next_token", ...

// Every step's live check, as tscope-cli lesson and the shipped-lesson tests run them: each step's
// model (one Session per model directory, reused) on the step's state (stateAtStep from a default
// AppState), the answer lessonCheckAnswer gives beside the author's.
struct LessonStepCheck {
  int step = 0;               // 0-based
  std::string model;          // lessonModelAtStep ("" when none)
  bool modelMissing = false;  // no directory there: checks other than Parameters are not decided
  std::string stateWarning;   // stateAtStep's warning
  std::optional<LessonCheck> check;
  std::string liveAnswer;  // "" when undecided (why says why)
  std::string why;
  bool agrees = true;  // no check, or liveAnswer == check->answer
};
// Throws tscope::Error when a model that exists cannot be loaded or run.
std::vector<LessonStepCheck> runLessonChecks(const Lesson& lesson, const std::string& modelsDir, const std::string& backend = "cpu");

}  // namespace tscope::session

// Lesson files: strict parsing (one line per problem, naming the file, the step and the field),
// the shipped lessons, and the cumulative state, model and architecture at a step. A step's
// session-file fields are checked and applied by readStateFields, the session files' own reader.
#include "app/session/lesson.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/session/session_file.h"
#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/train/train_presets.h"

namespace tscope::session {

namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kMaxSteps = 40;
constexpr int kMaxSentences = 3;
constexpr size_t kMaxCaptionChars = 400;
constexpr size_t kMinChoices = 2, kMaxChoices = 6;
const char* const kLessonKeys[] = {"format", "version", "title", "lecture", "summary", "model", "projector", "steps"};
const char* const kStepKeys[] = {"title",  "caption",      "formula",      "model",       "highlight", "tab",
                                 "expert", "architecture", "train_preset", "train_steps", "check"};
const char* const kCheckKeys[] = {"question", "kind", "choices", "answer", "key"};
const char* const kCheckKindNames[] = {"next_token", "attended_token", "head", "expert", "parameters", "filled_token", "token_count", "source_word"};

// A value as a message shows it: short JSON for strings and numbers, the type name otherwise.
std::string shown(const json& value) {
  if (!value.is_string() && !value.is_number()) return value.type_name();
  return oneLine(value.dump(), 60);
}

// A field name as a message shows it: escaped (a key may hold a newline), at most 60 characters.
std::string shownKey(const std::string& key) { return oneLine(key, 60); }

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& why) {
  throw Error(where + ": field '" + shownKey(field) + "' " + why);
}

template <size_t N>
bool known(const char* const (&names)[N], const std::string& key) {
  return std::find_if(std::begin(names), std::end(names), [&](const char* name) { return key == name; }) != std::end(names);
}

// A required field: absent is an error, a wrong type too.
template <typename T>
void require(const json& object, const char* key, T& out, const std::string& where) {
  if (!readJsonField(object, key, out, where)) fail(where, key, "is missing");
}

// Sentence ends: '.', '!' or '?' followed by a space or the end of the text (runs like "?!" or
// "..." count once); text after the last end is one more sentence without its stop.
int sentenceCount(const std::string& text) {
  int count = 0;
  bool open = false;  // text since the last end
  for (size_t i = 0; i < text.size(); ++i) {
    const bool stop = text[i] == '.' || text[i] == '!' || text[i] == '?';
    const bool atEnd = i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n';
    if (stop && atEnd) {
      ++count;
      open = false;
    } else if (text[i] != ' ' && text[i] != '\n') {
      open = true;
    }
  }
  return count + (open ? 1 : 0);
}

LessonCheck parseCheck(const json& value, const std::string& where) {
  if (!value.is_object()) fail(where, "check", "must be an object (got " + shown(value) + ")");
  const std::string at = where + ": check";
  for (const auto& [key, unused] : value.items())
    if (!known(kCheckKeys, key)) fail(at, key, "is not a check field (question, kind, choices, answer, key)");
  LessonCheck check;
  require(value, "question", check.question, at);
  std::string kind;
  require(value, "kind", kind, at);
  const auto* name = std::find_if(std::begin(kCheckKindNames), std::end(kCheckKindNames), [&](const char* n) { return kind == n; });
  if (name == std::end(kCheckKindNames))
    fail(at, "kind",
         "is not a check kind: next_token, attended_token, head, expert, parameters, filled_token, token_count, source_word (got \"" + kind + "\")");
  check.kind = static_cast<LessonCheckKind>(name - std::begin(kCheckKindNames));
  const auto choices = value.find("choices");
  if (choices == value.end()) fail(at, "choices", "is missing");
  if (!choices->is_array() || choices->size() < kMinChoices || choices->size() > kMaxChoices)
    fail(at, "choices",
         "must be an array of 2 to 6 strings (got " + (choices->is_array() ? std::to_string(choices->size()) + " entries" : shown(*choices)) + ")");
  for (const json& choice : *choices) {
    if (!choice.is_string()) fail(at, "choices", "must hold strings (got " + shown(choice) + ")");
    if (std::count(check.choices.begin(), check.choices.end(), choice.get<std::string>()))
      fail(at, "choices", "must be distinct (got " + shown(choice) + " twice)");
    check.choices.push_back(choice.get<std::string>());
  }
  require(value, "answer", check.answer, at);
  if (!std::count(check.choices.begin(), check.choices.end(), check.answer))
    fail(at, "answer", "is not one of the choices (got \"" + check.answer + "\")");
  if (readJsonField(value, "key", check.key, at)) {
    if (check.kind != LessonCheckKind::Head) fail(at, "key", "is only for kind \"head\" (got kind \"" + kind + "\")");
    if (check.key < -1) fail(at, "key", "must be a position >= 0, or -1 for the induction target (got " + std::to_string(check.key) + ")");
  }
  return check;
}

// The config `architecture` (an object of config.json fields) makes over `base`: base as
// config.json, the fields put over it, read back and validated. Throws tscope::Error naming `where`.
ModelConfig applyArchitecture(const ModelConfig& base, const json& architecture, const std::string& where) {
  json merged = configToJson(base);
  for (const auto& [key, value] : architecture.items()) {
    if (!merged.contains(key)) fail(where, "architecture", "has '" + shownKey(key) + "', which is not a config.json field");
    merged[key] = value;
  }
  try {
    ModelConfig config = configFromJson(merged);
    if (const std::string problem = validateConfig(config); !problem.empty()) fail(where, "architecture", "is not a valid model: " + problem);
    return config;
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.starts_with(where)) throw;
    fail(where, "architecture", std::string("is not a valid model: ") + message);
  }
}

LessonStep parseStep(const json& value, const std::string& where) {
  if (!value.is_object()) throw Error(where + ": must be an object (got " + shown(value) + ")");
  const std::vector<std::string>& stateKeys = stateFieldNames();
  json state = json::object();
  for (const auto& [key, field] : value.items()) {
    if (std::count(stateKeys.begin(), stateKeys.end(), key)) state[key] = field;
    else if (!known(kStepKeys, key)) fail(where, key, "is not a step field (a typo?)");
  }
  LessonStep step;
  require(value, "title", step.title, where);
  require(value, "caption", step.caption, where);
  if (step.caption.size() > kMaxCaptionChars)
    fail(where, "caption", "is longer than 400 characters (got " + std::to_string(step.caption.size()) + ")");
  if (const int sentences = sentenceCount(step.caption); sentences > kMaxSentences)
    fail(where, "caption", "has more than three sentences (got " + std::to_string(sentences) + ")");
  readJsonField(value, "formula", step.formula, where);
  readJsonField(value, "model", step.model, where);
  readJsonField(value, "highlight", step.highlight, where);
  if (readJsonField(value, "tab", step.tab, where) && !panelOfTab(step.tab))
    fail(where, "tab", "names no panel tab (got \"" + step.tab + "\"; one of " + panelTabNames() + ")");
  if (readJsonField(value, "expert", step.expert, where) && step.expert < 0)
    fail(where, "expert", "must be an expert number >= 0 (got " + std::to_string(step.expert) + ")");
  if (const auto architecture = value.find("architecture"); architecture != value.end()) {
    if (!architecture->is_object()) fail(where, "architecture", "must be an object of config.json fields (got " + shown(*architecture) + ")");
    applyArchitecture(ModelConfig{}, *architecture, where);
    step.architectureJson = architecture->dump();
  }
  if (readJsonField(value, "train_preset", step.trainPreset, where) && !findTrainPreset(step.trainPreset))
    fail(where, "train_preset", "names no training preset (got \"" + step.trainPreset + "\")");
  if (readJsonField(value, "train_steps", step.trainSteps, where) && step.trainSteps < 0)
    fail(where, "train_steps", "must be >= 0 (got " + std::to_string(step.trainSteps) + ")");
  if (step.trainSteps > 0 && step.trainPreset.empty()) fail(where, "train_steps", "needs a train_preset in the same step");
  if (const auto check = value.find("check"); check != value.end()) step.check = parseCheck(*check, where);
  // The step's state fields, checked on their own over a default state: what the session files
  // leave out with a warning (a bad intervention, an unknown panel) is an error in a lesson.
  AppState probe;
  std::string warning;
  readStateFields(state, probe, warning, where);
  if (!warning.empty()) throw Error(warning);
  step.stateJson = state.dump();
  return step;
}

std::string resolveModel(const Lesson& lesson, const std::string& model, const std::string& modelsDir) {
  if (model.find('/') == std::string::npos) return (fs::path(modelsDir) / model).string();
  const fs::path path(model);
  if (path.is_absolute()) return model;
  return (fs::path(lesson.path).parent_path() / path).lexically_normal().string();
}
}  // namespace

const char* lessonCheckKindName(LessonCheckKind kind) { return kCheckKindNames[static_cast<int>(kind)]; }

Lesson lessonFromJsonText(const std::string& path, const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw Error(path + ": not a lesson (malformed JSON: " + what + ")");
  }
  if (!j.is_object()) throw Error(path + ": not a lesson (the file is not a JSON object)");
  std::string format;
  readJsonField(j, "format", format, path);
  if (format != "tscope-lesson")
    fail(path, "format", "must be \"tscope-lesson\" (got " + (j.contains("format") ? shown(j["format"]) : "nothing") + ")");
  int version = 0;
  require(j, "version", version, path);
  if (version != 1) fail(path, "version", "must be 1 (got " + std::to_string(version) + ")");
  for (const auto& [key, unused] : j.items())
    if (!known(kLessonKeys, key)) fail(path, key, "is not a lesson field (format, version, title, lecture, summary, model, projector, steps)");
  Lesson lesson;
  lesson.path = path;
  lesson.name = fs::path(path).stem().string();
  require(j, "title", lesson.title, path);
  require(j, "lecture", lesson.lecture, path);
  require(j, "summary", lesson.summary, path);
  require(j, "model", lesson.model, path);
  if (lesson.model.empty()) fail(path, "model", "must name the model the lesson starts with");
  readJsonField(j, "projector", lesson.projector, path);
  const auto steps = j.find("steps");
  if (steps == j.end()) fail(path, "steps", "is missing");
  if (!steps->is_array() || steps->empty() || steps->size() > kMaxSteps)
    fail(path, "steps",
         "must be an array of 1 to 40 steps (got " + (steps->is_array() ? std::to_string(steps->size()) + " steps" : shown(*steps)) + ")");
  PanelId panel = AppState{}.panel;  // the panel each step shows: the last one named at or before it
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string where = path + ": step " + std::to_string(i + 1);
    lesson.steps.push_back(parseStep((*steps)[i], where));
    if (const auto named = (*steps)[i].find("panel"); named != (*steps)[i].end()) panel = *panelFromName(named->get<std::string>());
    const LessonStep& step = lesson.steps.back();
    if (!step.tab.empty() && *panelOfTab(step.tab) != panel)
      fail(where, "tab",
           step.tab + " is a tab of the " + panelTitle(*panelOfTab(step.tab)) + " panel, but this step shows the " + panelTitle(panel) +
               " panel (set \"panel\")");
  }
  return lesson;
}

Lesson loadLessonFile(const std::string& path) {
  requireRegularFile(path, "the lesson file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the lesson file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return lessonFromJsonText(path, contents.str());
}

std::vector<Lesson> loadLessons(const std::string& lessonsDir, std::vector<std::string>* problems) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(lessonsDir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path().string());
  if (ec && problems) problems->push_back(lessonsDir + ": cannot list the lessons (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  std::vector<Lesson> lessons;
  for (const std::string& file : files) {
    try {
      lessons.push_back(loadLessonFile(file));
    } catch (const Error& e) {
      if (problems) problems->push_back(e.what());
    }
  }
  return lessons;
}

std::string lessonModelAtStep(const Lesson& lesson, int step, const std::string& modelsDir) {
  std::string model = lesson.model;
  for (int i = 0; i <= step && i < (int)lesson.steps.size(); ++i)
    if (!lesson.steps[i].model.empty()) model = lesson.steps[i].model;
  return model.empty() ? "" : resolveModel(lesson, model, modelsDir);
}

AppState stateAtStep(const Lesson& lesson, int step, const AppState& start, const ModelConfig& config, std::string* warning) {
  AppState state = start;
  state.projector = lesson.projector;
  std::string left;
  for (int i = 0; i <= step && i < (int)lesson.steps.size(); ++i) {
    const std::string where = lesson.path + ": step " + std::to_string(i + 1);
    std::string stepWarning;
    const std::string& fields = lesson.steps[i].stateJson;
    readStateFields(fields.empty() ? json::object() : json::parse(fields), state, stepWarning, where);
    if (!stepWarning.empty()) left += (left.empty() ? "" : "; ") + stepWarning;
  }
  auto clamp = [&](int& value, int count, const char* what) {
    if (value < count) return;
    left += (left.empty() ? "" : "; ") + std::string(what) + " " + std::to_string(value) + " is past this model's " + std::to_string(count) +
            " (shown " + std::to_string(count - 1) + ")";
    value = std::max(0, count - 1);
  };
  clamp(state.layer, config.n_layer, "layer");
  clamp(state.head, config.n_head, "head");
  std::erase_if(state.interventions, [&](const InterventionSpec& spec) {
    const std::string problem = interventionProblem(spec, config);
    if (!problem.empty()) left += (left.empty() ? "left out: " : "; left out: ") + problem;
    return !problem.empty();
  });
  if (warning) *warning = left;
  return state;
}

std::optional<ModelConfig> architectureAtStep(const Lesson& lesson, int step, const ModelConfig& base) {
  for (int i = std::min(step, (int)lesson.steps.size() - 1); i >= 0; --i)
    if (!lesson.steps[i].architectureJson.empty())
      return applyArchitecture(base, json::parse(lesson.steps[i].architectureJson), lesson.path + ": step " + std::to_string(i + 1));
  return std::nullopt;
}

}  // namespace tscope::session

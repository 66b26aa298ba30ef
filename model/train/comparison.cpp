// The training-comparison file (comparison.h): writing it, and reading it back with every field
// checked (jsonFieldProblem: exact integers, finite numbers), so the panel can open any file and
// show one line when it is wrong. Nothing here runs a Trainer: the fuzz target links this alone.
#include "model/train/comparison.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"

namespace tscope {

namespace {

using nlohmann::json;
constexpr const char* kFormat = "tscope-training-comparison";
constexpr int kVersion = 1;

json runToJson(const ComparedRun& run) {
  return {{"label", run.label},
          {"name", run.name},
          {"data", run.data},
          {"train_config", trainConfigToJson(run.config)},
          {"parameters", run.parameters},
          {"train_loss", run.trainLoss},
          {"eval_steps", run.evalSteps},
          {"val_loss", run.valLoss},
          {"seconds", run.seconds},
          {"tokens_per_second", run.tokensPerSecond}};
}

ComparedRun runFromJson(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": not an object");
  ComparedRun run;
  readField(j, "label", run.label, where);
  if (run.label.empty()) throw Error(where + ": \"label\" is empty");
  readField(j, "name", run.name, where);
  readField(j, "data", run.data, where);
  try {
    parseDataSpec(run.data);
  } catch (const Error& e) {
    throw Error(where + " (" + run.label + "): \"data\": " + e.what());
  }
  if (!j.contains("train_config")) throw Error(where + ": missing \"train_config\"");
  try {
    run.config = trainConfigFromJson(j.at("train_config"));
    validate(run.config);
  } catch (const Error& e) {
    throw Error(where + " (" + run.label + "): \"train_config\": " + e.what());
  }
  readField(j, "parameters", run.parameters, where);
  if (run.parameters < 0) throw Error(where + ": \"parameters\" is negative");
  run.trainLoss = readArray<float>(j, "train_loss", where);
  run.evalSteps = readArray<int>(j, "eval_steps", where);
  run.valLoss = readArray<float>(j, "val_loss", where);
  readField(j, "seconds", run.seconds, where);
  readField(j, "tokens_per_second", run.tokensPerSecond, where);
  if (run.seconds < 0 || run.tokensPerSecond < 0) throw Error(where + ": \"seconds\" and \"tokens_per_second\" must not be negative");
  const std::string named = where + " (" + run.label + ")";
  if (run.evalSteps.size() != run.valLoss.size())
    throw Error(named + ": " + std::to_string(run.evalSteps.size()) + " eval_steps but " + std::to_string(run.valLoss.size()) + " val_loss");
  if (run.trainLoss.empty()) throw Error(named + ": no train_loss (a run of no steps)");
  if (static_cast<int64_t>(run.trainLoss.size()) > run.config.maxSteps)
    throw Error(named + ": " + std::to_string(run.trainLoss.size()) + " train_loss values but the run has " + std::to_string(run.config.maxSteps) +
                " steps");
  const int steps = static_cast<int>(run.trainLoss.size());
  for (size_t i = 0; i < run.evalSteps.size(); ++i) {
    const int step = run.evalSteps[i];
    if (step < 0 || step > steps)
      throw Error(named + ": eval_steps[" + std::to_string(i) + "] = " + std::to_string(step) + " is beyond the run's " + std::to_string(steps) +
                  " steps");
    if (i > 0 && step <= run.evalSteps[i - 1]) throw Error(named + ": eval_steps are not increasing at index " + std::to_string(i));
  }
  return run;
}

}  // namespace

json comparisonToJson(const TrainingComparison& c) {
  json runs = json::array();
  for (const ComparedRun& run : c.runs) runs.push_back(runToJson(run));
  return {{"format", kFormat},    {"version", kVersion},  {"title", c.title}, {"description", c.description},
          {"command", c.command}, {"machine", c.machine}, {"date", c.date},   {"runs", runs}};
}

TrainingComparison comparisonFromJson(const json& j) {
  const std::string where = "training comparison";
  checkFormatHeader(j, kFormat, kVersion, where);
  TrainingComparison c;
  readField(j, "title", c.title, where, false);
  readField(j, "description", c.description, where, false);
  readField(j, "command", c.command, where, false);
  readField(j, "machine", c.machine, where, false);
  readField(j, "date", c.date, where, false);
  const auto runs = j.find("runs");
  if (runs == j.end() || !runs->is_array()) throw Error(where + ": \"runs\" is missing or not an array");
  if (runs->empty()) throw Error(where + ": no runs");
  if (runs->size() > static_cast<size_t>(kMaxComparedRuns))
    throw Error(where + ": " + std::to_string(runs->size()) + " runs, more than the " + std::to_string(kMaxComparedRuns) + " it shows");
  for (size_t i = 0; i < runs->size(); ++i) c.runs.push_back(runFromJson((*runs)[i], "run " + std::to_string(i)));
  return c;
}

TrainingComparison loadComparison(const std::string& path) {
  const json j = readJsonFile(path, kMaxComparisonFileBytes, "training comparison");
  try {
    return comparisonFromJson(j);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

void saveComparison(const TrainingComparison& comparison, const std::string& path) {
  writeFileAtomically(path, comparisonToJson(comparison).dump(1) + "\n");
}

TrainConfig configWithSteps(const TrainConfig& preset, int steps) {
  TrainConfig c = preset;
  c.maxSteps = steps;
  c.warmupSteps = std::clamp(preset.warmupSteps, 0, std::max(0, steps));
  if (preset.evalEvery > 0 && preset.maxSteps > 0)
    c.evalEvery = std::max(1, static_cast<int>(static_cast<double>(preset.evalEvery) * steps / preset.maxSteps + 0.5));
  return c;
}

std::string todayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

std::string describeMachine() {
  std::string cpu;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; cpu.empty() && std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) cpu = line.substr(line.find(':') + 2);
  std::string os;
  std::ifstream release("/etc/os-release");
  for (std::string line; os.empty() && std::getline(release, line);)
    if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(12);
  os.erase(std::remove(os.begin(), os.end(), '"'), os.end());
  std::string text = std::to_string(std::thread::hardware_concurrency()) + " cores";
  if (!cpu.empty()) text += ", " + cpu;
  if (!os.empty()) text += ", " + os;
  return text;
}

}  // namespace tscope

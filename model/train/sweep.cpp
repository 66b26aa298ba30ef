// The sweep file (sweep.h): the spec and its grid of runs, the finished runs' summaries, reading it
// back with every field checked (so the panel opens any file and shows one line when it is wrong),
// the scaling points and the CSV. Nothing here trains: the fuzz target links this alone.
#include "model/train/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/core/csv.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"
#include "model/theory/cost.h"
#include "model/train/train_presets.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

using nlohmann::json;
constexpr const char* kFormat = "tscope-sweep";
constexpr int kVersion = 1;
constexpr uintmax_t kMaxSweepFileBytes = 16u << 20;

// 250000 -> "250K", 1000000 -> "1M", 1500000 -> "1.5M", 999 -> "999".
std::string tokensLabel(int64_t tokens) {
  char text[32];
  if (tokens >= 1000000) std::snprintf(text, sizeof text, "%.4gM", tokens / 1e6);
  else if (tokens >= 1000) std::snprintf(text, sizeof text, "%.4gK", tokens / 1e3);
  else std::snprintf(text, sizeof text, "%lld", static_cast<long long>(tokens));
  return text;
}

// Tokens in one optimizer step of `config` on `data`: batch x T x accumulation, with T the data's
// sequence length (the run's for text, the task's own for synthetic tasks).
int64_t tokensPerStep(const TrainConfig& config, const DataSpec& data) {
  return static_cast<int64_t>(config.batch) * resolvedModelConfig(config, data).n_positions * config.gradAccumulation;
}

TrainConfig runConfig(const SweepSpec& spec, const SweepSize& size, int64_t tokens) {
  TrainConfig c = spec.base;
  c.model.n_layer = size.nLayer;
  c.model.n_embd = size.dModel;
  c.model.n_head = size.nHead;
  c.model.d_ff = 0;       // 4 n_embd
  c.model.n_kv_head = 0;  // one K/V head per query head (the size fixes the heads; a saved config writes n_kv_head out)
  if (size.maxLr > 0) {
    c.minLr = spec.base.maxLr > 0 ? size.maxLr * spec.base.minLr / spec.base.maxLr : size.maxLr / 10;
    c.maxLr = size.maxLr;
  }
  const int64_t perStep = tokensPerStep(c, spec.data);
  c.maxSteps = static_cast<int>(std::max<int64_t>(1, std::llround(static_cast<double>(tokens) / static_cast<double>(perStep))));
  c.warmupSteps = std::clamp(c.warmupSteps, 0, c.maxSteps);  // evalEvery and checkpointEvery stay intervals in steps
  return c;
}

}  // namespace

json sweepSpecToJson(const SweepSpec& s) {
  json sizes = json::array();
  for (const SweepSize& size : s.sizes)
    sizes.push_back({{"n_layer", size.nLayer}, {"d_model", size.dModel}, {"n_head", size.nHead}, {"max_lr", size.maxLr}});
  return {{"title", s.title},
          {"description", s.description},
          {"data", toString(s.data)},
          {"train_config", trainConfigToJson(s.base)},
          {"sizes", sizes},
          {"tokens", s.tokens},
          {"params", s.totalParams ? "total" : "non-embedding"},
          {"task_examples", s.taskExamples}};
}

SweepSpec sweepSpecFromJson(const json& j) {
  const std::string where = "spec";
  if (!j.is_object()) throw Error(where + ": not an object");
  SweepSpec s;
  readField(j, "title", s.title, where, false);
  readField(j, "description", s.description, where, false);
  std::string data;
  readField(j, "data", data, where);
  try {
    s.data = parseDataSpec(data);
  } catch (const Error& e) {
    throw Error(where + ": \"data\": " + e.what());
  }
  if (!j.contains("train_config")) throw Error(where + ": missing \"train_config\"");
  try {
    s.base = trainConfigFromJson(j.at("train_config"));
  } catch (const Error& e) {
    throw Error(where + ": \"train_config\": " + e.what());
  }
  const auto sizes = j.find("sizes");
  if (sizes == j.end() || !sizes->is_array()) throw Error(where + ": \"sizes\" is missing or not an array");
  for (size_t i = 0; i < sizes->size(); ++i) {
    const std::string at = where + ": sizes[" + std::to_string(i) + "]";
    const json& e = (*sizes)[i];
    if (!e.is_object()) throw Error(at + " is not an object");
    SweepSize size;
    readField(e, "n_layer", size.nLayer, at);
    readField(e, "d_model", size.dModel, at);
    readField(e, "n_head", size.nHead, at);
    readField(e, "max_lr", size.maxLr, at, false);
    s.sizes.push_back(size);
  }
  s.tokens = readArray<int64_t>(j, "tokens", where);
  std::string params = "non-embedding";
  readField(j, "params", params, where, false);
  if (params != "non-embedding" && params != "total")
    throw Error(where + ": \"params\" is \"" + params + "\", expected \"non-embedding\" or \"total\"");
  s.totalParams = params == "total";
  readField(j, "task_examples", s.taskExamples, where, false);
  if (std::string problem = validateSweepSpec(s); !problem.empty()) throw Error(where + ": " + problem);
  return s;
}

namespace {

json scoresToJson(const TaskScores& t) {
  return {{"examples", t.examples},
          {"exact_match", t.exactMatch},
          {"answer_token_loss", t.answerTokenLoss},
          {"answer_token_accuracy", t.answerTokenAccuracy}};
}

json runToJson(const SweepRunResult& r) {
  json j = {{"name", r.name},
            {"n_layer", r.size.nLayer},
            {"d_model", r.size.dModel},
            {"n_head", r.size.nHead},
            {"max_lr", r.size.maxLr},
            {"tokens", r.tokens},
            {"steps", r.steps},
            {"params_non_embedding", r.paramsNonEmbedding},
            {"params_total", r.paramsTotal},
            {"train_loss", r.trainLoss},
            {"val_loss", r.valLoss},
            {"eval_steps", r.evalSteps},
            {"eval_loss", r.evalLoss},
            {"seconds", r.seconds},
            {"tokens_per_second", r.tokensPerSecond}};
  if (r.task) j["task"] = scoresToJson(*r.task);
  return j;
}

void requireNonNegative(double value, const char* key, const std::string& where) {
  if (!(value >= 0)) throw Error(where + ": \"" + key + "\" must not be negative");
}

SweepRunResult runFromJson(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": not an object");
  SweepRunResult r;
  readField(j, "name", r.name, where);
  const std::string at = where + " (" + r.name + ")";
  readField(j, "n_layer", r.size.nLayer, at);
  readField(j, "d_model", r.size.dModel, at);
  readField(j, "n_head", r.size.nHead, at);
  readField(j, "max_lr", r.size.maxLr, at, false);
  readField(j, "tokens", r.tokens, at);
  readField(j, "steps", r.steps, at);
  readField(j, "params_non_embedding", r.paramsNonEmbedding, at);
  readField(j, "params_total", r.paramsTotal, at);
  readField(j, "train_loss", r.trainLoss, at);
  readField(j, "val_loss", r.valLoss, at);
  r.evalSteps = readArray<int>(j, "eval_steps", at);
  r.evalLoss = readArray<float>(j, "eval_loss", at);
  readField(j, "seconds", r.seconds, at);
  readField(j, "tokens_per_second", r.tokensPerSecond, at);
  if (r.tokens <= 0 || r.steps <= 0) throw Error(at + ": \"tokens\" and \"steps\" must be positive");
  if (r.paramsNonEmbedding <= 0 || r.paramsTotal < r.paramsNonEmbedding)
    throw Error(at + ": \"params_non_embedding\" must be positive and at most \"params_total\"");
  if (!(r.valLoss > 0) || !(r.trainLoss > 0)) throw Error(at + ": \"train_loss\" and \"val_loss\" must be positive");
  requireNonNegative(r.seconds, "seconds", at);
  requireNonNegative(r.tokensPerSecond, "tokens_per_second", at);
  if (r.evalSteps.size() != r.evalLoss.size())
    throw Error(at + ": " + std::to_string(r.evalSteps.size()) + " eval_steps but " + std::to_string(r.evalLoss.size()) + " eval_loss");
  for (size_t i = 0; i < r.evalSteps.size(); ++i)
    if (r.evalSteps[i] < 0 || r.evalSteps[i] > r.steps || (i > 0 && r.evalSteps[i] <= r.evalSteps[i - 1]))
      throw Error(at + ": eval_steps[" + std::to_string(i) + "] is not increasing within the run's " + std::to_string(r.steps) + " steps");
  if (const auto task = j.find("task"); task != j.end()) {
    const std::string tw = at + ": task";
    if (!task->is_object()) throw Error(tw + " is not an object");
    TaskScores t;
    readField(*task, "examples", t.examples, tw);
    readField(*task, "exact_match", t.exactMatch, tw);
    readField(*task, "answer_token_loss", t.answerTokenLoss, tw);
    readField(*task, "answer_token_accuracy", t.answerTokenAccuracy, tw);
    if (t.examples <= 0) throw Error(tw + ": \"examples\" must be positive");
    for (double share : {t.exactMatch, t.answerTokenAccuracy})
      if (share < 0 || share > 1) throw Error(tw + ": a share is outside [0, 1]");
    requireNonNegative(t.answerTokenLoss, "answer_token_loss", tw);
    r.task = t;
  }
  return r;
}

}  // namespace

SweepSize parseSweepSize(const std::string& text) {
  SweepSize size;
  int used = 0;
  const bool full = std::sscanf(text.c_str(), "L%d-d%d-h%d%n", &size.nLayer, &size.dModel, &size.nHead, &used) == 3;
  if (!full) {
    used = 0;
    if (std::sscanf(text.c_str(), "L%d-d%d%n", &size.nLayer, &size.dModel, &used) != 2)
      throw Error("size \"" + text + "\": expected L<layers>-d<d_model>[-h<heads>], e.g. L2-d64");
    size.nHead = std::max(1, size.dModel / 16);
  }
  if (used != static_cast<int>(text.size())) throw Error("size \"" + text + "\": unexpected text after the size");
  if (size.nLayer < 1 || size.dModel < 1 || size.nHead < 1) throw Error("size \"" + text + "\": layers, d_model and heads must be positive");
  return size;
}

int64_t parseTokenCount(const std::string& text) {
  double value = 0;
  int used = 0;
  if (text.empty() || std::sscanf(text.c_str(), "%lf%n", &value, &used) != 1) throw Error("token budget \"" + text + "\" is not a number");
  std::string suffix = text.substr(used);
  const double scale = suffix.empty() ? 1 : suffix == "K" || suffix == "k" ? 1e3 : suffix == "M" ? 1e6 : suffix == "B" ? 1e9 : 0;
  if (scale == 0) throw Error("token budget \"" + text + "\": the suffix must be K, M or B");
  value *= scale;
  if (!std::isfinite(value) || value < 1 || value > 1e15 || value != std::floor(value))
    throw Error("token budget \"" + text + "\" must be a whole number of tokens from 1 to 1e15");
  return static_cast<int64_t>(value);
}

std::string SweepSize::name() const { return "L" + std::to_string(nLayer) + "-d" + std::to_string(dModel); }

std::string validateSweepSpec(const SweepSpec& spec) {
  if (spec.sizes.empty()) return "a sweep needs at least one model size";
  if (spec.tokens.empty()) return "a sweep needs at least one token budget";
  if (spec.sizes.size() * spec.tokens.size() > static_cast<size_t>(kMaxSweepRuns))
    return std::to_string(spec.sizes.size() * spec.tokens.size()) + " runs: a sweep holds at most " + std::to_string(kMaxSweepRuns);
  if (spec.taskExamples < 0 || spec.taskExamples > 100000) return "task_examples must be in [0, 100000]";
  if (spec.taskExamples > 0 && spec.data.brown) return "task_examples needs a synthetic task (the data is text)";
  std::set<std::string> names;
  for (const SweepSize& size : spec.sizes) {
    if (!names.insert(size.name()).second) return "the size " + size.name() + " is listed twice";
    if (!(size.maxLr >= 0) || !std::isfinite(size.maxLr)) return size.name() + ": max_lr must be a non-negative number";
  }
  std::set<int64_t> budgets;
  for (int64_t tokens : spec.tokens) {
    if (tokens <= 0) return "token budgets must be positive";
    if (!budgets.insert(tokens).second) return "the token budget " + std::to_string(tokens) + " is listed twice";
  }
  for (const SweepSize& size : spec.sizes) {
    TrainConfig c;
    try {
      c = runConfig(spec, size, spec.tokens.front());
    } catch (const Error& e) {
      return size.name() + ": " + e.what();
    }
    if (std::string problem = validateTrainSetup(c, spec.data); !problem.empty()) return size.name() + ": " + problem;
  }
  return "";
}

std::vector<SweepRunPlan> planSweep(const SweepSpec& spec) {
  std::vector<SweepRunPlan> plans;
  for (const SweepSize& size : spec.sizes)
    for (int64_t tokens : spec.tokens) plans.push_back({size.name() + "-" + tokensLabel(tokens), size, tokens, runConfig(spec, size, tokens)});
  auto flops = [&](const SweepRunPlan& p) {
    const ParamCounts counts = countParameters(resolvedModelConfig(p.config, spec.data));
    return static_cast<double>(spec.totalParams ? counts.total : counts.nonEmbedding) * static_cast<double>(p.tokens);
  };
  std::stable_sort(plans.begin(), plans.end(), [&](const SweepRunPlan& a, const SweepRunPlan& b) { return flops(a) < flops(b); });
  return plans;
}

const SweepRunResult* SweepResults::find(const std::string& runName) const {
  for (const SweepRunResult& run : runs)
    if (run.name == runName) return &run;
  return nullptr;
}

json sweepToJson(const SweepResults& sweep) {
  json runs = json::array();
  for (const SweepRunResult& run : sweep.runs) runs.push_back(runToJson(run));
  return {{"format", kFormat},  {"version", kVersion},     {"spec", sweepSpecToJson(sweep.spec)}, {"runs", runs}, {"machine", sweep.machine},
          {"date", sweep.date}, {"command", sweep.command}};
}

SweepResults sweepFromJson(const json& j) {
  const std::string where = "sweep";
  checkFormatHeader(j, kFormat, kVersion, where);
  SweepResults sweep;
  if (!j.contains("spec")) throw Error(where + ": missing \"spec\"");
  sweep.spec = sweepSpecFromJson(j.at("spec"));
  readField(j, "machine", sweep.machine, where, false);
  readField(j, "date", sweep.date, where, false);
  readField(j, "command", sweep.command, where, false);
  const auto runs = j.find("runs");
  if (runs == j.end() || !runs->is_array()) throw Error(where + ": \"runs\" is missing or not an array");
  std::set<std::string> planned;
  for (const SweepRunPlan& plan : planSweep(sweep.spec)) planned.insert(plan.name);
  for (size_t i = 0; i < runs->size(); ++i) {
    SweepRunResult run = runFromJson((*runs)[i], "runs[" + std::to_string(i) + "]");
    if (!planned.count(run.name)) throw Error(where + ": run \"" + run.name + "\" is not in the spec's grid");
    if (sweep.find(run.name)) throw Error(where + ": run \"" + run.name + "\" is listed twice");
    sweep.runs.push_back(std::move(run));
  }
  return sweep;
}

SweepResults loadSweep(const std::string& path) {
  const std::string file = fs::is_directory(path) ? (fs::path(path) / "sweep.json").string() : path;
  const json j = readJsonFile(file, kMaxSweepFileBytes, "sweep file");
  try {
    return sweepFromJson(j);
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
}

void saveSweep(const SweepResults& sweep, const std::string& path) { writeFileAtomically(path, sweepToJson(sweep).dump(1) + "\n"); }

std::vector<ScalingPoint> sweepPoints(const SweepResults& sweep) {
  std::vector<ScalingPoint> points;
  for (const SweepRunResult& run : sweep.runs)
    points.push_back(
        {static_cast<double>(sweep.spec.totalParams ? run.paramsTotal : run.paramsNonEmbedding), static_cast<double>(run.tokens), run.valLoss});
  return points;
}

std::string sweepRunsCsv(const SweepResults& sweep) {
  bool task = false;
  for (const SweepRunResult& run : sweep.runs) task = task || run.task.has_value();
  std::ostringstream out;
  out << "name,n_layer,d_model,n_head,params_non_embedding,params_total,tokens,steps,flops,train_loss,val_loss,seconds,tokens_per_second";
  if (task) out << ",exact_match,answer_token_loss,answer_token_accuracy";
  out << "\r\n";
  for (const SweepRunResult& run : sweep.runs) {
    const double n = static_cast<double>(sweep.spec.totalParams ? run.paramsTotal : run.paramsNonEmbedding);
    out << csvField(run.name) << ',' << run.size.nLayer << ',' << run.size.dModel << ',' << run.size.nHead << ',' << run.paramsNonEmbedding << ','
        << run.paramsTotal << ',' << run.tokens << ',' << run.steps << ',' << csvNumber(trainingFlops(n, static_cast<double>(run.tokens))) << ','
        << csvNumber(run.trainLoss) << ',' << csvNumber(run.valLoss) << ',' << csvNumber(run.seconds) << ',' << csvNumber(run.tokensPerSecond);
    if (task) {
      if (run.task)
        out << ',' << csvNumber(run.task->exactMatch) << ',' << csvNumber(run.task->answerTokenLoss) << ','
            << csvNumber(run.task->answerTokenAccuracy);
      else out << ",,,";
    }
    out << "\r\n";
  }
  return out.str();
}

}  // namespace tscope

// The training run's config file (see trainer.h): reading it with every field's type checked and
// unknown keys refused, the rules a run config must obey, and writing it back. Kept apart from the
// Trainer so the parser builds (and is fuzzed) without the training engine.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/train/trainer.h"

using nlohmann::json;

namespace tscope {

namespace {

template <typename T>
void readKey(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (const char* problem = jsonFieldProblem(*it, out))
    throw Error(std::string("train config: \"") + key + "\" " + problem + " (got " + (it->is_number() ? it->dump() : it->type_name()) + ")");
}

// Every key of the "train" object with the member it holds: the one list the reader, its unknown-key
// check and the writer walk (C is TrainConfig or const TrainConfig).
template <class C, class Visit>
void trainFields(C& c, Visit&& visit) {
  visit("batch", c.batch);
  visit("seq_len", c.seqLen);
  visit("grad_accumulation", c.gradAccumulation);
  visit("steps", c.maxSteps);
  visit("lr", c.maxLr);
  visit("min_lr", c.minLr);
  visit("warmup", c.warmupSteps);
  visit("weight_decay", c.adam.weightDecay);
  visit("beta1", c.adam.beta1);
  visit("beta2", c.adam.beta2);
  visit("grad_clip", c.gradClip);
  visit("init_std", c.initStd);
  visit("eval_every", c.evalEvery);
  visit("eval_batches", c.evalBatches);
  visit("checkpoint_every", c.checkpointEvery);
  visit("seed", c.seed);
  visit("threads", c.threads);
}

}  // namespace

TrainConfig trainConfigFromJson(const json& j) {
  if (!j.is_object()) throw Error("train config: expected a JSON object with \"model\" and \"train\"");
  for (const auto& [key, value] : j.items())
    if (key != "model" && key != "train" && key != "comment") throw Error("train config: unknown key \"" + key + "\"");
  TrainConfig c;
  if (j.contains("model")) {
    if (const std::string key = unknownConfigKey(j.at("model")); !key.empty()) throw Error("train config: unknown key \"model." + key + "\"");
    c.model = configFromJson(j.at("model"));
  }
  if (!j.contains("train")) return c;
  const json& t = j.at("train");
  if (!t.is_object()) throw Error("train config: \"train\" must be an object");
  for (const auto& item : t.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one in the lambda below
    bool known = false;
    trainFields(c, [&](const char* name, const auto&) { known = known || key == name; });
    if (!known) throw Error("train config: unknown key \"train." + key + "\"");
  }
  trainFields(c, [&](const char* key, auto& member) { readKey(t, key, member); });
  validate(c);
  return c;
}

void validate(const TrainConfig& c) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw Error("train config: " + message);
  };
  require(c.batch >= 1 && c.batch <= 4096, "batch must be between 1 and 4096");
  require(c.seqLen >= 2 && c.seqLen <= 8192, "seq_len must be between 2 and 8192");
  require(c.gradAccumulation >= 1 && c.gradAccumulation <= 1024, "grad_accumulation must be between 1 and 1024");
  require(c.maxSteps >= 1, "steps must be at least 1");
  require(std::isfinite(c.maxLr) && c.maxLr > 0, "lr must be positive");
  require(std::isfinite(c.minLr) && c.minLr >= 0 && c.minLr <= c.maxLr, "min_lr must be between 0 and lr");
  require(c.warmupSteps >= 0 && c.warmupSteps <= c.maxSteps, "warmup must be between 0 and steps");
  require(std::isfinite(c.gradClip), "grad_clip must be finite");
  require(c.initStd > 0 && c.initStd < 10, "init_std must be in (0, 10)");
  require(c.evalEvery >= 0 && c.evalBatches >= 1, "eval_every must be >= 0 and eval_batches >= 1");
  require(c.checkpointEvery >= 0, "checkpoint_every must be >= 0");
  require(c.threads >= 0 && c.threads <= 1024, "threads must be between 0 and 1024");
  AdamWConfig adam = c.adam;
  adam.lr = c.maxLr;
  try {
    validate(adam);
  } catch (const Error& e) {
    throw Error(std::string("train config: ") + e.what());
  }
}

json trainConfigToJson(const TrainConfig& c) {
  json train = json::object();
  trainFields(c, [&](const char* key, const auto& member) { train[key] = member; });
  return {{"model", configToJson(c.model)}, {"train", std::move(train)}};
}

TrainConfig loadTrainConfig(const std::string& path) {
  requireRegularFile(path, "the train config");
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the train config");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  try {
    return trainConfigFromJson(j);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace tscope

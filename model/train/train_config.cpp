// The training run's config file (see trainer.h): reading it with every field's type checked and
// unknown keys refused, the rules a run config must obey, and writing it back. Kept apart from the
// Trainer so the parser builds (and is fuzzed) without the training engine.
#include <algorithm>
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
  static const char* known[] = {"batch", "seq_len", "grad_accumulation", "steps", "lr", "min_lr", "warmup", "weight_decay", "beta1",
                                "beta2", "grad_clip", "init_std", "eval_every", "eval_batches", "checkpoint_every", "seed", "threads"};
  for (const auto& [key, value] : t.items()) {
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      throw Error("train config: unknown key \"train." + key + "\"");
  }
  readKey(t, "batch", c.batch);
  readKey(t, "seq_len", c.seqLen);
  readKey(t, "grad_accumulation", c.gradAccumulation);
  readKey(t, "steps", c.maxSteps);
  readKey(t, "lr", c.maxLr);
  readKey(t, "min_lr", c.minLr);
  readKey(t, "warmup", c.warmupSteps);
  readKey(t, "weight_decay", c.adam.weightDecay);
  readKey(t, "beta1", c.adam.beta1);
  readKey(t, "beta2", c.adam.beta2);
  readKey(t, "grad_clip", c.gradClip);
  readKey(t, "init_std", c.initStd);
  readKey(t, "eval_every", c.evalEvery);
  readKey(t, "eval_batches", c.evalBatches);
  readKey(t, "checkpoint_every", c.checkpointEvery);
  readKey(t, "seed", c.seed);
  readKey(t, "threads", c.threads);
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
  return {{"model", configToJson(c.model)},
          {"train",
           {{"batch", c.batch},
            {"seq_len", c.seqLen},
            {"grad_accumulation", c.gradAccumulation},
            {"steps", c.maxSteps},
            {"lr", c.maxLr},
            {"min_lr", c.minLr},
            {"warmup", c.warmupSteps},
            {"weight_decay", c.adam.weightDecay},
            {"beta1", c.adam.beta1},
            {"beta2", c.adam.beta2},
            {"grad_clip", c.gradClip},
            {"init_std", c.initStd},
            {"eval_every", c.evalEvery},
            {"eval_batches", c.evalBatches},
            {"checkpoint_every", c.checkpointEvery},
            {"seed", c.seed},
            {"threads", c.threads}}}};
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

// scoreTask (model/train/task_scores.cpp): a tiny model trained on 1-digit addition gets nearly every
// sum right and an untrained one scores near chance; its exact match (one teacher-forced pass per
// example) equals that of real greedy decoding; tasks and models that do not fit are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/core/error.h"
#include "model/nn/transformer.h"
#include "model/train/sweep.h"
#include "model/train/train_presets.h"

using namespace tscope;

namespace {

TrainConfig oneDigitRun(int steps) {
  TrainConfig c = findTrainPreset("addition")->config;
  c.maxSteps = steps;
  c.threads = 1;
  return c;
}

TaskSpec oneDigit() {
  TaskSpec task;
  task.task = SyntheticTask::Addition;
  task.digits = 1;
  return task;
}

// Exact match by decoding each answer greedily, one token at a time through the KV cache, on the
// examples scoreTask(weights, task, examples, seed) draws.
double greedyExactMatch(const Weights& weights, const TaskSpec& task, int examples, uint64_t seed) {
  auto backend = makeCpuBackend(1);
  Transformer transformer(weights, *backend);
  Rng rng(seed);
  int right = 0;
  std::vector<float> logits;
  for (int e = 0; e < examples; ++e) {
    const TaskExample example = makeExample(task, rng);
    size_t start = 0;
    while (!example.scored[start]) ++start;
    std::vector<int> next(example.tokens.begin(), example.tokens.begin() + static_cast<std::ptrdiff_t>(start));
    for (int& id : next) ++id;
    KVCache cache(*backend, weights.config());
    bool allRight = true;
    for (size_t t = start; t < example.tokens.size(); ++t) {
      transformer.forward(next, cache, logits, false);
      int best = 0;
      for (int v = 1; v < static_cast<int>(logits.size()); ++v)
        if (logits[v] > logits[best]) best = v;
      allRight = allRight && best == example.tokens[t] + 1;
      next = {best};  // feeds back its own choice, right or wrong
    }
    right += allRight;
  }
  return static_cast<double>(right) / examples;
}

}  // namespace

TEST(TaskScores, TrainedAdditionIsExactAndUntrainedIsChance) {
  DataSpec data;
  data.brown = false;
  data.task = oneDigit();
  Trainer trainer(oneDigitRun(500), data);
  const TaskScores untrained = scoreTask(trainer.weights(), data.task, 200, 11);
  EXPECT_EQ(untrained.examples, 200);
  // 13 model ids (12 task tokens and "<unk>"): an untrained model is a near-uniform guess.
  EXPECT_NEAR(untrained.answerTokenLoss, std::log(13.0), 0.2);
  EXPECT_LT(untrained.exactMatch, 0.1);
  EXPECT_LT(untrained.answerTokenAccuracy, 0.3);
  EXPECT_EQ(greedyExactMatch(trainer.weights(), data.task, 200, 11), untrained.exactMatch);

  while (trainer.stepsDone() < 250) trainer.step();
  const TaskScores halfway = scoreTask(trainer.weights(), data.task, 200, 11);
  EXPECT_EQ(greedyExactMatch(trainer.weights(), data.task, 200, 11), halfway.exactMatch)
      << "greedy decoding and the teacher-forced shortcut disagree";

  while (!trainer.done()) trainer.step();
  const TaskScores trained = scoreTask(trainer.weights(), data.task, 200, 11);
  EXPECT_GT(trained.exactMatch, 0.9);
  EXPECT_GT(trained.answerTokenAccuracy, 0.9);
  EXPECT_LT(trained.answerTokenLoss, untrained.answerTokenLoss);
  EXPECT_LT(trained.answerTokenLoss, 0.5);
  EXPECT_EQ(greedyExactMatch(trainer.weights(), data.task, 200, 11), trained.exactMatch);
  // The same seed scores the same examples.
  EXPECT_EQ(scoreTask(trainer.weights(), data.task, 200, 11).answerTokenLoss, trained.answerTokenLoss);
}

TEST(TaskScores, EveryTaskHasAPromptAnswerSplitAndMisfitsAreRefused) {
  for (const char* key : {"copy", "reverse", "sort", "induction", "modadd", "addition"}) {
    SCOPED_TRACE(key);
    const TrainPreset& p = *findTrainPreset(key);
    Weights weights(resolvedModelConfig(p.config, p.data));
    weights.initRandom(1, 0.02);
    const TaskScores s = scoreTask(weights, p.data.task, 3, 1);
    EXPECT_TRUE(std::isfinite(s.answerTokenLoss));
    EXPECT_GE(s.answerTokenAccuracy, 0.0);
    EXPECT_LE(s.answerTokenAccuracy, 1.0);
  }
  const TrainPreset& copy = *findTrainPreset("copy");
  Weights weights(resolvedModelConfig(copy.config, copy.data));
  auto message = [&](const TaskSpec& task, int examples) {
    try {
      scoreTask(weights, task, examples, 1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(oneDigit(), 5).find("not made for addition"), std::string::npos) << message(oneDigit(), 5);
  EXPECT_NE(message(copy.data.task, 0).find("examples"), std::string::npos);
  TaskSpec bad = copy.data.task;
  bad.length = 0;
  EXPECT_NE(message(bad, 5).find("length"), std::string::npos);
}

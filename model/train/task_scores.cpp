// scoreTask (sweep.h): a trained model's exact match, answer-token loss and answer-token accuracy on
// held-out examples of a synthetic task. One teacher-forced forward per example gives all three:
// greedy decoding gets the whole answer right exactly when every teacher-forced argmax is right.
#include <cmath>
#include <limits>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/nn/transformer.h"
#include "model/train/sweep.h"

namespace tscope {

namespace {

// Where the answer starts: the first scored token. Throws unless the scored tokens are one run
// that ends the sequence (then the tokens before it are the prompt). Every task has such a split;
// Induction's answer is the repeat after its first token, which the prompt's first copy determines.
size_t answerStart(const TaskExample& example, const char* task) {
  size_t start = 0;
  while (start < example.scored.size() && !example.scored[start]) ++start;
  bool suffix = start > 0 && start < example.scored.size();
  for (size_t t = start; t < example.scored.size(); ++t) suffix = suffix && example.scored[t];
  if (!suffix) throw Error(std::string("task scores: ") + task + " has no prompt/answer split (its scored tokens do not end the sequence)");
  return start;
}

}  // namespace

// Greedy decoding from the prompt feeds back its own argmax; as long as each one is right, its
// prefix is the true one, so its next logits are the teacher-forced ones. Hence the decoded answer
// is entirely right if and only if every teacher-forced argmax over the answer is right (the same
// first-maximum rule as Sampler's greedy choice), and one forward of the whole example scores it.
TaskScores scoreTask(const Weights& weights, const TaskSpec& task, int examples, uint64_t seed) {
  if (std::string msg = validateTaskSpec(task); !msg.empty()) throw Error("task scores: " + msg);
  if (examples < 1) throw Error("task scores: examples must be >= 1, got " + std::to_string(examples));
  const ModelConfig& config = weights.config();
  const int V = config.vocab_size;
  if (V != taskVocabSize(task) + 1 || config.n_positions < taskSequenceLength(task) - 1)
    throw Error(std::string("task scores: the model (vocab_size ") + std::to_string(V) + ", n_positions " + std::to_string(config.n_positions) +
                ") was not made for " + taskName(task.task) + " (vocab_size " + std::to_string(taskVocabSize(task) + 1) + ", n_positions " +
                std::to_string(taskSequenceLength(task) - 1) + ")");
  auto backend = makeCpuBackend(1);  // tiny models: one thread is fastest and bit-reproducible
  Transformer transformer(weights, *backend);
  Rng rng(seed);
  TaskScores scores;
  scores.examples = examples;
  double lossSum = 0;
  long answerTokens = 0, rightTokens = 0, rightExamples = 0;
  std::vector<int> ids;
  for (int e = 0; e < examples; ++e) {
    const TaskExample example = makeExample(task, rng);
    const size_t start = answerStart(example, taskName(task.task));
    ids.assign(example.tokens.begin(), example.tokens.end() - 1);
    for (int& id : ids) ++id;                                      // model id = task id + 1 (id 0 is the character tokenizer's "<unk>")
    const std::vector<float> logits = transformer.logitsFor(ids);  // (T, V)
    bool allRight = true;
    for (size_t t = start; t < example.tokens.size(); ++t) {
      const float* row = logits.data() + (t - 1) * static_cast<size_t>(V);  // predicts tokens[t]
      const int target = example.tokens[t] + 1;
      int best = 0;
      float maxLogit = -std::numeric_limits<float>::infinity();
      for (int v = 0; v < V; ++v)
        if (row[v] > maxLogit) maxLogit = row[v], best = v;
      lossSum -= softmaxNorm(std::span<const float>(row, V)).logProbability(row[target]);
      ++answerTokens;
      rightTokens += best == target;
      allRight = allRight && best == target;
    }
    rightExamples += allRight;
  }
  scores.exactMatch = static_cast<double>(rightExamples) / examples;
  scores.answerTokenLoss = lossSum / static_cast<double>(answerTokens);
  scores.answerTokenAccuracy = static_cast<double>(rightTokens) / static_cast<double>(answerTokens);
  return scores;
}

}  // namespace tscope

// Pins inference and training to the one block forward: in every architecture-lab variant, on the
// reference and cpu backends, TrainModel::loss over B = 2 sequences equals the mean cross-entropy
// of Transformer's logits for the same weights and tokens. Each check prints its largest difference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "model/train/device.h"
#include "model/train/train_model.h"
#include "test_helpers.h"

using namespace tscope;
using tscope::testing::architectureVariants;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::variantConfig;

namespace {

constexpr int kSequences = 2;            // B
constexpr int kTokens = 9;               // T
constexpr double kLossTolerance = 1e-5;  // relative

// Mean over the (B, T) targets of -log softmax(logits)[target], in double; logits (B, T, V).
double meanCrossEntropy(const std::vector<float>& logits, const std::vector<int>& targets, int V) {
  double sum = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    const float* row = logits.data() + r * V;
    double maxLogit = row[0];
    for (int v = 1; v < V; ++v) maxLogit = std::max(maxLogit, (double)row[v]);
    double z = 0;
    for (int v = 0; v < V; ++v) z += std::exp(row[v] - maxLogit);
    sum += std::log(z) + maxLogit - row[targets[r]];
  }
  return sum / static_cast<double>(targets.size());
}

std::vector<std::unique_ptr<Device>> devices() {
  std::vector<std::unique_ptr<Device>> all;
  all.push_back(makeReferenceDevice());
  all.push_back(makeCpuDevice(2));
  return all;
}

}  // namespace

TEST(OneForward, TrainingLossIsTheCrossEntropyOfInferenceLogitsInEveryVariant) {
  for (const auto& device : devices()) {
    for (const auto& variant : architectureVariants()) {
      const ModelConfig config = variantConfig(variant);
      const int V = config.vocab_size;
      const Weights weights = randomWeights(config, 11);
      std::vector<int> inputs, targets;
      for (int b = 0; b < kSequences; ++b) {
        const auto ids = sequence(kTokens + 1, V, 3 + b);
        inputs.insert(inputs.end(), ids.begin(), ids.end() - 1);
        targets.insert(targets.end(), ids.begin() + 1, ids.end());
      }
      Transformer model(weights, device->forward());
      std::vector<float> logits;  // (B, T, V)
      for (int b = 0; b < kSequences; ++b) {
        const auto sequenceLogits = model.logitsFor(std::span<const int>(inputs).subspan((size_t)b * kTokens, kTokens));
        logits.insert(logits.end(), sequenceLogits.begin(), sequenceLogits.end());
      }
      const double inferenceLoss = meanCrossEntropy(logits, targets, V);

      TrainModel training(config, *device);
      const LossReport report = training.loss(weights, {kSequences, kTokens, inputs.data(), targets.data(), nullptr});
      const double difference = std::fabs(report.loss - inferenceLoss) / std::fabs(inferenceLoss);
      EXPECT_LT(difference, kLossTolerance) << device->name() << " " << variant.name << ": training " << report.loss << ", inference "
                                            << inferenceLoss;
      std::printf("%-9s %-26s loss %.7f, relative difference %.2e\n", device->name().c_str(), variant.name.c_str(), report.loss, difference);
      EXPECT_EQ(report.scoredTokens, kSequences * kTokens);
    }
  }
}

// Recorded decode steps on the GPU (CUDA graphs): generate() takes Transformer::decodeRecorded on
// the CUDA backend. Checked against the CPU by teacher forcing: the CPU runs the prompt plus the
// tokens the GPU produced, and at every step the GPU's token must be the CPU's choice (greedy: an
// argmax up to fp32 noise; sampled: the CPU's sampleNext with the same rng stream, which both
// advance identically). The cache rows the graph wrote are checked through one more plain
// forward. Skipped (reported as such) without a CUDA device; tests/test_recorded_steps.cpp checks
// the same contract on the CPU with a recording test backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/nn/backend_select.h"
#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"
#include "tests/test_cuda_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::architectureVariants;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::smallConfig;
using tscope::testing::variantConfig;

namespace {

// CPU logits (T, V) at every position of prompt + generated.
std::vector<float> cpuLogits(const Weights& weights, const std::vector<int>& prompt, const std::vector<int>& generated) {
  auto cpu = makeCpuBackend(1);
  Transformer model(weights, *cpu);
  std::vector<int> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  return model.logitsFor(all);
}

// How many generated tokens the CPU would not have chosen, replaying the same rng stream.
int disagreements(const Weights& weights, const std::vector<int>& prompt, const std::vector<int>& generated, const SamplingParams& params,
                  std::string* detail) {
  const int V = weights.config().vocab_size, P = static_cast<int>(prompt.size());
  const auto logits = cpuLogits(weights, prompt, generated);
  Rng rng(params.seed);
  int wrong = 0;
  for (size_t i = 0; i < generated.size(); ++i) {
    const std::span<const float> row(logits.data() + (size_t)(P - 1 + i) * V, V);
    if (params.greedy) {
      // An argmax up to fp32 noise: within 1e-4 of the CPU's maximum logit.
      const float best = *std::max_element(row.begin(), row.end());
      if (row[generated[i]] < best - 1e-4f * std::max(1.0f, std::abs(best))) {
        ++wrong;
        *detail += " step " + std::to_string(i) + ": token " + std::to_string(generated[i]) + " logit " + std::to_string(row[generated[i]]) +
                   " vs max " + std::to_string(best) + ";";
      }
    } else {
      const int expected = sampleNext(row, params, rng);
      if (expected != generated[i]) {
        ++wrong;
        *detail += " step " + std::to_string(i) + ": " + std::to_string(generated[i]) + " vs CPU " + std::to_string(expected) + ";";
      }
    }
  }
  return wrong;
}

SamplingParams sampledParams(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.topK = 20;
  p.topP = 0.9f;
  p.seed = seed;
  return p;
}

}  // namespace

TEST(CudaRecordedDecode, TokensAreTheCpusChoiceForEveryDenseVariant) {
  REQUIRE_CUDA(cuda);
  int checked = 0;
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    const Weights weights = randomWeights(config, 31);
    Transformer model(weights, *cuda);
    // As tests/test_recorded_steps.cpp: MoE routing, an attention variant and an encoder-decoder's
    // cross-attention run on the host, so those models decode through the plain loop; a
    // bidirectional model cannot be checked by teacher forcing (each token sees the later ones).
    const bool recordable = !config.isMoe() && !config.hasVariantAttention() && !config.isEncoderDecoder();
    EXPECT_EQ(model.canRecordSteps(), recordable) << v.name;
    if (!recordable || !config.causal) continue;
    ++checked;
    const auto prompt = sequence(6, config.vocab_size, 1);
    for (const SamplingParams& params : {SamplingParams{.greedy = true}, sampledParams(3), sampledParams(4)}) {
      const auto result = generate(model, prompt, 16, params);
      ASSERT_EQ(result.ids.size(), 16u) << v.name;
      std::string detail;
      // A sampled token may differ where a draw lands within float rounding of a boundary: rare.
      EXPECT_LE(disagreements(weights, prompt, result.ids, params, &detail), params.greedy ? 0 : 1) << v.name << detail;
      // Same seed, same tokens.
      EXPECT_EQ(generate(model, prompt, 16, params).ids, result.ids) << v.name;
    }
  }
  EXPECT_GE(checked, 10) << "the variant list lost its recordable models";
}

TEST(CudaRecordedDecode, TheCacheRowsTheGraphWroteGiveTheCpusLogits) {
  REQUIRE_CUDA(cuda);
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    if (!config.causal) continue;
    const Weights weights = randomWeights(config, 32);
    Transformer model(weights, *cuda);
    if (!model.canRecordSteps()) continue;  // MoE, attention variants, encoder-decoders: decodeRecorded refuses them
    KVCache cache(*cuda, config, 20);
    std::vector<float> logits;
    const auto prompt = sequence(5, config.vocab_size, 2);
    model.forward(prompt, cache, logits, false);
    Rng rng(9);
    const int first = sampleNext(logits, sampledParams(9), rng);
    const auto decoded = model.decodeRecorded(cache, first, 10, sampledParams(9), rng);
    ASSERT_EQ(decoded.size(), 10u) << v.name;
    ASSERT_EQ(cache.length(), 15) << v.name;
    // One plain forward after the recorded steps reads every cached row.
    const int next[1] = {decoded.back()};
    model.forward(next, cache, logits, false);
    std::vector<int> generated = {first};
    generated.insert(generated.end(), decoded.begin(), decoded.end());
    const auto cpu = cpuLogits(weights, prompt, generated);
    const auto d = compare(logits.data(), cpu.data() + (size_t)15 * config.vocab_size, config.vocab_size);
    EXPECT_LT(d.relative(), 1e-4) << v.name << ": " << d.describe();
  }
}

TEST(CudaRecordedDecode, Gpt2WidthsDecodeLongAndStopAtTheStopToken) {
  REQUIRE_CUDA(cuda);
  const ModelConfig config = smallConfig(2, 12, 768, 50257, 1024);  // GPT-2 124M widths, 2 layers
  const Weights weights = randomWeights(config, 33);
  Transformer model(weights, *cuda);
  ASSERT_TRUE(model.canRecordSteps());
  const auto prompt = sequence(40, config.vocab_size, 6);
  const auto result = generate(model, prompt, 200, sampledParams(12));
  ASSERT_EQ(result.ids.size(), 200u);
  std::string detail;
  EXPECT_LE(disagreements(weights, prompt, result.ids, sampledParams(12), &detail), 1) << detail;
  const int stop = result.ids[50];
  const auto stopped = generate(model, prompt, 200, sampledParams(12), stop);
  const auto at = std::find(result.ids.begin(), result.ids.end(), stop) - result.ids.begin();
  EXPECT_EQ(stopped.ids.size(), static_cast<size_t>(at + 1));
  EXPECT_EQ(stopped.ids.back(), stop);
}

// What the first GPU lease must answer: GPT-2 124M's shape (12 layers) decoding 256 greedy tokens
// by graph replay, each the CPU's argmax by teacher forcing over the whole 296-token sequence.
TEST(CudaRecordedDecode, Gpt2Decodes256GreedyTokensAsTheCpuDoes) {
  REQUIRE_CUDA(cuda);
  const ModelConfig config = smallConfig(12, 12, 768, 50257, 1024);
  const Weights weights = randomWeights(config, 34);
  Transformer model(weights, *cuda);
  ASSERT_TRUE(model.canRecordSteps());
  const auto prompt = sequence(40, config.vocab_size, 7);
  const SamplingParams greedy{.greedy = true};
  const auto result = generate(model, prompt, 256, greedy);
  ASSERT_EQ(result.ids.size(), 256u);
  EXPECT_GE(result.decodeSteps, 250);
  std::string detail;
  EXPECT_EQ(disagreements(weights, prompt, result.ids, greedy, &detail), 0) << detail;
}

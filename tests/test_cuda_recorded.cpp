// Recorded decode steps on the GPU (CUDA graphs) beyond the cases every device runs
// (tests/test_device_recorded.cpp: every dense variant's tokens, the stop token, a Generation in
// pieces): the cache rows the graph wrote, checked through one more plain forward against the
// CPU's logits, and GPT-2 124M's widths decoding long, checked against the CPU by teacher forcing
// (the CPU runs the prompt plus the tokens the GPU produced; at every step the GPU's token must be
// the CPU's choice: greedy, an argmax up to fp32 noise; sampled, the CPU's sampleNext with the same
// rng stream). Skipped (reported as such) without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/select/backend_select.h"
#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"
#include "tests/recording_backend.h"
#include "tests/test_cuda_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::architectureVariants;
using tscope::testing::compare;
using tscope::testing::disagreements;
using tscope::testing::logitsOn;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::smallConfig;
using tscope::testing::variantConfig;

namespace {

// The judge of the tokens the GPU produced: the CPU's backend, one thread.
std::unique_ptr<Backend> cpuJudge() { return makeCpuBackend(1); }

SamplingParams sampledParams(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.topK = 20;
  p.topP = 0.9f;
  p.seed = seed;
  return p;
}

}  // namespace

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
    const auto cpu = logitsOn(*cpuJudge(), weights, prompt, generated);
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
  EXPECT_LE(disagreements(*cpuJudge(), weights, prompt, result.ids, sampledParams(12), &detail), 1) << detail;
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
  EXPECT_EQ(disagreements(*cpuJudge(), weights, prompt, result.ids, greedy, &detail), 0) << detail;
}

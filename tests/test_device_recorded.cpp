// Recorded decode steps on every device: CUDA records real CUDA graphs; a host device runs through
// the RecordingBackend double (tests/recording_backend.h) around its own backend, which records the
// way CUDA does. generate() through it must give the tokens the reference would choose (teacher
// forcing) for every dense architecture variant, and on a host device exactly the tokens of the
// plain loop (forward + sampleNext) on its own backend; between replays the Transformer must issue
// no op of its own (the whole step is in the recording); a Generation continued in pieces, the stop
// token, bad arguments and MoE models (which decode through the plain loop) behave alike everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"
#include "tests/device_cases.h"
#include "tests/recording_backend.h"
#include "tests/test_helpers.h"

using namespace tscope;
using namespace tscope::testing;

namespace {

SamplingParams sampled(uint64_t seed, float temperature = 0.9f, int topK = 12, float topP = 0.95f) {
  SamplingParams p;
  p.temperature = temperature;
  p.topK = topK;
  p.topP = topP;
  p.seed = seed;
  return p;
}

// One run of every dense variant: the host copy's (weights 11, 12 tokens after 5) and the CUDA
// copy's (weights 31, 16 tokens after 6, other sampling knobs).
struct DecodeSetting {
  uint64_t weightSeed;
  int promptLength, promptSeed, tokens;
  std::vector<SamplingParams> params;
};

void recordedTokensAreThePlainLoopsAndTheReferencesChoice(Device& device, Device& reference) {
  const std::vector<DecodeSetting> settings = {
      {11, 5, 2, 12, {SamplingParams{.greedy = true}, sampled(7), sampled(8)}},
      {31, 6, 1, 16, {SamplingParams{.greedy = true}, sampled(3, 0.8f, 20, 0.9f), sampled(4, 0.8f, 20, 0.9f)}}};
  for (const auto& setting : settings) {
    int checked = 0, causal = 0;
    for (const auto& variant : architectureVariants()) {
      const ModelConfig config = variantConfig(variant);
      const Weights weights = randomWeights(config, setting.weightSeed);
      RecordingTarget target(device);
      Transformer recorded(weights, target.backend());
      // MoE routing and an attention variant run on the host: not recordable (MoE: checked below).
      const bool recordable = !config.isMoe() && !config.hasVariantAttention();
      EXPECT_EQ(recorded.canRecordSteps(), recordable) << variant.name;
      if (!recordable) continue;
      ++checked;
      const auto prompt = sequence(setting.promptLength, config.vocab_size, setting.promptSeed);
      for (const SamplingParams& params : setting.params) {
        RecordingBackend* double_ = target.testDouble();
        const int replaysBefore = double_ ? double_->replays : 0;
        const auto got = generate(recorded, prompt, setting.tokens, params);
        ASSERT_EQ(got.ids.size(), static_cast<size_t>(setting.tokens)) << variant.name;
        if (double_) {  // the plain loop on the same arithmetic
          Transformer plain(weights, device.forward());
          ASSERT_FALSE(plain.canRecordSteps());
          EXPECT_EQ(got.ids, generate(plain, prompt, setting.tokens, params).ids) << variant.name << " seed " << params.seed;
          // First token from the prefill's logits, then replays (after one unrecorded step when the
          // step is recorded anew: the new cache may sit where the last one did, and then it is not).
          EXPECT_GE(double_->replays - replaysBefore, 10) << variant.name;
        }
        // A bidirectional model cannot be checked by teacher forcing (each token sees the later ones).
        if (config.causal) {
          std::string detail;
          // A sampled token may differ where a draw lands within float rounding of a boundary: rare.
          EXPECT_LE(disagreements(reference.forward(), weights, prompt, got.ids, params, &detail), params.greedy ? 0 : 1) << variant.name << detail;
        }
        EXPECT_EQ(generate(recorded, prompt, setting.tokens, params).ids, got.ids) << variant.name << ": same seed, same tokens";
      }
      if (config.causal) ++causal;
    }
    EXPECT_GE(checked, 12) << "the variant list lost its recordable models";
    EXPECT_GE(causal, 10) << "the variant list lost its causal recordable models";
  }
}

void theTransformerIssuesNothingBetweenReplaysAndRecordsOncePerSetting(Device& device, Device&) {
  RecordingTarget target(device);
  if (!target.testDouble()) GTEST_SKIP() << "counts the ops the recording test double runs directly; " << device.name() << " records for real";
  RecordingBackend& recording = *target.testDouble();
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 3);
  Transformer model(weights, recording);
  KVCache cache(recording, config, 20);
  std::vector<float> logits;
  const auto prompt = sequence(4, config.vocab_size, 1);
  model.forward(prompt, cache, logits, false);
  Rng rng(5);
  recording.directOps = 0;
  auto first = model.decodeRecorded(cache, 3, 6, sampled(5), rng);
  const int opsOfOneStep = recording.directOps;  // the unrecorded first step
  EXPECT_GT(opsOfOneStep, 5);
  EXPECT_EQ(recording.recordings, 1);
  EXPECT_EQ(first.size(), 6u);
  EXPECT_EQ(cache.length(), 10);
  // Same cache and setting: replays only, nothing run directly, no new recording.
  auto more = model.decodeRecorded(cache, first.back(), 5, sampled(5), rng);
  EXPECT_EQ(recording.directOps, opsOfOneStep);
  EXPECT_EQ(recording.recordings, 1);
  EXPECT_EQ(more.size(), 5u);
  // The cache is full after 5 more of its 20 rows... and decodeRecorded stops there.
  auto last = model.decodeRecorded(cache, more.back(), 50, sampled(5), rng);
  EXPECT_EQ(last.size(), 5u);
  EXPECT_EQ(cache.length(), 20);
  EXPECT_TRUE(model.decodeRecorded(cache, last.back(), 3, sampled(5), rng).empty());
  // Another model recording on the same backend replaces the recorded step: this one records again.
  {
    Transformer second(weights, recording);
    KVCache cache2(recording, config, 12);
    second.forward(prompt, cache2, logits, false);
    second.decodeRecorded(cache2, 3, 4, sampled(5), rng);
  }
  EXPECT_EQ(recording.recordings, 2);
  KVCache third(recording, config, 20);
  model.forward(prompt, third, logits, false);
  model.decodeRecorded(third, 3, 4, sampled(5), rng);
  EXPECT_EQ(recording.recordings, 3);
  // A new sampling setting records again.
  KVCache other(recording, config, 20);
  model.forward(prompt, other, logits, false);
  model.decodeRecorded(other, 3, 4, SamplingParams{.greedy = true}, rng);
  EXPECT_EQ(recording.recordings, 4);
}

// The app's Step: a Generation continued one token (or a few) at a time through recorded steps
// draws the tokens of one generate() run, and stops at the context like it.
void aGenerationContinuedInPiecesDrawsTheTokensOfOneRun(Device& device, Device&) {
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 12);
  RecordingTarget target(device);
  Transformer model(weights, target.backend());
  ASSERT_TRUE(model.canRecordSteps());
  const auto prompt = sequence(4, config.vocab_size, 3);
  for (const SamplingParams& params : {SamplingParams{.greedy = true}, sampled(3), sampled(4)}) {
    const auto once = generate(model, prompt, 10, params).ids;
    ASSERT_EQ(once.size(), 10u);
    Generation stepped(model, prompt, params);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(stepped.next(1), 1);
    EXPECT_EQ(stepped.ids(), once) << "seed " << params.seed;
    Generation pieces(model, prompt, params);
    EXPECT_EQ(pieces.next(1) + pieces.next(4) + pieces.next(5), 10);
    EXPECT_EQ(pieces.ids(), once) << "seed " << params.seed;
  }
  const int room = config.n_positions - 4;
  Generation filling(model, prompt, sampled(5));
  EXPECT_EQ(filling.next(room + 7), room);
  EXPECT_EQ(filling.stopped(), GenerationStop::ContextFull);
  EXPECT_EQ(filling.next(1), 0);
}

void stopsAtTheStopTokenAndRejectsBadArguments(Device& device, Device&) {
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 4);
  RecordingTarget target(device);
  Transformer model(weights, target.backend());
  const auto prompt = sequence(3, config.vocab_size, 0);
  const auto free = generate(model, prompt, 10, SamplingParams{.greedy = true});
  ASSERT_EQ(free.ids.size(), 10u);
  const int stop = free.ids[4];
  const auto stopped = generate(model, prompt, 10, SamplingParams{.greedy = true}, stop);
  ASSERT_FALSE(stopped.ids.empty());
  EXPECT_EQ(stopped.ids.back(), stop);
  EXPECT_LE(stopped.ids.size(), 5u);
  KVCache cache(target.backend(), config, 8);
  Rng rng(1);
  EXPECT_THROW(model.decodeRecorded(cache, config.vocab_size, 2, SamplingParams{}, rng), Error);
  SamplingParams bad;
  bad.temperature = 0;
  EXPECT_THROW(model.decodeRecorded(cache, 1, 2, bad, rng), Error);
}

void mixtureOfExpertsModelsDecodeThroughThePlainLoop(Device& device, Device&) {
  for (const auto& variant : architectureVariants()) {
    const ModelConfig config = variantConfig(variant);
    if (!config.isMoe()) continue;
    const Weights weights = randomWeights(config, 6);
    RecordingTarget target(device);
    Transformer moe(weights, target.backend());
    EXPECT_FALSE(moe.canRecordSteps()) << variant.name;
    const uint64_t recordingsBefore = target.backend().recordingCount();
    const auto prompt = sequence(4, config.vocab_size, 3);
    const auto got = generate(moe, prompt, 6, sampled(2)).ids;
    EXPECT_EQ(target.backend().recordingCount(), recordingsBefore) << variant.name << ": nothing recorded";
    if (RecordingBackend* double_ = target.testDouble()) {
      Transformer plain(weights, device.forward());
      EXPECT_EQ(got, generate(plain, prompt, 6, sampled(2)).ids) << variant.name;
      EXPECT_EQ(double_->replays, 0);
    }
    return;
  }
  FAIL() << "no MoE variant in the grid";
}

}  // namespace

std::vector<DeviceCase> tscope::testing::recordedCases() {
  return {
      {"RecordedTokensAreThePlainLoopsAndTheReferencesChoice", recordedTokensAreThePlainLoopsAndTheReferencesChoice},
      {"RecordedTheTransformerIssuesNothingBetweenReplaysAndRecordsOncePerSetting",
       theTransformerIssuesNothingBetweenReplaysAndRecordsOncePerSetting},
      {"RecordedAGenerationContinuedInPiecesDrawsTheTokensOfOneRun", aGenerationContinuedInPiecesDrawsTheTokensOfOneRun},
      {"RecordedStopsAtTheStopTokenAndRejectsBadArguments", stopsAtTheStopTokenAndRejectsBadArguments},
      {"RecordedMixtureOfExpertsModelsDecodeThroughThePlainLoop", mixtureOfExpertsModelsDecodeThroughThePlainLoop},
  };
}

// Recorded decode steps (the CUDA graph path of generate()) checked on the CPU: a test backend
// wraps the reference backend and implements the recording contract of model/nn/backend.h the way
// CUDA does: ops issued while recording are stored, not run; the step's token, position and rng
// live in the backend (not in the ops' arguments); host arguments, downloads and allocation are
// refused while recording. generate() through it must give exactly the tokens of the plain loop
// (forward + sampleNext), for every dense architecture variant, and between replays the
// Transformer must issue no op of its own (the whole step is in the recording).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::architectureVariants;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::variantConfig;

namespace {

class RecordingBackend : public Backend {
 public:
  RecordingBackend() : inner_(makeReferenceBackend()) {}
  std::string name() const override { return "recording-test"; }
  bool isHost() const override { return false; }  // the Transformer copies its weights, as for CUDA

  int recordings = 0;     // endRecording() calls
  int replays = 0;        // replayStep() calls
  int directOps = 0;      // ops run at once (not recorded)

  Buffer allocate(size_t count) override {
    refuseWhileRecording("allocate");
    Buffer inner = inner_->allocate(count);
    float* data = inner.data();
    owned_.push_back(std::move(inner));
    return Buffer(this, data, count);
  }
  void release(float* data) override {
    for (auto& b : owned_)
      if (b.data() == data) b = Buffer();
  }
  void upload(float* dst, const float* src, size_t n) override {
    refuseWhileRecording("upload");
    inner_->upload(dst, src, n);
  }
  void download(float* dst, const float* src, size_t n) override {
    refuseWhileRecording("download");
    inner_->download(dst, src, n);
  }
  void copy(float* dst, const float* src, size_t n) override {
    run([=, this] { inner_->copy(dst, src, n); });
  }

  void embed(float* out, const int* hostTokens, const float* wte, const float* positions, int T, int C, int pos0) override {
    refuseWhileRecording("embed with host tokens");
    ++directOps;
    inner_->embed(out, hostTokens, wte, positions, T, C, pos0);
  }
  void layerNorm(float* out, const float* in, const float* w, const float* b, int T, int C, float eps) override {
    run([=, this] { inner_->layerNorm(out, in, w, b, T, C, eps); });
  }
  void rmsNorm(float* out, const float* in, const float* w, int T, int C, float eps) override {
    run([=, this] { inner_->rmsNorm(out, in, w, T, C, eps); });
  }
  void matmul(float* out, const float* in, const float* w, const float* b, int T, int K, int N) override {
    run([=, this] { inner_->matmul(out, in, w, b, T, K, N); });
  }
  void matmulTransposed(float* out, const float* in, const float* w, int T, int K, int N) override {
    run([=, this] { inner_->matmulTransposed(out, in, w, T, K, N); });
  }
  void activate(float* x, size_t n, Activation a) override {
    run([=, this] { inner_->activate(x, n, a); });
  }
  void swiglu(float* value, const float* gate, size_t n) override {
    run([=, this] { inner_->swiglu(value, gate, n); });
  }
  void add(float* x, const float* y, size_t n) override {
    run([=, this] { inner_->add(x, y, n); });
  }
  void zero(float* x, size_t n) override {
    run([=, this] { inner_->zero(x, n); });
  }
  void gatherRows(float* out, const float* in, const int* rows, int n, int C) override {
    refuseWhileRecording("gatherRows with host rows");
    ++directOps;
    inner_->gatherRows(out, in, rows, n, C);
  }
  void scatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C) override {
    refuseWhileRecording("scatterAddRows with host rows");
    ++directOps;
    inner_->scatterAddRows(out, in, rows, weights, n, C);
  }
  void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& shape) override {
    if (shape.stepPosition) {
      EXPECT_EQ(shape.T, 1);
      EXPECT_EQ(probs, nullptr);
      // The position is read when the op runs, from the step state.
      run([=, this] {
        AttentionShape s = shape;
        s.stepPosition = false;
        s.pos0 = position_;
        inner_->attention(out, probs, scores, qkv, kCache, vCache, s);
      });
      return;
    }
    refuseWhileRecording("attention at a host position");
    ++directOps;
    inner_->attention(out, probs, scores, qkv, kCache, vCache, shape);
  }

  bool canRecordSteps() const override { return true; }
  void beginRecording() override {
    ASSERT_FALSE(recording_);
    recorded_.clear();
    recording_ = true;
  }
  void endRecording() override {
    recording_ = false;
    ++recordings;
  }
  uint64_t recordingCount() const override { return recordings; }
  void setStep(int token, int position, const Rng& rng) override {
    refuseWhileRecording("setStep");
    token_ = token;
    position_ = position;
    rng_ = rng;
  }
  int replayStep(Rng* rng) override {
    ++replays;
    for (auto& op : recorded_) op();
    return stepResult(rng);
  }
  int stepResult(Rng* rng) override {
    if (rng) *rng = rng_;
    return token_;
  }
  void embedStep(float* out, const float* wte, const float* positions, int C) override {
    run([=, this] {
      const int token = token_;
      inner_->embed(out, &token, wte, positions, 1, C, position_);
    });
  }
  void sampleStep(const float* logits, int V, const SamplingParams& params) override {
    run([=, this] {
      token_ = inner_->sampleToken(logits, V, params, rng_);
      position_ += 1;
    });
  }

 private:
  void refuseWhileRecording(const char* what) {
    if (recording_) throw Error(std::string(what) + " while recording a decode step");
  }
  void run(std::function<void()> op) {
    if (recording_) {
      recorded_.push_back(std::move(op));
    } else {
      ++directOps;
      op();
    }
  }

  std::unique_ptr<Backend> inner_;
  std::vector<Buffer> owned_;
  bool recording_ = false;
  std::vector<std::function<void()>> recorded_;
  int token_ = 0, position_ = 0;
  Rng rng_;
};

SamplingParams sampled(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.topK = 12;
  p.topP = 0.95f;
  p.seed = seed;
  return p;
}

}  // namespace

TEST(RecordedSteps, GenerateGivesThePlainLoopsTokensForEveryDenseVariant) {
  int checked = 0;
  for (const auto& variant : architectureVariants()) {
    const ModelConfig config = variantConfig(variant);
    if (config.isMoe()) continue;  // MoE routing runs on the host: not recordable (checked below)
    const Weights weights = randomWeights(config, 11);
    auto reference = makeReferenceBackend();
    RecordingBackend recording;
    if (config.hasVariantAttention()) {  // the variant runs on the host too: not recordable
      EXPECT_FALSE(Transformer(weights, recording).canRecordSteps()) << variant.name;
      continue;
    }
    Transformer plain(weights, *reference), recorded(weights, recording);
    ASSERT_FALSE(plain.canRecordSteps());
    ASSERT_TRUE(recorded.canRecordSteps()) << variant.name;
    const auto prompt = sequence(5, config.vocab_size, 2);
    for (const SamplingParams& params : {SamplingParams{.greedy = true}, sampled(7), sampled(8)}) {
      const auto expected = generate(plain, prompt, 12, params);
      const int replaysBefore = recording.replays;
      const auto got = generate(recorded, prompt, 12, params);
      EXPECT_EQ(got.ids, expected.ids) << variant.name << " seed " << params.seed;
      // First token from the prefill's logits, then replays (after one unrecorded step when the
      // step is recorded anew: the new cache may sit where the last one did, and then it is not).
      EXPECT_GE(recording.replays - replaysBefore, 10) << variant.name;
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

TEST(RecordedSteps, TheTransformerIssuesNothingBetweenReplaysAndRecordsOncePerSetting) {
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 3);
  RecordingBackend recording;
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
TEST(RecordedSteps, AGenerationContinuedInPiecesDrawsTheTokensOfOneRun) {
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 12);
  RecordingBackend recording;
  Transformer model(weights, recording);
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

TEST(RecordedSteps, StopsAtTheStopTokenAndRejectsBadArguments) {
  const ModelConfig config = variantConfig(architectureVariants().front());
  const Weights weights = randomWeights(config, 4);
  RecordingBackend recording;
  Transformer model(weights, recording);
  const auto prompt = sequence(3, config.vocab_size, 0);
  const auto free = generate(model, prompt, 10, SamplingParams{.greedy = true});
  ASSERT_EQ(free.ids.size(), 10u);
  const int stop = free.ids[4];
  const auto stopped = generate(model, prompt, 10, SamplingParams{.greedy = true}, stop);
  ASSERT_FALSE(stopped.ids.empty());
  EXPECT_EQ(stopped.ids.back(), stop);
  EXPECT_LE(stopped.ids.size(), 5u);
  KVCache cache(recording, config, 8);
  Rng rng(1);
  EXPECT_THROW(model.decodeRecorded(cache, config.vocab_size, 2, SamplingParams{}, rng), Error);
  SamplingParams bad;
  bad.temperature = 0;
  EXPECT_THROW(model.decodeRecorded(cache, 1, 2, bad, rng), Error);
}

TEST(RecordedSteps, MixtureOfExpertsModelsDecodeThroughThePlainLoop) {
  for (const auto& variant : architectureVariants()) {
    const ModelConfig config = variantConfig(variant);
    if (!config.isMoe()) continue;
    const Weights weights = randomWeights(config, 6);
    RecordingBackend recording;
    auto reference = makeReferenceBackend();
    Transformer moe(weights, recording), plain(weights, *reference);
    EXPECT_FALSE(moe.canRecordSteps()) << variant.name;
    const auto prompt = sequence(4, config.vocab_size, 3);
    EXPECT_EQ(generate(moe, prompt, 6, sampled(2)).ids, generate(plain, prompt, 6, sampled(2)).ids) << variant.name;
    EXPECT_EQ(recording.replays, 0);
    return;
  }
  FAIL() << "no MoE variant in the grid";
}

// Recorded decode steps (the CUDA graph path of generate()) for every device. RecordingBackend is a
// test double that wraps a host backend and implements the recording contract of
// model/nn/backend.h the way CUDA does: ops issued while recording are stored, not run; the step's
// token, position and rng live in the backend (not in the ops' arguments); host arguments,
// downloads and allocation are refused while recording. RecordingTarget gives a device's recording
// backend (CUDA's own, or the double around a host device's); disagreements() checks generated
// tokens against another backend by teacher forcing.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/generate/sampling.h"
#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "model/train/device.h"

namespace tscope::testing {

class RecordingBackend : public Backend {
 public:
  explicit RecordingBackend(Backend& inner) : inner_(&inner) {}
  std::string name() const override { return "recording-test"; }
  bool isHost() const override { return false; }  // the Transformer copies its weights, as for CUDA

  int recordings = 0;  // endRecording() calls
  int replays = 0;     // replayStep() calls
  int directOps = 0;   // ops run at once (not recorded)

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

  Backend* inner_;  // not owned
  std::vector<Buffer> owned_;
  bool recording_ = false;
  std::vector<std::function<void()>> recorded_;
  int token_ = 0, position_ = 0;
  Rng rng_;
};

// `judge`'s logits (T, V) at every position of prompt + generated.
inline std::vector<float> logitsOn(Backend& judge, const Weights& weights, const std::vector<int>& prompt, const std::vector<int>& generated) {
  Transformer model(weights, judge);
  std::vector<int> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  return model.logitsFor(all);
}

// How many generated tokens `judge` would not have chosen (teacher forcing: it runs the prompt plus
// the generated tokens), replaying the same rng stream: greedy, an argmax up to fp32 noise; sampled,
// its sampleNext with the same rng stream, which both advance identically.
inline int disagreements(Backend& judge, const Weights& weights, const std::vector<int>& prompt, const std::vector<int>& generated,
                         const SamplingParams& params, std::string* detail) {
  const int V = weights.config().vocab_size, P = static_cast<int>(prompt.size());
  const auto logits = logitsOn(judge, weights, prompt, generated);
  Rng rng(params.seed);
  int wrong = 0;
  for (size_t i = 0; i < generated.size(); ++i) {
    const std::span<const float> row(logits.data() + (size_t)(P - 1 + i) * V, V);
    if (params.greedy) {
      // An argmax up to fp32 noise: within 1e-4 of the judge's maximum logit.
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
        *detail += " step " + std::to_string(i) + ": " + std::to_string(generated[i]) + " vs judge " + std::to_string(expected) + ";";
      }
    }
  }
  return wrong;
}

// The backend a recorded-decode case runs on: CUDA records for real; a host device's backend is
// wrapped in the RecordingBackend double, which records as CUDA does.
class RecordingTarget {
 public:
  explicit RecordingTarget(Device& device) {
    if (device.forward().canRecordSteps()) {
      backend_ = &device.forward();
    } else {
      double_ = std::make_unique<RecordingBackend>(device.forward());
      backend_ = double_.get();
    }
  }
  Backend& backend() { return *backend_; }
  RecordingBackend* testDouble() { return double_.get(); }  // null on CUDA

 private:
  Backend* backend_ = nullptr;
  std::unique_ptr<RecordingBackend> double_;
};

}  // namespace tscope::testing

// The forward pass: the Eigen fast path against the plain-loop reference (op by op and whole
// model, several shapes), KV-cache equivalence, and the trace's own consistency.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "model/nn/backend.h"
#include "model/core/error.h"
#include "model/nn/ops_reference.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::smallConfig;

namespace {

std::vector<int> randomIds(int T, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> ids(T);
  for (auto& id : ids) id = static_cast<int>(rng.next() % V);
  return ids;
}

std::vector<float> randomVector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return v;
}

}  // namespace

TEST(CpuOps, MatmulMatchesReferenceForSingleAndManyRows) {
  auto cpu = makeCpuBackend(2);
  for (int T : {1, 3, 17}) {
    const int K = 96, N = 200;
    auto in = randomVector((size_t)T * K, 1), w = randomVector((size_t)K * N, 2), b = randomVector(N, 3);
    std::vector<float> fast((size_t)T * N), ref((size_t)T * N);
    cpu->matmul(fast.data(), in.data(), w.data(), b.data(), T, K, N);
    ref::matmul(ref.data(), in.data(), w.data(), b.data(), T, K, N);
    auto d = compare(fast, ref);
    EXPECT_LT(d.relative(), 1e-5) << "matmul T=" << T << ": " << d.describe();
    cpu->matmulTransposed(fast.data(), in.data(), w.data(), T, K, N);  // w read as (N, K)
    ref::matmulTransposed(ref.data(), in.data(), w.data(), T, K, N);
    d = compare(fast, ref);
    EXPECT_LT(d.relative(), 1e-5) << "matmulTransposed T=" << T << ": " << d.describe();
  }
}

TEST(CpuOps, LayerNormGeluMatchReference) {
  auto cpu = makeCpuBackend(2);
  const int T = 5, C = 64;
  auto in = randomVector(T * C, 4, 3.0), w = randomVector(C, 5), b = randomVector(C, 6);
  std::vector<float> fast(T * C), ref(T * C);
  cpu->layerNorm(fast.data(), in.data(), w.data(), b.data(), T, C, 1e-5f);
  ref::layerNorm(ref.data(), in.data(), w.data(), b.data(), T, C, 1e-5f);
  auto d = compare(fast, ref);
  EXPECT_LT(d.maxAbs, 1e-5) << "layerNorm: " << d.describe();
  for (Activation a : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu}) {
    auto x = randomVector(1000, 7, 6.0), y = x;
    cpu->activate(x.data(), x.size(), a);
    ref::activate(y.data(), y.size(), a);
    d = compare(x, y);
    EXPECT_LT(d.maxAbs, 2e-6 * 6) << toString(a) << ": " << d.describe();
  }
  EXPECT_NEAR(ref::geluErf(1.0f), 0.841345f, 1e-5);   // 0.5 (1 + erf(1/sqrt 2))
  EXPECT_NEAR(ref::geluTanh(1.0f), 0.841192f, 1e-5);  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
}

TEST(CpuOps, AttentionMatchesReferenceIncludingCacheOffset) {
  auto cpu = makeCpuBackend(2);
  const int H = 3, D = 8, C = H * D, rows = 16;
  for (int pos0 : {0, 5}) {
    const int T = 4;
    AttentionShape s{T, pos0, H, D, rows};
    auto qkv = randomVector((size_t)T * 3 * C, 8 + pos0, 2.0);
    auto kInit = randomVector((size_t)rows * C, 9), vInit = randomVector((size_t)rows * C, 10);
    auto kFast = kInit, vFast = vInit, kRef = kInit, vRef = vInit;
    std::vector<float> outFast(T * C), outRef(T * C), pFast(H * T * s.keys()), pRef(pFast.size()), sFast(pFast.size()), sRef(pFast.size());
    cpu->attention(outFast.data(), pFast.data(), sFast.data(), qkv.data(), kFast.data(), vFast.data(), s);
    ref::attention(outRef.data(), pRef.data(), sRef.data(), qkv.data(), kRef.data(), vRef.data(), s);
    auto d = compare(outFast, outRef);
    EXPECT_LT(d.maxAbs, 1e-5) << "attention out, pos0=" << pos0 << ": " << d.describe();
    d = compare(pFast, pRef);
    EXPECT_LT(d.maxAbs, 1e-5) << "attention probs: " << d.describe();
    d = compare(sFast, sRef);
    EXPECT_LT(d.maxAbs, 1e-4) << "attention scores: " << d.describe();
    EXPECT_EQ(kFast, kRef);
    // Causal: query t sees keys up to pos0 + t only.
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < s.keys(); ++j) {
          const size_t at = ((size_t)h * T + t) * s.keys() + j;
          if (j > pos0 + t) {
            EXPECT_EQ(pRef[at], 0.0f);
            EXPECT_TRUE(std::isinf(sFast[at]) && sFast[at] < 0);
          }
        }
  }
}

class WholeModel : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(WholeModel, EigenMatchesReference) {
  const auto [L, H, C, T] = GetParam();
  const ModelConfig config = smallConfig(L, H, C, 97, 64);
  Weights weights = randomWeights(config, 42 + L + C);
  auto refBackend = makeReferenceBackend();
  auto cpuBackend = makeCpuBackend(2);
  Transformer refModel(weights, *refBackend), cpuModel(weights, *cpuBackend);
  const auto ids = randomIds(T, config.vocab_size, 7);
  Trace refTrace, cpuTrace;
  auto refLogits = refModel.logitsFor(ids, &refTrace);
  auto cpuLogits = cpuModel.logitsFor(ids, &cpuTrace);
  ASSERT_EQ(refLogits.size(), (size_t)T * config.vocab_size);
  auto d = compare(cpuLogits, refLogits);
  EXPECT_LT(d.relative(), 1e-4) << "logits L=" << L << " H=" << H << " C=" << C << " T=" << T << ": " << d.describe();
  d = compare(cpuTrace.attn, refTrace.attn);
  EXPECT_LT(d.maxAbs, 1e-4) << "attention maps: " << d.describe();
  d = compare(cpuTrace.residAfterMlp, refTrace.residAfterMlp);
  EXPECT_LT(d.relative(), 1e-4) << "residuals: " << d.describe();
  EXPECT_EQ(cpuTrace.lensIds, refTrace.lensIds);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WholeModel,
                         ::testing::Values(std::make_tuple(1, 1, 16, 1), std::make_tuple(2, 4, 32, 9), std::make_tuple(3, 2, 48, 20),
                                           std::make_tuple(2, 8, 64, 33)));

TEST(KvCache, IncrementalDecodingGivesTheSameLogitsAsAFullForward) {
  const ModelConfig config = smallConfig(2, 4, 32, 50, 40);
  Weights weights = randomWeights(config, 3);
  for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(2); }}) {
    auto backend = makeBackend();
    Transformer model(weights, *backend);
    const auto ids = randomIds(12, config.vocab_size, 11);
    const auto full = model.logitsFor(ids);
    KVCache cache(*backend, config);
    std::vector<float> step;
    // A 5-token prefill, then one token at a time, then a 3-token chunk.
    model.forward(std::span(ids).subspan(0, 5), cache, step, true);
    auto d = compare(step.data(), full.data(), step.size());
    EXPECT_LT(d.relative(), 1e-5) << backend->name() << " prefill: " << d.describe();
    for (int t = 5; t < 9; ++t) {
      model.forward(std::span(ids).subspan(t, 1), cache, step, false);
      d = compare(step.data(), full.data() + (size_t)t * config.vocab_size, config.vocab_size);
      EXPECT_LT(d.relative(), 1e-5) << backend->name() << " decode t=" << t << ": " << d.describe();
    }
    model.forward(std::span(ids).subspan(9, 3), cache, step, true);
    d = compare(step.data(), full.data() + (size_t)9 * config.vocab_size, step.size());
    EXPECT_LT(d.relative(), 1e-5) << backend->name() << " chunk: " << d.describe();
    EXPECT_EQ(cache.length(), 12);
    EXPECT_EQ(cache.bytesUsed(), (size_t)2 * 4 * 2 * 12 * 32);  // 2 (K,V) x 4 bytes x L x T x C
  }
}

// A big vocabulary: the logits buffer holds at most 64 MiB of rows (55 of 300000 tokens), so a
// 70-token prompt's every-position logits and logit lens come through the unembedding in chunks;
// each row must be the last row of a forward over that prefix alone (bit for bit on the reference).
TEST(Transformer, EveryPositionLogitsOfABigVocabularyComeInChunks) {
  const ModelConfig config = smallConfig(1, 2, 8, 300000, 80);
  Weights weights = randomWeights(config, 5);
  auto backend = makeReferenceBackend();
  Transformer model(weights, *backend);
  const auto ids = randomIds(70, config.vocab_size, 3);
  KVCache cache(*backend, config);
  std::vector<float> all;
  Trace trace;
  TraceOptions options;
  options.attention = options.residuals = false;
  options.logitLensTopK = 2;  // every position: 70 lens rows before the 70 final rows
  model.forward(ids, cache, all, true, &trace, options);
  ASSERT_EQ(all.size(), ids.size() * config.vocab_size);
  for (int t : {0, 30, 54, 55, 56, 69}) {
    KVCache prefixCache(*backend, config);
    std::vector<float> last;
    model.forward(std::span(ids).subspan(0, t + 1), prefixCache, last, false);
    ASSERT_EQ(last.size(), (size_t)config.vocab_size);
    EXPECT_TRUE(std::equal(last.begin(), last.end(), all.begin() + (size_t)t * config.vocab_size)) << "position " << t;
    // The lens of the only layer at t is the top of the final logits there (no final norm between:
    // the lens applies ln_f as the final rows do).
    const int top = static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());
    EXPECT_EQ(trace.lensIds[(size_t)t * trace.lensK], top) << "position " << t;
  }
}

TEST(KvCache, CopyAndTruncateKeepStateExact) {
  const ModelConfig config = smallConfig(2, 2, 16, 30, 20);
  Weights weights = randomWeights(config, 5);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  const auto ids = randomIds(6, config.vocab_size, 1);
  KVCache a(*backend, config), b(*backend, config);
  std::vector<float> la, lb;
  model.forward(std::span(ids).subspan(0, 4), a, la, false);
  b.copyFrom(a);
  model.forward(std::span(ids).subspan(4, 2), a, la, false);
  model.forward(std::span(ids).subspan(4, 2), b, lb, false);
  EXPECT_EQ(la, lb);
  a.truncate(4);
  model.forward(std::span(ids).subspan(4, 2), a, la, false);
  EXPECT_EQ(la, lb);
}

TEST(Forward, RejectsOverflowAndBadIds) {
  const ModelConfig config = smallConfig(1, 1, 8, 10, 4);
  Weights weights = randomWeights(config, 1);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  KVCache cache(*backend, config);
  std::vector<float> logits;
  const std::vector<int> five = {1, 2, 3, 4, 5}, bad = {1, 10};
  EXPECT_THROW(model.forward(five, cache, logits, false), Error);
  EXPECT_THROW(model.forward(bad, cache, logits, false), Error);
  EXPECT_EQ(cache.length(), 0);
}

TEST(Trace, IsConsistentWithItself) {
  const ModelConfig config = smallConfig(3, 2, 32, 64, 32);
  Weights weights = randomWeights(config, 9);
  auto backend = makeCpuBackend(2);
  Transformer model(weights, *backend);
  const auto ids = randomIds(10, config.vocab_size, 2);
  Trace trace;
  TraceOptions options;
  options.logitLensTopK = 3;
  const auto logits = model.logitsFor(ids, &trace, options);
  ASSERT_EQ(trace.layers, (std::vector<int>{0, 1, 2}));
  // Every attention row is a distribution over the visible keys.
  for (size_t li = 0; li < 3; ++li)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 10; ++t) {
        const float* row = trace.attnMap(li, h) + (size_t)t * trace.Tk;
        EXPECT_NEAR(std::accumulate(row, row + trace.Tk, 0.0), 1.0, 1e-5);
      }
  // The logit lens at the last layer is the model's own prediction.
  const int V = config.vocab_size, K = trace.lensK;
  for (int t = 0; t < 10; ++t) {
    const float* row = logits.data() + (size_t)t * V;
    const int best = static_cast<int>(std::max_element(row, row + V) - row);
    EXPECT_EQ(trace.lensIds[((size_t)2 * 10 + t) * K], best) << "position " << t;
  }
  // Residual norms: slot l+1 is the norm of the block-l output.
  double norm = 0;
  for (int c = 0; c < 32; ++c) norm += std::pow(trace.residAfterMlp[(size_t)(1 * 10 + 4) * 32 + c], 2);
  EXPECT_NEAR(trace.residNorm[(size_t)2 * 10 + 4], std::sqrt(norm), 1e-3);
}

TEST(Trace, SelectedLayersAndMemoryCap) {
  const ModelConfig config = smallConfig(4, 2, 16, 32, 32);
  Weights weights = randomWeights(config, 4);
  auto backend = makeCpuBackend(1);
  Transformer model(weights, *backend);
  const auto ids = randomIds(8, config.vocab_size, 3);
  Trace full, some, capped;
  const auto logitsFull = model.logitsFor(ids, &full);
  TraceOptions options;
  options.layers = {3, 1};
  model.logitsFor(ids, &some, options);
  EXPECT_EQ(some.layers, (std::vector<int>{1, 3}));
  const size_t mapFloats = (size_t)2 * 8 * 8;
  EXPECT_EQ(std::vector<float>(some.attn.begin() + mapFloats, some.attn.begin() + 2 * mapFloats),
            std::vector<float>(full.attn.begin() + 3 * mapFloats, full.attn.begin() + 4 * mapFloats));
  TraceOptions cap;
  cap.memoryCapBytes = 3000;  // room for one layer's maps and residuals, not two
  const auto logitsCapped = model.logitsFor(ids, &capped, cap);
  EXPECT_EQ(capped.layers.size(), 1u);
  EXPECT_TRUE(capped.truncated);
  EXPECT_NE(capped.note.find("memory cap"), std::string::npos);
  EXPECT_EQ(logitsCapped, logitsFull);  // capture never changes the numbers
}

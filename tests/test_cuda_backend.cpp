// The CUDA backend against the plain-loop reference: every op (normalised error: max |diff| /
// max |ref|), whole-model logits and traces against the CPU path for architecture variants, and
// KV-cache equivalence on the device. Compiled in every build; each Cuda* test asks makeBackend
// for "cuda" and reports SKIPPED (with the reason) when the build has no CUDA backend or the
// machine has no device. The BackendSelect tests check that choice itself and run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "model/select/backend_select.h"
#include "model/core/error.h"
#include "model/nn/ops_reference.h"
#include "model/nn/positional.h"
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

using tscope::testing::cudaOrNull;
using tscope::testing::randomValues;
using tscope::testing::toDevice;
using tscope::testing::toHost;

// ----- the choice of backend (runs everywhere) -------------------------------------------------

TEST(BackendSelect, NamesTheCpuBackendsAndRejectsUnknownNames) {
  std::string note = "stale";
  EXPECT_EQ(makeBackend("cpu", 1, &note)->name(), "cpu");
  EXPECT_EQ(note, "");
  EXPECT_EQ(makeBackend("reference", 0, &note)->name(), "reference");
  try {
    makeBackend("tpu", 0, &note);
    FAIL() << "an unknown backend name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown backend 'tpu' (expected cpu, reference, cuda or auto)");
  }
}

TEST(BackendSelect, AutoFallsBackToTheCpuWithANoteWhenCudaIsUnusable) {
  std::string note;
  auto backend = makeBackend("auto", 1, &note);
  ASSERT_FALSE(note.empty());
  std::string why;
  if (cudaOrNull(&why)) {
    EXPECT_EQ(backend->name(), "cuda");
    EXPECT_EQ(note.rfind("CUDA: ", 0), 0u) << note;
    return;
  }
  EXPECT_EQ(backend->name(), "cpu");
  if (buildHasCuda()) {
    EXPECT_EQ(note.rfind("CPU: no CUDA device (", 0), 0u) << note;
    EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
  } else {
    EXPECT_EQ(note, "CPU (no CUDA in this build)");
    EXPECT_EQ(why, "this build has no CUDA backend (the CUDA toolkit was not found at build time)");
  }
}

// Whether this process had libcublas mapped when its static objects were made: only if the binary
// links it, which it must not (loading it costs every process about half a second of CPU at start).
static bool mapsMention(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(library) != std::string::npos) return true;
  return false;
}
static const bool cublasMappedAtStart = mapsMention("libcublas");

TEST(BackendSelect, CublasIsOpenedOnFirstUseNotAtStart) {
  EXPECT_FALSE(cublasMappedAtStart) << "libcublas was loaded before main(): the binary links it";
  if (!buildHasCuda()) {
    EXPECT_EQ(cudaLibraryProblem(), "this build has no CUDA backend (the CUDA toolkit was not found at build time)");
    return;
  }
  // The toolkit was found at build time, so its cuBLAS opens here, GPU or not, with every entry point.
  EXPECT_EQ(cudaLibraryProblem(), "");
  EXPECT_TRUE(mapsMention("libcublas"));
}

// ----- memory and every op against the reference ---------------------------------------------

TEST(CudaBackend, MemoryIsZeroFilledAndRoundTrips) {
  REQUIRE_CUDA(cuda);
  EXPECT_EQ(cuda->name(), "cuda");
  EXPECT_FALSE(cuda->isHost());
  Buffer a = cuda->allocate(1000);
  const auto zeros = toHost(*cuda, a);
  EXPECT_EQ(zeros, std::vector<float>(1000, 0.0f)) << "allocate() must zero-fill";
  const auto values = randomValues(1000, 1);
  cuda->upload(a.data(), values.data(), values.size());
  Buffer b = cuda->allocate(1000);
  cuda->copy(b.data(), a.data(), 1000);
  cuda->zero(a.data(), 500);
  cuda->sync();
  EXPECT_EQ(toHost(*cuda, b), values) << "upload + copy + download changed the bits";
  const auto half = toHost(*cuda, a);
  EXPECT_EQ(std::vector<float>(half.begin(), half.begin() + 500), std::vector<float>(500, 0.0f));
  EXPECT_EQ(std::vector<float>(half.begin() + 500, half.end()), std::vector<float>(values.begin() + 500, values.end()));
  EXPECT_EQ(cuda->allocate(0).data(), nullptr);
}

TEST(CudaBackend, EmbeddingMatchesReference) {
  REQUIRE_CUDA(cuda);
  const int V = 37, C = 48, P = 20, T = 6, pos0 = 5;
  const auto wte = randomValues((size_t)V * C, 2), wpe = randomValues((size_t)P * C, 3);
  const std::vector<int> tokens = {0, 36, 5, 5, 17, 2};
  Buffer dWte = toDevice(*cuda, wte), dWpe = toDevice(*cuda, wpe), dOut = cuda->allocate((size_t)T * C);
  for (bool withPositions : {true, false}) {
    std::vector<float> expected((size_t)T * C);
    ref::embed(expected.data(), tokens.data(), wte.data(), withPositions ? wpe.data() : nullptr, T, C, pos0);
    cuda->embed(dOut.data(), tokens.data(), dWte.data(), withPositions ? dWpe.data() : nullptr, T, C, pos0);
    const auto d = compare(toHost(*cuda, dOut), expected);
    EXPECT_LT(d.relative(), 1e-6) << (withPositions ? "with" : "without") << " positions: " << d.describe();
  }
}

TEST(CudaBackend, LayerNormAndRmsNormMatchReference) {
  REQUIRE_CUDA(cuda);
  for (int C : {1, 32, 300, 768, 2000}) {
    const int T = 5;
    auto in = randomValues((size_t)T * C, 4, 3.0f);
    for (int c = 0; c < C; ++c) in[c] += 10.0f;  // a row with a large mean
    const auto weight = randomValues(C, 5), bias = randomValues(C, 6);
    Buffer dIn = toDevice(*cuda, in), dW = toDevice(*cuda, weight), dB = toDevice(*cuda, bias), dOut = cuda->allocate(in.size());
    std::vector<float> expected(in.size());
    for (bool withBias : {true, false}) {
      ref::layerNorm(expected.data(), in.data(), weight.data(), withBias ? bias.data() : nullptr, T, C, 1e-5f);
      cuda->layerNorm(dOut.data(), dIn.data(), dW.data(), withBias ? dB.data() : nullptr, T, C, 1e-5f);
      const auto d = compare(toHost(*cuda, dOut), expected);
      EXPECT_LT(d.relative(), 1e-5) << "LayerNorm C=" << C << " bias " << withBias << ": " << d.describe();
    }
    ref::rmsNorm(expected.data(), in.data(), weight.data(), T, C, 1e-6f);
    cuda->rmsNorm(dOut.data(), dIn.data(), dW.data(), T, C, 1e-6f);
    const auto d = compare(toHost(*cuda, dOut), expected);
    EXPECT_LT(d.relative(), 1e-5) << "RMSNorm C=" << C << ": " << d.describe();
  }
}

TEST(CudaBackend, MatmulAndMatmulTransposedMatchReference) {
  REQUIRE_CUDA(cuda);
  struct Shape {
    int T, K, N;
  };
  for (const Shape s : {Shape{1, 64, 96}, Shape{7, 33, 65}, Shape{128, 256, 200}, Shape{3, 768, 2304}}) {
    const auto in = randomValues((size_t)s.T * s.K, 7), weight = randomValues((size_t)s.K * s.N, 8), bias = randomValues(s.N, 9);
    Buffer dIn = toDevice(*cuda, in), dW = toDevice(*cuda, weight), dB = toDevice(*cuda, bias), dOut = cuda->allocate((size_t)s.T * s.N);
    std::vector<float> expected((size_t)s.T * s.N);
    for (bool withBias : {true, false}) {
      ref::matmul(expected.data(), in.data(), weight.data(), withBias ? bias.data() : nullptr, s.T, s.K, s.N);
      cuda->matmul(dOut.data(), dIn.data(), dW.data(), withBias ? dB.data() : nullptr, s.T, s.K, s.N);
      const auto d = compare(toHost(*cuda, dOut), expected);
      EXPECT_LT(d.relative(), 1e-5) << "matmul T=" << s.T << " K=" << s.K << " N=" << s.N << " bias " << withBias << ": " << d.describe();
    }
    // The same weight read as (N', K') = (K, N)^T's storage: weight is (N=s.K rows, K=s.N columns).
    const auto in2 = randomValues((size_t)s.T * s.N, 10);
    Buffer dIn2 = toDevice(*cuda, in2), dOut2 = cuda->allocate((size_t)s.T * s.K);
    std::vector<float> expected2((size_t)s.T * s.K);
    ref::matmulTransposed(expected2.data(), in2.data(), weight.data(), s.T, s.N, s.K);
    cuda->matmulTransposed(dOut2.data(), dIn2.data(), dW.data(), s.T, s.N, s.K);
    const auto d = compare(toHost(*cuda, dOut2), expected2);
    EXPECT_LT(d.relative(), 1e-5) << "matmulTransposed T=" << s.T << " K=" << s.N << " N=" << s.K << ": " << d.describe();
  }
}

TEST(CudaBackend, ElementwiseOpsMatchReference) {
  REQUIRE_CUDA(cuda);
  const size_t n = 100003;  // not a multiple of any block size
  const auto x = randomValues(n, 11, 6.0f), y = randomValues(n, 12, 6.0f);
  for (Activation a : {Activation::GeluTanh, Activation::GeluErf, Activation::Relu}) {
    std::vector<float> expected = x;
    ref::activate(expected.data(), n, a);
    Buffer dX = toDevice(*cuda, x);
    cuda->activate(dX.data(), n, a);
    const auto d = compare(toHost(*cuda, dX), expected);
    EXPECT_LT(d.relative(), 1e-5) << toString(a) << ": " << d.describe();
  }
  {
    std::vector<float> expected = x;
    ref::swiglu(expected.data(), y.data(), n);
    Buffer dX = toDevice(*cuda, x), dY = toDevice(*cuda, y);
    cuda->swiglu(dX.data(), dY.data(), n);
    const auto d = compare(toHost(*cuda, dX), expected);
    EXPECT_LT(d.relative(), 1e-5) << "swiglu: " << d.describe();
  }
  {
    std::vector<float> expected = x;
    ref::add(expected.data(), y.data(), n);
    Buffer dX = toDevice(*cuda, x), dY = toDevice(*cuda, y);
    cuda->add(dX.data(), dY.data(), n);
    const auto d = compare(toHost(*cuda, dX), expected);
    EXPECT_EQ(d.maxAbs, 0.0) << "add: " << d.describe();
  }
}

TEST(CudaBackend, GatherAndScatterAddRowsMatchReference) {
  REQUIRE_CUDA(cuda);
  const int rowsIn = 9, C = 70;
  const auto in = randomValues((size_t)rowsIn * C, 13), base = randomValues((size_t)rowsIn * C, 14);
  const std::vector<int> rows = {3, 0, 8, 3, 5};  // row 3 twice: both contributions must add up
  const std::vector<float> gates = {0.5f, -1.25f, 2.0f, 0.75f, 1.0f};
  const int n = static_cast<int>(rows.size());
  std::vector<float> gathered((size_t)n * C);
  ref::gatherRows(gathered.data(), in.data(), rows.data(), n, C);
  Buffer dIn = toDevice(*cuda, in), dGathered = cuda->allocate(gathered.size());
  cuda->gatherRows(dGathered.data(), dIn.data(), rows.data(), n, C);
  auto d = compare(toHost(*cuda, dGathered), gathered);
  EXPECT_EQ(d.maxAbs, 0.0) << "gatherRows: " << d.describe();
  std::vector<float> scattered = base;
  ref::scatterAddRows(scattered.data(), gathered.data(), rows.data(), gates.data(), n, C);
  Buffer dOut = toDevice(*cuda, base);
  cuda->scatterAddRows(dOut.data(), dGathered.data(), rows.data(), gates.data(), n, C);
  d = compare(toHost(*cuda, dOut), scattered);
  EXPECT_LT(d.relative(), 1e-6) << "scatterAddRows: " << d.describe();
}

// Every AttentionShape variant, with earlier rows already in the cache (pos0 > 0) and without.
TEST(CudaBackend, AttentionMatchesReferenceInEveryVariant) {
  REQUIRE_CUDA(cuda);
  struct Case {
    std::string name;
    std::function<void(AttentionShape&)> apply;
  };
  const std::vector<Case> cases = {
      {"causal", [](AttentionShape&) {}},
      {"bidirectional", [](AttentionShape& s) { s.causal = false; }},
      {"window3", [](AttentionShape& s) { s.window = 3; }},
      {"bidirectional_window2",
       [](AttentionShape& s) {
         s.causal = false;
         s.window = 2;
       }},
      {"gqa2", [](AttentionShape& s) { s.nKvHead = 2; }},
      {"mqa", [](AttentionShape& s) { s.nKvHead = 1; }},
      {"rope", [](AttentionShape& s) { s.ropeBase = 10000; }},
      {"rope_gqa2_window4",
       [](AttentionShape& s) {
         s.ropeBase = 500;
         s.nKvHead = 2;
         s.window = 4;
       }},
      {"rope_llama3_scaled",
       [](AttentionShape& s) {
         s.ropeBase = 100;
         s.ropeFrequencies = tscope::testing::scaledRopeTable();
       }},
      {"alibi", [](AttentionShape&) {}},  // slopes set below
      {"alibi_mqa_bidirectional",
       [](AttentionShape& s) {
         s.nKvHead = 1;
         s.causal = false;
       }},
  };
  const int H = 4, D = 16, cacheRows = 40;
  const std::vector<float> slopes = alibiSlopes(H);
  for (const auto& c : cases) {
    for (const auto& [T, pos0] : {std::pair{9, 0}, std::pair{1, 13}, std::pair{5, 20}}) {
      AttentionShape s{T, pos0, H, D, cacheRows};
      c.apply(s);
      if (c.name.starts_with("alibi")) s.alibiSlopes = slopes.data();
      const std::string label = c.name + " T=" + std::to_string(T) + " pos0=" + std::to_string(pos0);
      const int Tk = s.keys();
      const size_t mapFloats = (size_t)H * T * Tk, cacheFloats = (size_t)cacheRows * s.kvDim();
      const auto qkv = randomValues((size_t)T * s.qkvDim(), 15 + T);
      const auto kCache = randomValues(cacheFloats, 16), vCache = randomValues(cacheFloats, 17);  // rows < pos0: earlier tokens
      std::vector<float> refQkv = qkv, refK = kCache, refV = vCache, refOut((size_t)T * H * D), refProbs(mapFloats), refScores(mapFloats);
      ref::attention(refOut.data(), refProbs.data(), refScores.data(), refQkv.data(), refK.data(), refV.data(), s);
      for (bool capture : {true, false}) {
        Buffer dQkv = toDevice(*cuda, qkv), dK = toDevice(*cuda, kCache), dV = toDevice(*cuda, vCache);
        Buffer dOut = cuda->allocate(refOut.size()), dProbs = cuda->allocate(mapFloats), dScores = cuda->allocate(mapFloats);
        cuda->attention(dOut.data(), capture ? dProbs.data() : nullptr, capture ? dScores.data() : nullptr, dQkv.data(), dK.data(), dV.data(), s);
        auto d = compare(toHost(*cuda, dOut), refOut);
        EXPECT_LT(d.relative(), 1e-5) << label << " capture " << capture << " out: " << d.describe();
        d = compare(toHost(*cuda, dQkv), refQkv);
        EXPECT_LT(d.relative(), 1e-6) << label << " qkv after RoPE: " << d.describe();
        d = compare(toHost(*cuda, dK), refK);
        EXPECT_LT(d.relative(), 1e-6) << label << " key cache: " << d.describe();
        d = compare(toHost(*cuda, dV), refV);
        EXPECT_EQ(d.maxAbs, 0.0) << label << " value cache: " << d.describe();
        if (!capture) continue;
        d = compare(toHost(*cuda, dProbs), refProbs);
        EXPECT_LT(d.maxAbs, 1e-5) << label << " probabilities: " << d.describe();
        d = compare(toHost(*cuda, dScores), refScores);  // masked entries must be -inf in both
        EXPECT_LT(d.relative(), 1e-5) << label << " scores: " << d.describe();
      }
    }
  }
}

// ----- the whole model ---------------------------------------------------------------------------

TEST(CudaBackend, ModelLogitsAndTraceMatchCpuForArchitectureVariants) {
  REQUIRE_CUDA(cuda);
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    const Weights weights = randomWeights(config, 21);
    auto cpu = makeCpuBackend(1);
    Transformer cpuModel(weights, *cpu), cudaModel(weights, *cuda);
    const auto ids = sequence(11, config.vocab_size, 3);
    TraceOptions options;
    options.residuals = true;
    options.logitLensTopK = 3;
    Trace cpuTrace, cudaTrace;
    const auto cpuLogits = cpuModel.logitsFor(ids, &cpuTrace, options);
    const auto cudaLogits = cudaModel.logitsFor(ids, &cudaTrace, options);
    auto d = compare(cudaLogits, cpuLogits);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " logits: " << d.describe();
    d = compare(cudaTrace.attn, cpuTrace.attn);
    EXPECT_LT(d.maxAbs, 1e-4) << v.name << " attention: " << d.describe();
    d = compare(cudaTrace.scores, cpuTrace.scores);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " scores: " << d.describe();
    d = compare(cudaTrace.residAfterMlp, cpuTrace.residAfterMlp);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " residuals: " << d.describe();
    d = compare(cudaTrace.residNorm, cpuTrace.residNorm);
    EXPECT_LT(d.relative(), 1e-4) << v.name << " residual norms: " << d.describe();
    EXPECT_EQ(cudaTrace.lensIds.size(), cpuTrace.lensIds.size()) << v.name;
    if (config.isMoe())
      for (int l = 0; l < config.n_layer; ++l) {
        ASSERT_EQ(cudaTrace.moe[l].assignments.size(), cpuTrace.moe[l].assignments.size()) << v.name << " layer " << l;
        for (size_t i = 0; i < cpuTrace.moe[l].assignments.size(); ++i) {
          EXPECT_EQ(cudaTrace.moe[l].assignments[i].expert, cpuTrace.moe[l].assignments[i].expert) << v.name << " layer " << l;
          EXPECT_EQ(cudaTrace.moe[l].assignments[i].dropped, cpuTrace.moe[l].assignments[i].dropped) << v.name << " layer " << l;
        }
      }
  }
}

TEST(CudaBackend, KvCachePrefillThenDecodeMatchesOneForward) {
  REQUIRE_CUDA(cuda);
  for (const auto& v : architectureVariants()) {
    const ModelConfig config = variantConfig(v);
    if (!config.causal) continue;                                    // an encoder's earlier tokens would see later ones
    if (config.isMoe() && config.moe_capacity_factor > 0) continue;  // capacity depends on how many tokens share a forward
    const Weights weights = randomWeights(config, 22);
    Transformer model(weights, *cuda);
    const auto ids = sequence(12, config.vocab_size, 4);
    const auto full = model.logitsFor(ids);
    KVCache cache(*cuda, config);
    std::vector<float> step;
    model.forward(std::span(ids).subspan(0, 5), cache, step, false);
    const auto prefill = compare(step.data(), full.data() + (size_t)4 * config.vocab_size, config.vocab_size);
    EXPECT_LT(prefill.relative(), 1e-4) << v.name << " prefill: " << prefill.describe();
    for (int t = 5; t < 12; ++t) {
      model.forward(std::span(ids).subspan(t, 1), cache, step, false);
      const auto d = compare(step.data(), full.data() + (size_t)t * config.vocab_size, config.vocab_size);
      EXPECT_LT(d.relative(), 1e-4) << v.name << " position " << t << ": " << d.describe();
    }
  }
}

TEST(CudaBackend, Gpt2ShapeLogitsMatchCpu) {
  REQUIRE_CUDA(cuda);
  ModelConfig config = smallConfig(2, 12, 768, 50257, 1024);  // GPT-2 124M widths, 2 layers
  const Weights weights = randomWeights(config, 23);
  auto cpu = makeCpuBackend(0);
  Transformer cpuModel(weights, *cpu), cudaModel(weights, *cuda);
  const auto ids = sequence(64, config.vocab_size, 5);
  const auto d = compare(cudaModel.logitsFor(ids), cpuModel.logitsFor(ids));
  EXPECT_LT(d.relative(), 1e-4) << d.describe();
}

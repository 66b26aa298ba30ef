// The unembedding of a few rows: the CPU backend's multi-row GEMV (matmulTransposed with up to 16
// rows) against the plain-loop reference at odd sizes, and the forward's single joint pass over the
// unembedding for the logit lens of every captured layer plus the final logits, checked against a
// lens recomputed on the host from the captured residuals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/nn/backend.h"
#include "model/nn/ops_reference.h"
#include "model/nn/transformer.h"
#include "tests/test_backward_helpers.h"
#include "tests/test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomVector;
using tscope::testing::randomWeights;
using tscope::testing::smallConfig;

// Rows 1..17 (17 takes the GEMM path), K not a multiple of any SIMD width, N not a multiple of the
// 4-row block (and N < 4: only the tail), with 1 and 2 threads (K N >= 65536 splits the rows).
TEST(CpuOps, MatmulTransposedFewRowsMatchesReference) {
  struct Shape {
    int K, N;
  };
  for (int threads : {1, 2})
    for (const Shape s : {Shape{7, 3}, Shape{33, 13}, Shape{100, 203}, Shape{257, 301}, Shape{768, 1001}}) {
      auto cpu = makeCpuBackend(threads);
      const auto weight = randomVector((size_t)s.N * s.K, 11 + s.K);
      for (int T = 1; T <= 17; ++T) {
        const auto in = randomVector((size_t)T * s.K, 100 + T);
        std::vector<float> fast((size_t)T * s.N, NAN), ref((size_t)T * s.N);
        cpu->matmulTransposed(fast.data(), in.data(), weight.data(), T, s.K, s.N);
        ref::matmulTransposed(ref.data(), in.data(), weight.data(), T, s.K, s.N);
        const auto d = compare(fast, ref);
        EXPECT_LT(d.relative(), 1e-5) << "threads " << threads << " T=" << T << " K=" << s.K << " N=" << s.N << ": " << d.describe();
      }
    }
}

// The lens rows of many captured layers and the final rows go through the unembedding together,
// in chunks of at least 16 rows: 21 layers at one position (two chunks), and every position of a
// short prompt. Each lens entry is recomputed here from the captured residual after the block:
// softmax(final_norm(resid) . wte^T), its top K by a full sort (ties to the lower id).
TEST(LogitLens, JointUnembeddingMatchesLensFromResiduals) {
  struct Case {
    int layers, T;
    bool lastOnly;
  };
  for (const Case c : {Case{21, 1, true}, Case{21, 6, true}, Case{3, 7, false}, Case{2, 1, false}}) {
    const ModelConfig config = smallConfig(c.layers, 2, 24, 67, 16);
    const Weights weights = randomWeights(config, 5 + c.layers);
    for (const bool reference : {false, true}) {
      auto backend = reference ? makeReferenceBackend() : makeCpuBackend(1);
      Transformer model(weights, *backend);
      TraceOptions options;
      options.logitLensTopK = 4;
      options.logitLensLastOnly = c.lastOnly;
      const auto ids = tscope::testing::sequence(c.T, config.vocab_size, c.layers);
      Trace trace;
      KVCache cache(*backend, config, 16);
      std::vector<float> logits;
      model.forward(ids, cache, logits, !c.lastOnly, &trace, options);
      const std::string label = std::string(reference ? "reference" : "cpu") + " L=" + std::to_string(c.layers) + " T=" + std::to_string(c.T) +
                                (c.lastOnly ? " last only" : " all positions");

      // The final logits equal those of a forward with no trace (no lens rows beside them).
      Transformer plain(weights, *backend);
      KVCache plainCache(*backend, config, 16);
      std::vector<float> plainLogits;
      plain.forward(ids, plainCache, plainLogits, !c.lastOnly);
      const auto logitsDiff = compare(logits, plainLogits);
      EXPECT_LT(logitsDiff.relative(), 1e-5) << label << " logits: " << logitsDiff.describe();

      const int C = config.n_embd, V = config.vocab_size, K = trace.lensK;
      const int P = static_cast<int>(trace.lensPositions.size());
      ASSERT_EQ(trace.layers.size(), (size_t)c.layers) << label;
      ASSERT_EQ(P, c.lastOnly ? 1 : c.T) << label;
      double worstProb = 0;
      std::vector<float> normed(C), row(V);
      std::vector<int> order(V);
      for (int li = 0; li < c.layers; ++li)
        for (int p = 0; p < P; ++p) {
          const float* resid = trace.residAfterMlp.data() + ((size_t)li * c.T + trace.lensPositions[p]) * C;
          ref::layerNorm(normed.data(), resid, weights.param("ln_f.weight"), weights.param("ln_f.bias"), 1, C,
                         static_cast<float>(config.layer_norm_epsilon));
          ref::matmulTransposed(row.data(), normed.data(), weights.param("wte.weight"), 1, C, V);
          std::iota(order.begin(), order.end(), 0);
          std::sort(order.begin(), order.end(), [&row](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
          const double maxLogit = row[order[0]];
          double sum = 0;
          for (float x : row) sum += std::exp((double)x - maxLogit);
          for (int k = 0; k < K; ++k) {
            const size_t at = ((size_t)li * P + p) * K + k;
            EXPECT_EQ(trace.lensIds[at], order[k]) << label << " layer " << li << " position " << p << " rank " << k;
            worstProb = std::max(worstProb, std::fabs(trace.lensProbs[at] - std::exp((double)row[order[k]] - maxLogit) / sum));
          }
        }
      EXPECT_LT(worstProb, 1e-5) << label << ": largest lens probability difference " << worstProb;
    }
  }
}

// Tests of the efficient-attention backward (finite differences of the double reference for every
// supported variant, exact and window against the training BackwardOps) and of Linformer's Pool
// projection over a fixed number of columns (a token's output does not depend on the length).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "model/train/backward.h"
#include "tests/test_efficient_attention_helpers.h"

namespace tscope {
namespace {

struct NamedParams {
  std::string name;
  AttentionVariantParams params;
};

std::vector<NamedParams> supportedVariants() {
  auto make = [](AttentionVariant variant) {
    AttentionVariantParams p = smallKnobs(variant);
    p.projected = 4;  // of n = 9: far from exact
    return p;
  };
  std::vector<NamedParams> list = {{"exact", make(AttentionVariant::Exact)},
                                   {"flash", make(AttentionVariant::Flash)},
                                   {"window", make(AttentionVariant::Window)},
                                   {"linformer pool", make(AttentionVariant::Linformer)},
                                   {"linear", make(AttentionVariant::Linear)},
                                   {"performer", make(AttentionVariant::Performer)},
                                   {"linformer pool 20 columns", make(AttentionVariant::Linformer)},
                                   {"linformer gaussian", make(AttentionVariant::Linformer)}};
  list[6].params.projected = 5;  // n = 9 of N = 20 columns: segment [8, 12) partial, [12, 20) empty
  list[6].params.linformerColumns = 20;
  list[7].params.linformerProjection = LinformerProjection::Gaussian;
  return list;
}

// sum(dout * out) with the reference (double inside).
double weightedOutput(const HeadQkv& head, const AttentionVariantParams& params, const std::vector<float>& dout) {
  const VariantResult result = attentionVariantReference(head, params);
  double sum = 0;
  for (size_t x = 0; x < dout.size(); ++x) sum += static_cast<double>(dout[x]) * result.out[x];
  return sum;
}

TEST(EfficientAttentionBackward, MatchesFiniteDifferencesForEverySupportedVariant) {
  const int n = 9, d = 4;
  for (const NamedParams& variant : supportedVariants())
    for (bool causal : {true, false}) {
      RandomHead h(n, d, causal, 3, 1.0);
      const std::vector<float> dout = seededNormals(77, static_cast<size_t>(n) * d, 1.0);
      std::vector<float> dq(dout.size(), 0.0f), dk(dout.size(), 0.0f), dv(dout.size(), 0.0f);
      ASSERT_EQ(attentionVariantBackwardProblem(variant.params), "") << variant.name;
      attentionVariantBackward(h.head, variant.params, dout.data(), dq.data(), dk.data(), dv.data());
      double worst = 0, largest = 0;
      std::string where;
      for (auto [input, grad, label] : {std::tuple{&h.q, &dq, "q"}, std::tuple{&h.k, &dk, "k"}, std::tuple{&h.v, &dv, "v"}})
        for (size_t x = 0; x < input->size(); ++x) {
          const float original = (*input)[x];
          const float up = original + 1e-2f, down = original - 1e-2f;  // the step taken: the floats' difference
          (*input)[x] = up;
          const double plus = weightedOutput(h.head, variant.params, dout);
          (*input)[x] = down;
          const double minus = weightedOutput(h.head, variant.params, dout);
          (*input)[x] = original;
          const double numeric = (plus - minus) / (static_cast<double>(up) - down);
          const double error = std::fabs(numeric - (*grad)[x]);
          largest = std::max(largest, std::fabs(numeric));
          if (error > worst) worst = error, where = std::string(label) + "[" + std::to_string(x) + "]";
        }
      EXPECT_LT(worst, 5e-4 * std::max(1.0, largest))
          << variant.name << " causal " << causal << ": worst |analytic - numeric| " << worst << " at " << where << ", largest gradient " << largest;
      EXPECT_GT(largest, 0.05) << variant.name << ": the gradients are too small for the check to mean anything";
    }
}

TEST(EfficientAttentionBackward, AddsIntoTheGradientsItIsGiven) {
  RandomHead h(6, 3, true, 4);
  const std::vector<float> dout = seededNormals(8, 18, 1.0);
  const AttentionVariantParams params = supportedVariants()[4].params;  // linear
  std::vector<float> once(18, 0.0f), twice(18, 0.0f), dk(18, 0.0f), dv(18, 0.0f);
  attentionVariantBackward(h.head, params, dout.data(), once.data(), dk.data(), dv.data());
  attentionVariantBackward(h.head, params, dout.data(), twice.data(), dk.data(), dv.data());
  attentionVariantBackward(h.head, params, dout.data(), twice.data(), dk.data(), dv.data());
  double diff = 0;
  for (size_t x = 0; x < once.size(); ++x) diff = std::max(diff, std::fabs(2.0 * once[x] - twice[x]));
  EXPECT_LT(diff, 1e-6) << "two calls add twice the gradient; largest difference " << diff;
}

TEST(EfficientAttentionBackward, OneTokenPassesTheGradientToItsValueOnly) {
  // n = 1: out = v_0 for every variant but Gaussian Linformer, so dv = dout and dq = dk = 0.
  for (const NamedParams& variant : supportedVariants()) {
    if (variant.name == "linformer gaussian") continue;
    for (bool causal : {true, false}) {
      RandomHead h(1, 3, causal, 6);
      const std::vector<float> dout = {0.5f, -1.25f, 2.0f};
      std::vector<float> dq(3, 0.0f), dk(3, 0.0f), dv(3, 0.0f);
      attentionVariantBackward(h.head, variant.params, dout.data(), dq.data(), dk.data(), dv.data());
      for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(dv[c], dout[c], 1e-6) << variant.name << " causal " << causal;
        EXPECT_NEAR(dq[c], 0.0f, 1e-6) << variant.name << " causal " << causal;
        EXPECT_NEAR(dk[c], 0.0f, 1e-6) << variant.name << " causal " << causal;
      }
    }
  }
}

TEST(EfficientAttentionBackward, ExactFlashAndWindowMatchTheTrainingAttentionBackward) {
  const int n = 11, d = 5;
  auto ops = makeReferenceBackwardOps();
  for (const NamedParams& variant : supportedVariants()) {
    if (variant.params.variant != AttentionVariant::Exact && variant.params.variant != AttentionVariant::Flash &&
        variant.params.variant != AttentionVariant::Window)
      continue;
    for (bool causal : {true, false}) {
      RandomHead h(n, d, causal, 9);
      const std::vector<float> dout = seededNormals(19, static_cast<size_t>(n) * d, 1.0);
      std::vector<float> qkv(static_cast<size_t>(n) * 3 * d), dqkv(qkv.size(), 0.0f);  // (n, 3d): q | k | v
      for (int t = 0; t < n; ++t)
        for (int c = 0; c < d; ++c) {
          qkv[static_cast<size_t>(t) * 3 * d + c] = h.q[static_cast<size_t>(t) * d + c];
          qkv[static_cast<size_t>(t) * 3 * d + d + c] = h.k[static_cast<size_t>(t) * d + c];
          qkv[static_cast<size_t>(t) * 3 * d + 2 * d + c] = h.v[static_cast<size_t>(t) * d + c];
        }
      AttentionShape shape;
      shape.T = n;
      shape.nHead = 1;
      shape.headDim = d;
      shape.cacheRows = n;
      shape.causal = causal;
      shape.window = variant.params.variant == AttentionVariant::Window ? variant.params.window : 0;
      ops->attention(dqkv.data(), dout.data(), qkv.data(), shape, 1);
      std::vector<float> grads(static_cast<size_t>(3) * n * d, 0.0f);  // (3, n, d): dq, dk, dv
      float* dq = grads.data();
      attentionVariantBackward(h.head, variant.params, dout.data(), dq, dq + n * d, dq + 2 * n * d);
      double worst = 0;
      for (int part = 0; part < 3; ++part)
        for (int t = 0; t < n; ++t)
          for (int c = 0; c < d; ++c)
            worst = std::max(worst, std::fabs(static_cast<double>(grads[(static_cast<size_t>(part) * n + t) * d + c]) -
                                              dqkv[static_cast<size_t>(t) * 3 * d + part * d + c]));
      EXPECT_LT(worst, 1e-5) << variant.name << " causal " << causal << ": largest difference " << worst;
    }
  }
}

TEST(EfficientAttentionBackward, UnsupportedVariantsThrowOneLine) {
  AttentionVariantParams lsh;
  lsh.variant = AttentionVariant::Lsh;
  std::vector<float> learned(64, 0.1f);
  AttentionVariantParams learnedLinformer;
  learnedLinformer.variant = AttentionVariant::Linformer;
  learnedLinformer.linformerE = learnedLinformer.linformerF = learned.data();
  learnedLinformer.linformerColumns = 8;
  learnedLinformer.projected = 4;
  RandomHead h(8, 2, true, 1);
  std::vector<float> dout(16, 1.0f), dq(16, 0.0f), dk(16, 0.0f), dv(16, 0.0f);
  for (auto [params, word] : {std::pair{lsh, "lsh"}, std::pair{learnedLinformer, "learned"}}) {
    const std::string problem = attentionVariantBackwardProblem(params);
    EXPECT_NE(problem.find(word), std::string::npos) << problem;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
    try {
      attentionVariantBackward(h.head, params, dout.data(), dq.data(), dk.data(), dv.data());
      ADD_FAILURE() << word << " did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), problem);
    }
  }
  EXPECT_EQ(std::count(dq.begin(), dq.end(), 0.0f), 16) << "nothing written before throwing";
}

// ---- Linformer's Pool projection over linformerColumns fixed columns ----

AttentionVariantParams poolColumns(int projected, int columns) {
  AttentionVariantParams p;
  p.variant = AttentionVariant::Linformer;
  p.projected = projected;
  p.linformerColumns = columns;
  return p;
}

TEST(EfficientAttention, LinformerPoolColumnsMakeTheCausalOutputIndependentOfLength) {
  const int N = 16, d = 8, shortN = 7;
  RandomHead full(N, d, true, 21);
  HeadQkv prefix = full.head;
  prefix.n = shortN;
  const AttentionVariantParams params = poolColumns(4, N);
  const VariantResult longRef = attentionVariantReference(full.head, params), shortRef = attentionVariantReference(prefix, params);
  const std::vector<float> longFast = fastOut(full.head, params), shortFast = fastOut(prefix, params);
  EXPECT_EQ(shortRef.projectedRows, 4);
  const std::vector<float> longRefHead(longRef.out.begin(), longRef.out.begin() + shortN * d);
  const std::vector<float> longFastHead(longFast.begin(), longFast.begin() + shortN * d);
  EXPECT_EQ(shortRef.out, longRefHead) << "reference: the first 7 rows at n = 7 and n = 16";
  EXPECT_LT(relativeMaxDiff(shortFast, longFastHead), 1e-6) << "fast path: the first 7 rows at n = 7 and n = 16";
  EXPECT_LT(relativeMaxDiff(shortFast, shortRef.out), 1e-5) << "fast path against the reference at n = 7";
  // Without the fixed columns the short sequence cuts its own segments: row 4 then differs.
  const std::vector<float> ownSegments = fastOut(prefix, poolColumns(4, 0));
  EXPECT_GT(relativeMaxDiff(ownSegments, shortRef.out), 1e-3) << "the fixed columns changed nothing, so the test checks nothing";
}

TEST(EfficientAttention, LinformerPoolColumnsNonCausalMasksTheEmptySegments) {
  const int N = 16, k = 4, n = 7, d = 3;  // segments [0, 4) full, [4, 8) partial (4 .. 6), [8, 16) empty
  RandomHead h(n, d, false, 22);
  const AttentionVariantParams params = poolColumns(k, N);
  // The test's own: softmax over the means of the two non-empty segments.
  std::vector<float> expected(static_cast<size_t>(n) * d);
  const int begins[2] = {0, 4}, ends[2] = {4, 7};
  for (int i = 0; i < n; ++i) {
    double weight[2], meanV[2][3];
    for (int r = 0; r < 2; ++r) {
      double score = 0;
      for (int c = 0; c < d; ++c) {
        double meanK = 0;
        meanV[r][c] = 0;
        for (int j = begins[r]; j < ends[r]; ++j) meanK += h.k[j * d + c], meanV[r][c] += h.v[j * d + c];
        meanK /= ends[r] - begins[r];
        meanV[r][c] /= ends[r] - begins[r];
        score += h.q[i * d + c] * meanK;
      }
      weight[r] = std::exp(score / std::sqrt(static_cast<double>(d)));
    }
    for (int c = 0; c < d; ++c)
      expected[i * d + c] = static_cast<float>((weight[0] * meanV[0][c] + weight[1] * meanV[1][c]) / (weight[0] + weight[1]));
  }
  const VariantResult ref = attentionVariantReference(h.head, params);
  EXPECT_LT(relativeMaxDiff(ref.out, expected), 1e-6);
  EXPECT_LT(relativeMaxDiff(fastOut(h.head, params), expected), 1e-5);
  for (int i = 0; i < n; ++i) EXPECT_EQ(ref.projectedMap[i * k + 2] + ref.projectedMap[i * k + 3], 0.0f) << "row " << i;
}

TEST(EfficientAttention, LinformerPoolColumnsEqualToNChangeNothing) {
  for (bool causal : {true, false}) {
    RandomHead h(13, 4, causal, 23);
    const VariantResult before = attentionVariantReference(h.head, poolColumns(5, 0));
    const VariantResult after = attentionVariantReference(h.head, poolColumns(5, 13));
    EXPECT_EQ(before.out, after.out) << "causal " << causal;
    EXPECT_EQ(before.map, after.map) << "causal " << causal;
    EXPECT_EQ(fastOut(h.head, poolColumns(5, 0)), fastOut(h.head, poolColumns(5, 13))) << "causal " << causal;
  }
}

TEST(EfficientAttention, LinformerPoolColumnsBelowNAreRejected) {
  const std::string problem = attentionVariantProblem(poolColumns(4, 6), 7);
  EXPECT_NE(problem.find("linformerColumns"), std::string::npos) << problem;
  EXPECT_EQ(attentionVariantProblem(poolColumns(4, 7), 7), "");
  EXPECT_EQ(attentionVariantProblem(poolColumns(4, 70), 7), "");
  EXPECT_NE(attentionVariantProblem(poolColumns(4, -1), 7), "");
  AttentionVariantParams gaussian = poolColumns(4, 6);
  gaussian.linformerProjection = LinformerProjection::Gaussian;  // columns are Pool's (and learned E, F's) only
  EXPECT_EQ(attentionVariantProblem(gaussian, 7), "");
}

}  // namespace
}  // namespace tscope

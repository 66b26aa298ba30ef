// Training-loop numerics (model/train/optimizer.h): AdamW against hand-written formulas, decoupled and
// masked weight decay, bias correction, exact resume from saved state, clipping by global norm,
// the warm-up + cosine schedule, gradient accumulation, and validation messages naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/train/optimizer.h"

using namespace tscope;

namespace {

double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

// Expects `call` to throw tscope::Error whose message mentions `field`.
template <class F>
void expectErrorNaming(F call, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "no tscope::Error for " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(AdamW, FirstTwoStepsMatchTheFormulaWrittenOutInDouble) {
  const AdamWConfig config{.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weightDecay = 0.1f};
  AdamW opt(3, config);
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g1 = {0.5f, 0.25f, -1e-3f}, g2 = {-0.25f, 0.75f, 2.0f};
  std::vector<double> pd(p.begin(), p.end()), m(3, 0.0), v(3, 0.0);
  const double b1 = config.beta1, b2 = config.beta2, lr = config.lr, wd = config.weightDecay, eps = config.eps;
  for (int t = 1; t <= 2; ++t) {
    const std::vector<float>& g = t == 1 ? g1 : g2;
    opt.step(p.data(), g.data(), nullptr);
    double worst = 0;
    for (int i = 0; i < 3; ++i) {
      pd[i] -= lr * wd * pd[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * double(g[i]) * g[i];
      const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      pd[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      worst = std::max(worst, relative(p[i], pd[i]));
    }
    EXPECT_LT(worst, 1e-6) << "step " << t << ": largest relative difference " << worst;
  }
  // Step one is p(1 - lr wd) - lr g/(|g| + eps): 1 * 0.99 - 0.1 * 0.5 / 0.50000001 = 0.89.
  EXPECT_NEAR(1.0 * 0.99 - 0.1 * 0.5 / (0.5 + 1e-8), 0.89, 1e-8);
  EXPECT_EQ(opt.stepCount(), 2);
}

TEST(AdamW, WeightDecayIsDecoupledFromTheGradient) {
  // Zero gradient: m = v = 0, the Adam term is 0 / (0 + eps) = 0 and only p *= 1 - lr wd remains.
  // lr = wd = 0.5 make the factor 0.75, exact in float, so the comparison is exact.
  AdamW opt(3, {.lr = 0.5f, .weightDecay = 0.5f});
  std::vector<float> p = {4.0f, -2.0f, 0.25f};
  const std::vector<float> zero(3, 0.0f);
  opt.step(p.data(), zero.data(), nullptr);
  EXPECT_EQ(p, (std::vector<float>{3.0f, -1.5f, 0.1875f}));
  // The decay uses this step's lr, not config.lr: lr 0.25 gives factor 0.875.
  opt.step(p.data(), zero.data(), nullptr, 0.25f);
  EXPECT_EQ(p, (std::vector<float>{2.625f, -1.3125f, 0.1640625f}));
}

TEST(AdamW, MaskedParametersAreNotDecayed) {
  AdamW opt(4, {.lr = 0.5f, .weightDecay = 0.5f});
  std::vector<float> p = {4.0f, 4.0f, -8.0f, -8.0f};
  const std::vector<float> zero(4, 0.0f);
  const std::vector<uint8_t> mask = {1, 0, 1, 0};
  for (int t = 0; t < 3; ++t) opt.step(p.data(), zero.data(), mask.data());
  EXPECT_EQ(p, (std::vector<float>{4.0f * 0.421875f, 4.0f, -8.0f * 0.421875f, -8.0f}));  // 0.75^3
  // With a gradient the masked entries still get the Adam update, only without decay: the pair
  // (decayed, not) differs by exactly the decay of the starting value.
  AdamW withGrad(2, {.lr = 0.5f, .weightDecay = 0.5f});
  std::vector<float> q = {4.0f, 4.0f};
  const std::vector<float> g = {1.0f, 1.0f};
  const std::vector<uint8_t> half = {1, 0};
  withGrad.step(q.data(), g.data(), half.data());
  EXPECT_EQ(q[1] - q[0], 1.0f) << "decayed " << q[0] << ", not decayed " << q[1];
}

TEST(AdamW, BiasCorrectionMakesEveryStepOfAConstantGradientLr) {
  // With g constant, mhat = g and vhat = g^2 at every step, so each step moves p by lr (to eps).
  // Without the correction step 1 would move lr (1 - b1) / sqrt(1 - b2) = 0.447 lr.
  AdamW opt(1, {.lr = 0.01f, .weightDecay = 0.0f});
  float p = 1.0f;
  const float g = 3.0f;
  double worst = 0;
  for (int t = 1; t <= 20; ++t) {
    const float before = p;
    opt.step(&p, &g, nullptr);
    worst = std::max(worst, relative(double(before) - p, 0.01));
  }
  EXPECT_LT(worst, 1e-4) << "largest relative error of a step against lr: " << worst;
}

TEST(AdamW, SaveLoadThenContinueEqualsAnUninterruptedRunBitForBit) {
  const size_t n = 37;
  const AdamWConfig config{.lr = 1e-2f};
  auto gradAt = [&](int t, size_t i) { return std::sin(0.7f * float(i) + 1.3f * float(t)) * (1.0f + float(t)); };
  std::vector<float> start(n), grads(n);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) {
    start[i] = std::cos(0.3f * float(i));
    mask[i] = i % 3 != 0;
  }
  const float lrs[6] = {1e-3f, 2e-3f, 3e-3f, 2.5e-3f, 1e-3f, 5e-4f};

  AdamW straight(n, config);
  std::vector<float> a = start;
  for (int t = 0; t < 6; ++t) {
    for (size_t i = 0; i < n; ++i) grads[i] = gradAt(t, i);
    straight.step(a.data(), grads.data(), mask.data(), lrs[t]);
  }

  std::vector<float> b = start;
  AdamWState saved;
  {
    AdamW first(n, config);
    for (int t = 0; t < 3; ++t) {
      for (size_t i = 0; i < n; ++i) grads[i] = gradAt(t, i);
      first.step(b.data(), grads.data(), mask.data(), lrs[t]);
    }
    saved = first.saveState();
  }
  EXPECT_EQ(saved.step, 3);
  AdamW resumed(n, config);
  resumed.loadState(saved);
  for (int t = 3; t < 6; ++t) {
    for (size_t i = 0; i < n; ++i) grads[i] = gradAt(t, i);
    resumed.step(b.data(), grads.data(), mask.data(), lrs[t]);
  }
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << "parameters differ after resume";
  const AdamWState sa = straight.saveState(), sb = resumed.saveState();
  EXPECT_EQ(0, std::memcmp(sa.m.data(), sb.m.data(), n * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(sa.v.data(), sb.v.data(), n * sizeof(float)));
  EXPECT_EQ(sa.step, sb.step);
}

TEST(AdamW, ValidationNamesTheField) {
  expectErrorNaming([] { AdamW(1, {.lr = 0.0f}); }, "lr");
  expectErrorNaming([] { AdamW(1, {.lr = 1e-3f, .beta1 = 1.0f}); }, "beta1");
  expectErrorNaming([] { AdamW(1, {.lr = 1e-3f, .beta2 = -0.1f}); }, "beta2");
  expectErrorNaming([] { AdamW(1, {.lr = 1e-3f, .eps = 0.0f}); }, "eps");
  expectErrorNaming([] { AdamW(1, {.lr = 1e-3f, .weightDecay = -1.0f}); }, "weightDecay");
  AdamW opt(2, {.lr = 1e-3f});
  float p[2] = {0, 0}, g[2] = {0, 0};
  expectErrorNaming([&] { opt.step(p, g, nullptr, NAN); }, "lr");
  expectErrorNaming([&] { opt.loadState({{0.0f}, {0.0f, 0.0f}, 1}); }, "AdamWState.m");
  expectErrorNaming([&] { opt.loadState({{0.0f, 0.0f}, {0.0f, 0.0f}, -1}); }, "AdamWState.step");
}

TEST(AdamW, WeightDecayMaskDecaysMatricesOnly) {
  const std::vector<ParamSpec> layout = {{"h.0.mlp.c_fc.weight", {2, 3}, 0}, {"h.0.mlp.c_fc.bias", {3}, 16}};
  const std::vector<uint8_t> mask = weightDecayMask(layout, 32);
  ASSERT_EQ(mask.size(), 32u);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(mask[i], i < 6 ? 1 : 0) << "index " << i;
  expectErrorNaming([&] { weightDecayMask(layout, 18); }, "c_fc.bias");
}

TEST(ClipGradNorm, ReturnsThePreClipNormAndScalesToMaxNorm) {
  std::vector<float> g = {3.0f, 4.0f, 0.0f, -12.0f};  // norm 13
  EXPECT_EQ(clipGradNorm(g.data(), g.size(), 1.0f), 13.0f);
  double after = 0;
  for (float x : g) after += double(x) * x;
  EXPECT_NEAR(std::sqrt(after), 1.0, 1e-7);
  EXPECT_NEAR(g[0], 3.0 / 13.0, 1e-7);
  EXPECT_NEAR(g[3], -12.0 / 13.0, 1e-7);
  // Under the limit: returned, untouched.
  std::vector<float> small = {0.3f, 0.4f};
  EXPECT_FLOAT_EQ(clipGradNorm(small.data(), 2, 1.0f), 0.5f);
  EXPECT_EQ(small, (std::vector<float>{0.3f, 0.4f}));
  // Non-finite: reported, untouched, so the caller can skip the step.
  std::vector<float> bad = {1.0f, INFINITY};
  EXPECT_TRUE(std::isinf(clipGradNorm(bad.data(), 2, 1.0f)));
  EXPECT_EQ(bad[0], 1.0f);
  expectErrorNaming([&] { clipGradNorm(small.data(), 2, 0.0f); }, "maxNorm");
}

TEST(LrSchedule, WarmupThenCosineToTheMinimum) {
  // Convention: at(step) is the lr of 0-based step `step`; warm-up reaches maxLr at warmup - 1.
  const LrSchedule s{.maxLr = 1e-3f, .minLr = 1e-4f, .warmupSteps = 10, .totalSteps = 100};
  EXPECT_FLOAT_EQ(s.at(0), 1e-4f);  // maxLr / warmupSteps
  EXPECT_FLOAT_EQ(s.at(4), 5e-4f);
  EXPECT_FLOAT_EQ(s.at(9), 1e-3f);     // the peak
  EXPECT_FLOAT_EQ(s.at(54), 5.5e-4f);  // halfway from step 9 to step 99: (max + min) / 2
  EXPECT_FLOAT_EQ(s.at(99), 1e-4f);    // the last step uses minLr
  EXPECT_FLOAT_EQ(s.at(500), 1e-4f);   // and so does anything after
  for (int t = 1; t < 100; ++t) {
    if (t <= 9) EXPECT_GT(s.at(t), s.at(t - 1)) << "warm-up not increasing at " << t;
    else EXPECT_LE(s.at(t), s.at(t - 1)) << "decay not monotone at " << t;
  }
  const LrSchedule noWarmup{.maxLr = 2.0f, .minLr = 0.0f, .warmupSteps = 0, .totalSteps = 3};
  EXPECT_EQ(noWarmup.at(0), 2.0f);
  EXPECT_FLOAT_EQ(noWarmup.at(1), 1.0f);
  EXPECT_EQ(noWarmup.at(2), 0.0f);
  const LrSchedule allWarmup{.maxLr = 1.0f, .minLr = 0.0f, .warmupSteps = 4, .totalSteps = 4};
  EXPECT_EQ(allWarmup.at(0), 0.25f);
  EXPECT_EQ(allWarmup.at(3), 1.0f);
}

TEST(LrSchedule, ValidationNamesTheField) {
  expectErrorNaming([] { LrSchedule{.maxLr = 0.0f}.validate(); }, "maxLr");
  expectErrorNaming([] { LrSchedule{.maxLr = 1.0f, .minLr = 2.0f}.validate(); }, "minLr");
  expectErrorNaming([] { LrSchedule{.maxLr = 1.0f, .minLr = 0.0f, .warmupSteps = 5, .totalSteps = 4}.validate(); }, "warmupSteps");
  expectErrorNaming([] { LrSchedule{.maxLr = 1.0f, .minLr = 0.0f, .warmupSteps = 0, .totalSteps = 0}.validate(); }, "totalSteps");
  expectErrorNaming([] { (void)LrSchedule{.maxLr = 1.0f, .minLr = 0.0f}.at(-1); }, "step");
}

TEST(GradientAccumulator, MeanOfMicroBatchesIsTheFullBatchGradient) {
  // Least squares on a linear model, L = mean_j 0.5 (w.x_j - y_j)^2: the gradient over 8 samples
  // equals the mean of the gradients over 4 micro-batches of 2.
  const int samples = 8, dims = 3, micro = 4;
  const float w[dims] = {0.5f, -1.0f, 2.0f};
  auto x = [](int j, int d) { return std::sin(float(j * 3 + d)); };
  auto y = [](int j) { return std::cos(float(j)); };
  auto gradient = [&](int first, int count, float* out) {
    for (int d = 0; d < dims; ++d) out[d] = 0;
    for (int j = first; j < first + count; ++j) {
      float r = -y(j);
      for (int d = 0; d < dims; ++d) r += w[d] * x(j, d);
      for (int d = 0; d < dims; ++d) out[d] += r * x(j, d) / float(count);
    }
  };
  float full[dims], part[dims];
  gradient(0, samples, full);
  GradientAccumulator acc(dims, micro);
  EXPECT_THROW(acc.mean(), Error);
  for (int b = 0; b < micro; ++b) {
    EXPECT_FALSE(acc.ready());
    gradient(b * (samples / micro), samples / micro, part);
    acc.add(part);
  }
  ASSERT_TRUE(acc.ready());
  EXPECT_THROW(acc.add(part), Error);
  const std::vector<float>& mean = acc.mean();
  for (int d = 0; d < dims; ++d) EXPECT_NEAR(mean[d], full[d], 1e-6) << "dimension " << d;
  EXPECT_EQ(&acc.mean(), &mean);  // a second call does not divide again
  EXPECT_NEAR(acc.mean()[0], full[0], 1e-6);
  acc.reset();
  EXPECT_EQ(acc.added(), 0);
  for (int b = 0; b < micro; ++b) acc.add(part);
  for (int d = 0; d < dims; ++d) EXPECT_FLOAT_EQ(acc.mean()[d], part[d]);
  expectErrorNaming([] { GradientAccumulator(3, 0); }, "microBatches");
}

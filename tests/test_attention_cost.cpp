// The efficient-attention cost theory: the lecture's complexity table, its worked example to the
// byte (n = 4096, d = 512, 16 heads: 1 GiB against Linformer's 64 MiB), naive against tiled
// slow-memory traffic, and the log-log slope fit (exact power laws, noise, bad input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/core/error.h"
#include "model/theory/attention_cost.h"

using namespace tscope;

namespace {

const VariantComplexity& rowOf(const std::vector<VariantComplexity>& table, AttentionVariant variant) {
  auto it = std::find_if(table.begin(), table.end(), [&](const VariantComplexity& r) { return r.variant == variant; });
  EXPECT_NE(it, table.end());
  return *it;
}

}  // namespace

TEST(AttentionCost, TableHasOneRowPerVariantInOrderWithTheLecturesBigO) {
  const auto table = complexityTable();
  const auto variants = allAttentionVariants();
  ASSERT_EQ(table.size(), variants.size());
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].variant, variants[i]) << i;
    EXPECT_EQ(table[i].exact, isExactVariant(variants[i])) << i;
    EXPECT_FALSE(table[i].time.empty() || table[i].memory.empty() || table[i].maxN.empty() || table[i].useCase.empty()) << i;
  }
  const auto& exact = rowOf(table, AttentionVariant::Exact);
  EXPECT_EQ(exact.time, "O(n^2 d)");
  EXPECT_EQ(exact.memory, "O(n^2)");
  EXPECT_EQ(exact.timeExponent, 2);
  EXPECT_EQ(exact.memoryExponent, 2);
  const auto& flash = rowOf(table, AttentionVariant::Flash);
  EXPECT_EQ(flash.time, "O(n^2 d)");
  EXPECT_EQ(flash.memory, "O(n)");
  EXPECT_EQ(flash.timeExponent, 2);
  EXPECT_EQ(flash.memoryExponent, 1);
  EXPECT_EQ(rowOf(table, AttentionVariant::Lsh).time, "O(n log n d)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Linformer).time, "O(n k d)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Linformer).memory, "O(n k)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Linear).time, "O(n d^2)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Linear).memory, "O(d^2)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Performer).time, "O(n m d)");
  EXPECT_EQ(rowOf(table, AttentionVariant::Performer).memory, "O(m d)");
  // Every variant but the two exact ones is linear (or n log n) in n; the kernel ones keep no n-sized state.
  for (const auto& row : table)
    if (!row.exact) {
      EXPECT_EQ(row.timeExponent, 1) << row.time;
    }
  EXPECT_EQ(rowOf(table, AttentionVariant::Linear).memoryExponent, 0);
  EXPECT_EQ(rowOf(table, AttentionVariant::Performer).memoryExponent, 0);
}

TEST(AttentionCost, TheWorkedExampleToTheByte) {
  // n = 4096, 16 heads, fp32: 4096^2 * 16 * 4 = 2^30 bytes; Linformer k = 256: 4096 * 256 * 16 * 4 = 2^26.
  EXPECT_EQ(attentionMatrixBytes(4096, 16), int64_t{4096} * 4096 * 16 * 4);
  EXPECT_EQ(attentionMatrixBytes(4096, 16), int64_t{1} << 30);
  EXPECT_EQ(linformerMatrixBytes(4096, 256, 16), int64_t{64} << 20);
  EXPECT_EQ(attentionMatrixBytes(4096, 16) / linformerMatrixBytes(4096, 256, 16), 16);  // n / k
  EXPECT_EQ(attentionMatrixBytes(4096, 16, 2), int64_t{512} << 20);                     // fp16 halves it
  EXPECT_EQ(linformerMatrixBytes(100, 256, 1), int64_t{100} * 100 * 4);                 // k > n uses n rows
}

TEST(AttentionCost, TrafficMatchesTheHeadersCountsOnASmallCase) {
  // n = 6, d = 2, tiles of 4 rows: two query tiles.
  const MemoryTraffic full = attentionMemoryTraffic(6, 2, 4, false);
  EXPECT_EQ(full.naiveBytes, (4 * 6 * 2 + 4 * 36) * 4);
  EXPECT_EQ(full.tiledBytes, (6 * 2 + 2 * 2 * 6 * 2 + 6 * 2 + 2 * 6) * 4);
  const MemoryTraffic causal = attentionMemoryTraffic(6, 2, 4, true);
  EXPECT_EQ(causal.naiveBytes, full.naiveBytes);                                // naive writes all of S either way
  EXPECT_EQ(causal.tiledBytes, (6 * 2 + 2 * 2 * (4 + 6) + 6 * 2 + 2 * 6) * 4);  // tile 0 sees 4 keys, tile 1 all 6
}

TEST(AttentionCost, TiledMovesLessThanNaiveAndTheGapGrowsWithN) {
  for (int64_t tile : {64, 128}) {
    double lastRatio = 0;
    for (int64_t n = 2 * tile; n <= 16384; n *= 2) {
      const MemoryTraffic t = attentionMemoryTraffic(n, 64, tile, false);
      EXPECT_LT(t.tiledBytes, t.naiveBytes) << "n " << n << " tile " << tile;
      const double ratio = static_cast<double>(t.naiveBytes) / static_cast<double>(t.tiledBytes);
      EXPECT_GT(ratio, lastRatio) << "n " << n << " tile " << tile;
      lastRatio = ratio;
    }
    EXPECT_NEAR(lastRatio, 2.0 * tile / 64, 0.05 * tile / 64) << "the ratio tends to 2 Br / d";
  }
}

TEST(AttentionCost, CausalTilingReadsRoughlyHalfTheKeysAndValues) {
  for (int64_t n : {1024, 4096, 16384}) {
    const MemoryTraffic full = attentionMemoryTraffic(n, 64, 64, false);
    const MemoryTraffic causal = attentionMemoryTraffic(n, 64, 64, true);
    const double share = static_cast<double>(causal.tiledBytes) / static_cast<double>(full.tiledBytes);
    EXPECT_GT(share, 0.45) << n;
    EXPECT_LT(share, 0.6) << n;
  }
  EXPECT_THROW(attentionMemoryTraffic(0, 64, 64, true), Error);
  EXPECT_THROW(attentionMemoryTraffic(16, 64, 0, true), Error);
}

TEST(AttentionCost, LogLogFitRecoversExactPowerLaws) {
  for (double exponent : {0.0, 1.0, 2.0, 1.5}) {
    std::vector<double> x, y;
    for (double n = 256; n <= 32768; n *= 2) {
      x.push_back(n);
      y.push_back(3.0 * std::pow(n, exponent));
    }
    const LogLogFit fit = fitLogLog(x, y);
    EXPECT_NEAR(fit.slope, exponent, 1e-12);
    EXPECT_NEAR(fit.intercept, std::log(3.0), 1e-9);
    EXPECT_EQ(fit.points, static_cast<int>(x.size()));
  }
}

TEST(AttentionCost, LogLogFitToleratesNoise) {
  // n^2 times a fixed +-10% wobble: the slope stays within 0.05 of 2.
  const double wobble[] = {1.1, 0.9, 1.05, 0.95, 1.08, 0.92, 1.0, 1.1};
  std::vector<double> x, y;
  for (int i = 0; i < 8; ++i) {
    const double n = 256.0 * std::pow(2.0, i);
    x.push_back(n);
    y.push_back(1e-6 * n * n * wobble[i]);
  }
  const LogLogFit fit = fitLogLog(x, y);
  EXPECT_NEAR(fit.slope, 2.0, 0.05);
  EXPECT_NE(fit.slope, 2.0);
}

TEST(AttentionCost, LogLogFitRejectsBadInputWithOneLine) {
  const std::vector<double> one = {1.0}, two = {1.0, 2.0}, three = {1.0, 2.0, 3.0};
  const std::vector<double> withZero = {1.0, 0.0}, same = {4.0, 4.0}, withNan = {1.0, std::nan("")};
  auto message = [](std::span<const double> x, std::span<const double> y) -> std::string {
    try {
      fitLogLog(x, y);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  for (const std::string& m :
       {message(one, one), message(two, three), message(two, withZero), message(withZero, two), message(same, two), message(two, withNan)}) {
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_NE(message(one, one).find("at least two points"), std::string::npos);
  EXPECT_NE(message(same, two).find("every x is the same"), std::string::npos);
}

// Appendix A15's table as the slide labels it, beside tscope's rows; the disagreements named.
TEST(AttentionCost, SlideTableBesideOurs) {
  using tscope::AttentionVariant;
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Exact).variant, "Standard");
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Exact).maxN, "2K-4K");
  EXPECT_TRUE(tscope::slideVariantRow(AttentionVariant::Exact).differs.empty());
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Lsh).variant, "Reformer");
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Lsh).complexity, "O(n log n)");
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Linear).variant, "Linear Attn");
  EXPECT_EQ(tscope::slideVariantRow(AttentionVariant::Flash).maxN, "8K");
  EXPECT_FALSE(tscope::slideVariantRow(AttentionVariant::Flash).differs.empty());
  EXPECT_FALSE(tscope::slideVariantRow(AttentionVariant::Linformer).differs.empty());
  EXPECT_FALSE(tscope::slideVariantRow(AttentionVariant::Window).onSlide);
  EXPECT_FALSE(tscope::slideVariantRow(AttentionVariant::Performer).onSlide);
  int onSlide = 0;
  for (const auto& row : tscope::complexityTable()) onSlide += tscope::slideVariantRow(row.variant).onSlide;
  EXPECT_EQ(onSlide, 5);  // Standard, Reformer, Linformer, Linear Attn, FlashAttention
  ASSERT_EQ(tscope::slideBestFor().size(), 4u);
  EXPECT_EQ(tscope::slideBestFor()[0].first, "Books (100K+)");
  EXPECT_EQ(tscope::slideBestFor()[0].second, "Reformer");
  ASSERT_EQ(tscope::slideWhenToUse().size(), 4u);
  EXPECT_EQ(tscope::slideWhenToUse()[0].second, "n > 4096");
  EXPECT_EQ(tscope::slideWhenToUse()[3].first, "Edge deployment");
}

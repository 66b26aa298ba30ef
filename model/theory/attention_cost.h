// The cost side of the efficient-attention lecture as pure functions: the complexity table (time,
// memory, exact or not, practical maximum n, use case), the memory of the attention matrices of
// the worked example (n = 4096, d = 512, 16 heads: 1 GiB fp32 against 64 MiB for Linformer with
// k = 256), slow-memory bytes moved by naive and tiled (FlashAttention) attention, and the log-log
// slope fit the measured cost curves are read with.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/nn/efficient_attention.h"

namespace tscope {

// One row of the lecture's table for a variant (the big-O in n, d and the variant's knob).
struct VariantComplexity {
  AttentionVariant variant;
  std::string time;    // e.g. "O(n^2 d)", "O(n log n d)", "O(n k d)", "O(n d^2)"
  std::string memory;  // extra memory beyond q, k, v, out: "O(n^2)", "O(n k)", "O(d^2)", ...
  bool exact = false;
  double timeExponent = 0;    // the expected slope of time against n on log axes (2, 1, ...)
  double memoryExponent = 0;  // the expected slope of memory against n
  std::string maxN;           // the practical longest sequence the lecture gives (e.g. "~4k", "64k+")
  std::string useCase;
};
std::vector<VariantComplexity> complexityTable();  // one row per allAttentionVariants()

// The slide "Appendix A15: Choosing Efficient Transformer Variant" (Advanced Transformers), as it
// labels and words its rows, for the variant tscope shows beside it (onSlide false: Window and
// Performer, not on the slide). differs says where the slide and complexityTable disagree (empty:
// they agree, the slide's big-O leaving out d).
struct SlideVariantRow {
  bool onSlide = false;
  std::string variant, complexity, exact, maxN, useCase;  // the slide's cells
  std::string differs;
};
SlideVariantRow slideVariantRow(AttentionVariant variant);
// The slide's "Best for:" rows (workload, the slide's variant label), in its order.
struct SlideLabelPair {
  std::string first, second;
};
std::vector<SlideLabelPair> slideBestFor();
// The slide "Efficient Transformers: Reducing Complexity"'s "When to Use:" list (item, its gloss).
std::vector<SlideLabelPair> slideWhenToUse();

// Bytes of the attention matrices (the n x n probabilities, or n x k for Linformer) of one layer:
// heads x n x (n or k) x bytesPerValue. The worked example: attentionMatrixBytes(4096, 16) =
// 1 GiB; linformerMatrixBytes(4096, 256, 16) = 64 MiB.
int64_t attentionMatrixBytes(int64_t n, int64_t heads, int bytesPerValue = 4);
int64_t linformerMatrixBytes(int64_t n, int64_t k, int64_t heads, int bytesPerValue = 4);

// Slow-memory (HBM) traffic of one head's attention, in bytes (fp32 unless told):
//  naive: read Q, K (2nd), write S (n^2), read S, write P (2 n^2), read P and V (n^2 + nd),
//         write O (nd);
//  tiled (FlashAttention-2 order, query tiles of Br rows stay on chip): read Q once (nd), read
//         K and V once per query tile (ceil(n / Br) x 2nd), write O (nd) and the row statistics
//         (2n); causal: only the tiles at or below the diagonal are read.
struct MemoryTraffic {
  int64_t naiveBytes = 0;
  int64_t tiledBytes = 0;
};
MemoryTraffic attentionMemoryTraffic(int64_t n, int64_t d, int64_t tileRows, bool causal, int bytesPerValue = 4);

// Least-squares fit of log(y) = slope log(x) + intercept over points with x, y > 0 (at least two).
struct LogLogFit {
  double slope = 0;
  double intercept = 0;  // natural log
  int points = 0;
};
LogLogFit fitLogLog(std::span<const double> x, std::span<const double> y);

}  // namespace tscope

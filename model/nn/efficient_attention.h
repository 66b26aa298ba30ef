// The efficient-attention variants of the "Advanced Transformers" lecture as ops on one head's real
// queries, keys and values: exact softmax attention, FlashAttention's tiled online softmax (exact,
// never n x n), sliding window, Reformer's LSH buckets, Linformer's sequence projection, linear
// attention (phi = elu + 1) and Performer's positive random features. Each has a plain-loop
// reference (the ground truth, which also returns the effective n x n map the panel draws) and a
// fast path that never materialises n x n (except exact, which is the naive algorithm on purpose),
// reporting the bytes of its own working set for the cost benchmark.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope {

enum class AttentionVariant { Exact, Flash, Window, Lsh, Linformer, Linear, Performer };

// "exact", "flash", "window", "lsh", "linformer", "linear", "performer" (the config.json and CLI names).
const char* attentionVariantName(AttentionVariant variant);
std::optional<AttentionVariant> attentionVariantFromName(std::string_view name);
std::vector<AttentionVariant> allAttentionVariants();  // in the order above
bool isExactVariant(AttentionVariant variant);            // exact, flash (window is exact for its own mask only: false)

// The knobs of every variant (each variant reads only its own).
struct AttentionVariantParams {
  AttentionVariant variant = AttentionVariant::Exact;
  int tile = 64;         // flash: rows of a query tile (Br) and of a key/value tile (Bc)
  int window = 64;       // window: a query at i sees keys j with i - window < j <= i (causal) or |i - j| < window
  int buckets = 8;       // lsh: b random directions r_1..r_b; h(x) = argmax_i x.r_i
  int rounds = 1;        // lsh: independent hashing rounds; a query attends to the union of its buckets' keys
  int chunk = 64;        // lsh: chunk length of the sorted order; a query sees its own and the previous chunk
  int projected = 64;    // linformer: k, the rows K and V are projected to along the sequence
  int features = 64;     // performer: m random features
  uint64_t seed = 1;     // lsh directions, linformer's fixed projection, performer's features
  // Linformer with learned projections: E and F (projected, n) row-major, n = the sequence length
  // they were trained for (the first n' columns are used for a shorter sequence). Null = fixed
  // random projections N(0, 1/k) drawn from `seed`.
  const float* linformerE = nullptr;
  const float* linformerF = nullptr;
  int linformerColumns = 0;  // n of E and F when given
};

// Checks the knobs of params.variant for a sequence of n tokens: "" when valid, else one line
// naming the bad knob and its range (e.g. "lsh buckets must be 1 .. 1024, not 0").
std::string attentionVariantProblem(const AttentionVariantParams& params, int n);

// One head: q, k, v (n, d) row-major; the scale is 1 / sqrt(d). causal: query i sees keys j <= i.
struct HeadQkv {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int n = 0;
  int d = 0;
  bool causal = true;
};

// What the reference computes: the output and, for the panel, the effective attention map: the
// (n, n) row-stochastic matrix A with out = A v (for every variant, the linear ones included:
// A_ij = phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j'); Linformer: P F, P the (n, k) softmax;
// LSH: the softmax over the union of the query's buckets; keys it cannot see: 0).
struct VariantResult {
  std::vector<float> out;  // (n, d)
  std::vector<float> map;  // (n, n)
  // Variant extras the panel draws (empty for the others):
  std::vector<int> buckets;          // lsh: (rounds, n) bucket of each token's key in each round
  std::vector<int> sortedOrder;      // lsh: (rounds, n) token positions in the sorted-and-chunked order
  std::vector<float> projectedMap;   // linformer: (n, k) the softmax over the projected keys P
  int projectedRows = 0;             // linformer: k actually used (min(k, n))
};

// Plain loops in double, the ground truth (memory O(n^2): for tests and the panel, n up to a few
// thousand). Throws tscope::Error when attentionVariantProblem() is not empty.
VariantResult attentionVariantReference(const HeadQkv& head, const AttentionVariantParams& params);

// The fast path: out (n, d) only, in float, with memory linear in n for every variant but Exact
// (which materialises the (n, n) scores on purpose: it is the naive algorithm the lecture starts
// from). Returns the peak bytes of the working set it allocated besides q, k, v and out. Agrees
// with the reference to 1e-5 (relative to the output's scale). Throws as the reference does.
size_t attentionVariantFast(const HeadQkv& head, const AttentionVariantParams& params, float* out);

// Exact softmax attention of one head into out (n, d) and, when map is not null, the (n, n)
// probabilities: the one exact attention the variants are compared with.
void exactHeadAttention(const HeadQkv& head, float* out, float* map);

// FlashAttention's online softmax, one query row and one key/value tile: folds the tile's scaled
// scores s (Bc; -inf = masked) and value rows vTile (Bc, d) into the running max m, sum l and
// unnormalised output o (d): m' = max(m, max s), l' = l e^(m - m') + sum e^(s - m'),
// o' = o e^(m - m') + sum e^(s - m') v. Start from m = -inf, l = 0, o = 0; the row's output is o / l.
// The one implementation of the update: the flash fast path and the tile stepper (flash_steps.h) call it.
void onlineSoftmaxUpdate(float& m, float& l, float* o, const float* s, const float* vTile, int Bc, int d);

// How far a variant is from exact attention on the same head.
struct VariantError {
  std::vector<float> rowError;  // (n) L1 distance between the variant's map row and the exact one (0 .. 2)
  double meanRowError = 0;      // mean of rowError
  double outRelError = 0;       // ||out - exact out||_F / ||exact out||_F
};
VariantError compareWithExact(const HeadQkv& head, const VariantResult& variant);

}  // namespace tscope

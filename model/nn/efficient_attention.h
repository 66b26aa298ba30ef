// The efficient-attention variants of the "Advanced Transformers" lecture as ops on one head's real
// queries, keys and values: exact softmax attention, FlashAttention's tiled online softmax (exact,
// never n x n), sliding window, Reformer's LSH buckets, Linformer's sequence projection, linear
// attention (phi = elu + 1) and Performer's positive random features. Each has a plain-loop
// reference (the ground truth, which also returns the effective n x n map the panel draws) and a
// fast path that never materialises n x n (except exact, which is the naive algorithm on purpose),
// reporting the bytes of its own working set for the cost benchmark.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/core/attention_variant.h"

namespace tscope {

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
// A_ij = phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j'); Linformer: P F, P the (n, k) softmax,
// row-stochastic with the Pool projection only;
// LSH: the softmax over the union of the query's buckets; keys it cannot see: 0).
struct VariantResult {
  std::vector<float> out;  // (n, d)
  std::vector<float> map;  // (n, n)
  // Variant extras the panel draws (empty for the others):
  std::vector<int> buckets;         // lsh: (rounds, n) bucket of each token's key in each round
  std::vector<int> sortedOrder;     // lsh: (rounds, n) token positions in the sorted-and-chunked order
  std::vector<float> projectedMap;  // linformer: (n, k) the softmax over the projected keys P
  int projectedRows = 0;            // linformer: k actually used (min(k, n))
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

// ---- Building blocks the reference and the fast path share (one implementation each) ----

// Throws tscope::Error (one line) when the head is unusable (null q, k or v; n < 1; d < 1) or
// attentionVariantProblem(params, head.n) is not empty.
void checkVariantInputs(const HeadQkv& head, const AttentionVariantParams& params);

// `count` draws of N(0, stddev^2) from the seeded Rng (Box-Muller), identical on every platform.
// The first c draws of a longer stream equal a stream of c draws (so more LSH rounds extend the
// earlier rounds' directions instead of redrawing them).
std::vector<float> seededNormals(uint64_t seed, size_t count, double stddev);

// One query row's softmax probabilities in double (scale 1 / sqrt(d)) over the keys j with
// visible(i, j): probs (n), 0 where not visible; a row with no visible key attends to its own key i
// only. The one masked softmax: maskedAttentionRows and the backward call it.
void maskedRowProbabilities(const HeadQkv& head, int i, const std::function<bool(int, int)>& visible, double* probs);

// Softmax attention (scale 1 / sqrt(d)) of query rows [rowBegin, rowEnd) over the keys j with
// visible(i, j), plain loops in double: out (rows, d), map (rows, n) or null. A row with no visible
// key attends to its own key i only.
void maskedAttentionRows(const HeadQkv& head, int rowBegin, int rowEnd, const std::function<bool(int, int)>& visible, float* out, float* map);

// Reformer's hashing (arXiv 2001.04451), rounds r = 0 .. rounds-1, each with b directions
// r_1..r_b ~ N(0, I) (round-major from `seed`): h(x) = argmax_i x.r_i (lowest i on a tie), the same
// directions for queries and keys. Per round the keys are sorted by (bucket, position) and cut into
// chunks of `chunk`; a query i is placed in that order at (its query bucket, i), i.e. before the
// first key that sorts after it, and takes that place's chunk. Query i sees key j when, in some
// round, both hash to the same bucket, j's chunk is the query's chunk or the one before, and j is
// visible (causal: j <= i). With b = 1 and chunk >= n every query sees every visible key (exact).
struct LshHashing {
  int rounds = 0, n = 0, chunk = 0;
  std::vector<int> queryBuckets;  // (rounds, n) bucket of query i
  std::vector<int> keyBuckets;    // (rounds, n) bucket of key j
  std::vector<int> sortedOrder;   // (rounds, n) key positions sorted by (bucket, position)
  std::vector<int> keyChunk;      // (rounds, n) chunk of key j: (its place in sortedOrder) / chunk
  std::vector<int> queryChunk;    // (rounds, n) chunk query i falls into
  bool sees(int query, int key, bool causal) const;
};
LshHashing lshHash(const HeadQkv& head, const AttentionVariantParams& params);

// Linformer's projections (arXiv 2006.04768): E and F (k, columns) row-major, k = min(projected, n).
// Pool: E = F, E_rj = 1 / |segment r| for j in segment r (else 0), columns = n, the segments cut
// from N = linformerPoolColumns(params, n) >= n columns (k = min(projected, N); the segments from n
// on are empty: rows of zeros, the one n ends in partial); `pooled` is set and every query uses each
// row renormalised over its visible columns (causal: j <= i; the mean of the visible part of the
// segment), a row with no visible column masked (weight 0). Gaussian: N(0, 1/k)
// from `seed`, columns = n (E first, then F, one stream). Learned: the caller's arrays (their first
// k rows; columns = linformerColumns >= n, of which the first n are used). Gaussian and learned rows
// are used as they are (causal: the running sums over j <= i).
struct LinformerProjections {
  int k = 0;
  int columns = 0;
  bool pooled = false;
  const float* E = nullptr;
  const float* F = nullptr;
  std::vector<float> owned;  // (2, k, n) Gaussian E and F, or (k, n) Pool's E = F, when not learned
};
// Pool's segments: segment r of n tokens cut into k (1 <= k <= n) is [start(r), start(r + 1)),
// start(r) = floor(r n / k) (r = 0 .. k; start(k) = n), every segment at least one token;
// linformerSegmentOf(j) is the segment holding token j.
int linformerSegmentStart(int r, int k, int n);
int linformerSegmentOf(int j, int k, int n);
LinformerProjections linformerProjections(const AttentionVariantParams& params, int n);
// N, the columns the Pool segments are cut from: params.linformerColumns when > 0, else n.
int linformerPoolColumns(const AttentionVariantParams& params, int n);

// Linformer's projected keys and values as running sums in double, what the reference and the
// backward share: after add(j) for the visible tokens j, keys, values (k, d) = sum_j E_rj k_j,
// F_rj v_j and keyWeight, valueWeight (k) = sum_j E_rj, F_rj. Row r of K' is keys_r / keyDivisor(r)
// (pooled: the visible weight, 0 = masked; else 1), of V' values_r / valueDivisor(r).
struct LinformerSums {
  LinformerSums(const HeadQkv& head, const LinformerProjections& projections);  // both outlive it
  void add(int j);
  double keyDivisor(int r) const { return proj->pooled ? keyWeight[r] : 1.0; }
  double valueDivisor(int r) const { return proj->pooled ? valueWeight[r] : 1.0; }
  // p (k) = softmax_r(q_i . K'_r / sqrt d) over the unmasked rows (masked rows: 0).
  void probabilities(int i, double* p) const;

  const HeadQkv* head;
  const LinformerProjections* proj;
  std::vector<double> keys, values;            // (k, d) each
  std::vector<double> keyWeight, valueWeight;  // (k) each
};

// Performer's FAVOR+ positive random features (arXiv 2009.14794): w_r ~ N(0, I), (m, d) from seed.
std::vector<float> performerDirections(const AttentionVariantParams& params, int d);
// log phi_r(x) = w_r . x' - |x'|^2 / 2 - log(m) / 2, x' = x / d^(1/4), for r < m, into logPhi (m).
// (phi(q) . phi(k) is then an unbiased estimate of exp(q.k / sqrt d).)
void performerLogFeatures(const float* x, const float* directions, int m, int d, double* logPhi);

// The kernel variants' log features in double: logQ, logK (n, f) = log phi of each query and key
// (linear: log(elu + 1), f = d; performer: performerLogFeatures, f = features). Returns f.
int kernelLogFeatures(const HeadQkv& head, const AttentionVariantParams& params, std::vector<double>& logQ, std::vector<double>& logK);

// Linear attention's feature map (Katharopoulos et al., arXiv 2006.16236): elu(x) + 1 > 0.
template <class Real>
Real eluPlusOne(Real x) {
  return x > 0 ? x + Real(1) : static_cast<Real>(std::exp(x));
}

// The bytes of exact attention's (n, n) float scores, n * n * 4 in size_t (past 2^31 from n = 23171):
// what the naive fast path allocates.
size_t naiveScoresBytes(int n);

// Exact attention of query rows [rowBegin, rowEnd) only (out (rows, d), map (rows, n) or null):
// exactHeadAttention is this over all rows; the flash stepper takes its tile's rows.
void exactAttentionRows(const HeadQkv& head, int rowBegin, int rowEnd, float* out, float* map);

// ---- Backward (efficient_attention_backward.cpp), so models train with the variants ----

// "" when attentionVariantBackward supports params, else one line saying why (LSH; Linformer with
// learned E and F, whose own gradients it does not give).
std::string attentionVariantBackwardProblem(const AttentionVariantParams& params);
// The gradient of one head's variant attention (the function attentionVariantReference and
// attentionVariantFast compute): given dout (n, d) = dL/d out, ADDS dL/dq, dL/dk, dL/dv (n, d each,
// row-major) into dq, dk, dv (the += convention of model/train/backward.h). In double inside;
// memory linear in n except for exact, flash and window (O(n) per query row, O(n d) in all).
// Throws tscope::Error (one line) when attentionVariantBackwardProblem(params) is not "" or the
// head or knobs are unusable (checkVariantInputs).
void attentionVariantBackward(const HeadQkv& head, const AttentionVariantParams& params, const float* dout, float* dq, float* dk, float* dv);

}  // namespace tscope

// The shared part of the efficient-attention variants: the one exact
// (masked) softmax attention in double that every variant is compared with, FlashAttention's online
// softmax update, and the seeded hashing, projections and random features both paths use.
#include "model/nn/efficient_attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/generate/sampling.h"

namespace tscope {

void checkVariantInputs(const HeadQkv& head, const AttentionVariantParams& params) {
  if (head.q == nullptr || head.k == nullptr || head.v == nullptr) throw Error("attention head needs q, k and v (one is null)");
  if (head.d < 1) throw Error("attention head dimension d must be >= 1, not " + std::to_string(head.d));
  std::string problem = attentionVariantProblem(params, head.n);
  if (!problem.empty()) throw Error(problem);
}

std::vector<float> seededNormals(uint64_t seed, size_t count, double stddev) {
  Rng rng(seed);
  std::vector<float> draws(count);
  for (float& x : draws) x = static_cast<float>(stddev * rng.normal());
  return draws;
}

void maskedRowProbabilities(const HeadQkv& head, int i, const std::function<bool(int, int)>& visible, double* probs) {
  const int n = head.n, d = head.d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const float* qi = head.q + static_cast<size_t>(i) * d;
  bool anyVisible = false;
  for (int j = 0; j < n; ++j) {  // probs first holds the scaled scores; -inf = not visible
    probs[j] = -std::numeric_limits<double>::infinity();
    if (!visible(i, j)) continue;
    anyVisible = true;
    const float* kj = head.k + static_cast<size_t>(j) * d;
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += static_cast<double>(qi[c]) * kj[c];
    probs[j] = dot * scale;
  }
  if (!anyVisible) probs[i] = 0;  // no visible key: itself only
  softmax(std::span<const double>(probs, n), std::span<double>(probs, n));
}

void maskedAttentionRows(const HeadQkv& head, int rowBegin, int rowEnd, const std::function<bool(int, int)>& visible, float* out, float* map) {
  const int n = head.n, d = head.d;
  std::vector<double> probs(static_cast<size_t>(n));  // (n) this row's probabilities
  std::vector<double> acc(static_cast<size_t>(d));
  for (int i = rowBegin; i < rowEnd; ++i) {
    maskedRowProbabilities(head, i, visible, probs.data());
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < n; ++j) {
      const double p = probs[j];
      if (map != nullptr) map[static_cast<size_t>(i - rowBegin) * n + j] = static_cast<float>(p);
      if (p == 0) continue;
      const float* vj = head.v + static_cast<size_t>(j) * d;
      for (int c = 0; c < d; ++c) acc[c] += p * vj[c];
    }
    for (int c = 0; c < d; ++c) out[static_cast<size_t>(i - rowBegin) * d + c] = static_cast<float>(acc[c]);
  }
}

void exactAttentionRows(const HeadQkv& head, int rowBegin, int rowEnd, float* out, float* map) {
  const bool causal = head.causal;
  maskedAttentionRows(
      head, rowBegin, rowEnd, [causal](int i, int j) { return !causal || j <= i; }, out, map);
}

void exactHeadAttention(const HeadQkv& head, float* out, float* map) { exactAttentionRows(head, 0, head.n, out, map); }

void onlineSoftmaxUpdate(float& m, float& l, float* o, const float* s, const float* vTile, int Bc, int d) {
  float tileMax = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < Bc; ++j) tileMax = std::max(tileMax, s[j]);
  const float mNew = std::max(m, tileMax);
  if (mNew == -std::numeric_limits<float>::infinity()) return;  // nothing visible yet: the state stays empty
  const float rescale = std::exp(m - mNew);                     // 0 when m was -inf
  l *= rescale;
  for (int c = 0; c < d; ++c) o[c] *= rescale;
  for (int j = 0; j < Bc; ++j) {
    if (s[j] == -std::numeric_limits<float>::infinity()) continue;
    const float p = std::exp(s[j] - mNew);
    l += p;
    const float* vj = vTile + static_cast<size_t>(j) * d;
    for (int c = 0; c < d; ++c) o[c] += p * vj[c];
  }
  m = mNew;
}

VariantError compareWithExact(const HeadQkv& head, const VariantResult& variant) {
  const int n = head.n, d = head.d;
  std::vector<float> out(static_cast<size_t>(n) * d), map(static_cast<size_t>(n) * n);
  exactHeadAttention(head, out.data(), map.data());
  VariantError error;
  error.rowError.assign(static_cast<size_t>(n), 0.0f);
  for (int i = 0; i < n; ++i) {
    double rowSum = 0;
    for (int j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i) * n + j;
      rowSum += std::fabs(static_cast<double>(variant.map[at]) - map[at]);
    }
    error.rowError[i] = static_cast<float>(rowSum);
    error.meanRowError += rowSum / n;
  }
  double diff = 0, norm = 0;
  for (size_t x = 0; x < out.size(); ++x) {
    diff += (static_cast<double>(variant.out[x]) - out[x]) * (static_cast<double>(variant.out[x]) - out[x]);
    norm += static_cast<double>(out[x]) * out[x];
  }
  error.outRelError = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return error;
}

bool LshHashing::sees(int query, int key, bool causal) const {
  if (causal && key > query) return false;
  for (int r = 0; r < rounds; ++r) {
    const size_t row = static_cast<size_t>(r) * n;
    if (keyBuckets[row + key] != queryBuckets[row + query]) continue;
    const int gap = queryChunk[row + query] - keyChunk[row + key];
    if (gap == 0 || gap == 1) return true;
  }
  return false;
}

LshHashing lshHash(const HeadQkv& head, const AttentionVariantParams& params) {
  const int n = head.n, d = head.d, b = params.buckets;
  LshHashing h;
  h.rounds = params.rounds;
  h.n = n;
  h.chunk = params.chunk;
  const size_t cells = static_cast<size_t>(h.rounds) * n;
  h.queryBuckets.resize(cells);
  h.keyBuckets.resize(cells);
  h.sortedOrder.resize(cells);
  h.keyChunk.resize(cells);
  h.queryChunk.resize(cells);
  const std::vector<float> directions = seededNormals(params.seed, static_cast<size_t>(h.rounds) * b * d, 1.0);  // (rounds, b, d)
  auto bucketOf = [&](const float* x, const float* dirs) {                                                       // argmax_i x.r_i
    int best = 0;
    double bestDot = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < b; ++i) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += static_cast<double>(x[c]) * dirs[static_cast<size_t>(i) * d + c];
      if (dot > bestDot) best = i, bestDot = dot;
    }
    return best;
  };
  for (int r = 0; r < h.rounds; ++r) {
    const size_t row = static_cast<size_t>(r) * n;
    const float* dirs = directions.data() + static_cast<size_t>(r) * b * d;
    int* qb = h.queryBuckets.data() + row;
    int* kb = h.keyBuckets.data() + row;
    int* order = h.sortedOrder.data() + row;
    for (int t = 0; t < n; ++t) {
      qb[t] = bucketOf(head.q + static_cast<size_t>(t) * d, dirs);
      kb[t] = bucketOf(head.k + static_cast<size_t>(t) * d, dirs);
      order[t] = t;
    }
    std::stable_sort(order, order + n, [kb](int x, int y) { return kb[x] < kb[y]; });  // ties keep position order
    for (int place = 0; place < n; ++place) h.keyChunk[row + order[place]] = place / h.chunk;
    for (int i = 0; i < n; ++i) {
      // The query's place: the first key sorting after (qb[i], i), found by binary search.
      const int place =
          static_cast<int>(std::partition_point(order, order + n, [&](int j) { return kb[j] < qb[i] || (kb[j] == qb[i] && j < i); }) - order);
      h.queryChunk[row + i] = place / h.chunk;
    }
  }
  return h;
}

int linformerSegmentStart(int r, int k, int n) { return static_cast<int>(static_cast<int64_t>(r) * n / k); }

// The largest r with floor(r n / k) <= j, i.e. r n < (j + 1) k.
int linformerSegmentOf(int j, int k, int n) { return static_cast<int>((static_cast<int64_t>(j + 1) * k - 1) / n); }

int linformerPoolColumns(const AttentionVariantParams& params, int n) { return params.linformerColumns > 0 ? params.linformerColumns : n; }

LinformerProjections linformerProjections(const AttentionVariantParams& params, int n) {
  LinformerProjections p;
  p.k = std::min(params.projected, n);
  if (params.linformerE != nullptr) {
    p.columns = params.linformerColumns;
    p.E = params.linformerE;
    p.F = params.linformerF;
    return p;
  }
  p.columns = n;
  if (params.linformerProjection == LinformerProjection::Pool) {
    const int N = linformerPoolColumns(params, n);
    p.k = std::min(params.projected, N);
    p.pooled = true;
    p.owned.assign(static_cast<size_t>(p.k) * n, 0.0f);
    for (int r = 0; r < p.k; ++r) {
      const int begin = linformerSegmentStart(r, p.k, N), end = linformerSegmentStart(r + 1, p.k, N);
      if (begin >= n) break;  // this and the later segments are empty: rows of zeros (masked)
      std::fill(p.owned.begin() + static_cast<ptrdiff_t>(r) * n + begin, p.owned.begin() + static_cast<ptrdiff_t>(r) * n + std::min(end, n),
                1.0f / static_cast<float>(end - begin));
    }
    p.E = p.F = p.owned.data();
    return p;
  }
  const size_t size = static_cast<size_t>(p.k) * n;
  p.owned = seededNormals(params.seed, 2 * size, 1.0 / std::sqrt(static_cast<double>(p.k)));
  p.E = p.owned.data();
  p.F = p.owned.data() + size;
  return p;
}

LinformerSums::LinformerSums(const HeadQkv& head, const LinformerProjections& projections)
    : head(&head),
      proj(&projections),
      keys(static_cast<size_t>(projections.k) * head.d, 0.0),
      values(static_cast<size_t>(projections.k) * head.d, 0.0),
      keyWeight(static_cast<size_t>(projections.k), 0.0),
      valueWeight(static_cast<size_t>(projections.k), 0.0) {}

void LinformerSums::add(int j) {
  const int d = head->d;
  for (int r = 0; r < proj->k; ++r) {
    const double e = proj->E[static_cast<size_t>(r) * proj->columns + j], f = proj->F[static_cast<size_t>(r) * proj->columns + j];
    keyWeight[r] += e;
    valueWeight[r] += f;
    for (int c = 0; c < d; ++c) {
      keys[static_cast<size_t>(r) * d + c] += e * head->k[static_cast<size_t>(j) * d + c];
      values[static_cast<size_t>(r) * d + c] += f * head->v[static_cast<size_t>(j) * d + c];
    }
  }
}

void LinformerSums::probabilities(int i, double* p) const {
  const int k = proj->k, d = head->d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (int r = 0; r < k; ++r) {
    p[r] = -std::numeric_limits<double>::infinity();
    if (keyDivisor(r) == 0) continue;
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += static_cast<double>(head->q[static_cast<size_t>(i) * d + c]) * keys[static_cast<size_t>(r) * d + c];
    p[r] = dot / keyDivisor(r) * scale;
  }
  softmax(std::span<const double>(p, k), std::span<double>(p, k));
}

int kernelLogFeatures(const HeadQkv& head, const AttentionVariantParams& params, std::vector<double>& logQ, std::vector<double>& logK) {
  const int n = head.n, d = head.d;
  if (params.variant == AttentionVariant::Linear) {
    const size_t cells = static_cast<size_t>(n) * d;
    logQ.resize(cells);
    logK.resize(cells);
    for (size_t x = 0; x < cells; ++x) {
      logQ[x] = std::log(eluPlusOne(static_cast<double>(head.q[x])));
      logK[x] = std::log(eluPlusOne(static_cast<double>(head.k[x])));
    }
    return d;
  }
  const int m = params.features;
  const std::vector<float> directions = performerDirections(params, d);
  logQ.resize(static_cast<size_t>(n) * m);
  logK.resize(static_cast<size_t>(n) * m);
  for (int t = 0; t < n; ++t) {
    performerLogFeatures(head.q + static_cast<size_t>(t) * d, directions.data(), m, d, logQ.data() + static_cast<size_t>(t) * m);
    performerLogFeatures(head.k + static_cast<size_t>(t) * d, directions.data(), m, d, logK.data() + static_cast<size_t>(t) * m);
  }
  return m;
}

std::vector<float> performerDirections(const AttentionVariantParams& params, int d) {
  return seededNormals(params.seed, static_cast<size_t>(params.features) * d, 1.0);
}

void performerLogFeatures(const float* x, const float* directions, int m, int d, double* logPhi) {
  const double shrink = 1.0 / std::pow(static_cast<double>(d), 0.25);  // x' = x / d^(1/4)
  double squares = 0;
  for (int c = 0; c < d; ++c) squares += static_cast<double>(x[c]) * x[c];
  const double offset = -0.5 * squares * shrink * shrink - 0.5 * std::log(static_cast<double>(m));
  for (int r = 0; r < m; ++r) {
    const float* w = directions + static_cast<size_t>(r) * d;
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += static_cast<double>(w[c]) * x[c];
    logPhi[r] = dot * shrink + offset;
  }
}

}  // namespace tscope

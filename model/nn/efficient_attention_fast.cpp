// The fast CPU paths of the efficient-attention variants, one head, single-threaded, in float.
// Every variant but Exact keeps a working set linear in n (Exact builds the (n, n) scores with
// Eigen on purpose: the naive algorithm). Each returns the peak bytes of its own allocations.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/nn/efficient_attention.h"

namespace tscope {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

template <class T>
size_t bytesOf(const std::vector<T>& buffer) {
  return buffer.capacity() * sizeof(T);
}

float scaleOf(int d) { return 1.0f / std::sqrt(static_cast<float>(d)); }

// x (count) <- softmax(x); -inf entries become 0.
void softmaxInPlace(float* x, int count) {
  Eigen::Map<Eigen::ArrayXf> row(x, count);
  row = (row - row.maxCoeff()).exp();  // Eigen's vectorised exp (-inf gives 0 or a denormal)
  row /= row.sum();
}

// Naive: scores (n, n) = q k^T / sqrt d, masked, row softmax, out = P v.
size_t exactFast(const HeadQkv& head, float* out) {
  const int n = head.n, d = head.d;
  RowMatrix scores = ConstRowMap(head.q, n, d) * ConstRowMap(head.k, n, d).transpose() * scaleOf(d);  // (n, n)
  for (int i = 0; i < n; ++i) {
    float* row = scores.data() + static_cast<size_t>(i) * n;
    if (head.causal) std::fill(row + i + 1, row + n, kMinusInf);
    softmaxInPlace(row, n);
  }
  RowMap(out, n, d).noalias() = scores * ConstRowMap(head.v, n, d);
  return naiveScoresBytes(n);
}

// FlashAttention (arXiv 2205.14135, loop order of FlashAttention-2, 2307.08691): for each query
// tile of Br rows, stream the key/value tiles of Bc rows, fold each into the running (m, l, O) with
// onlineSoftmaxUpdate, divide by l at the end. Causal: a key tile that starts after the query
// tile's last row is skipped entirely.
size_t flashFast(const HeadQkv& head, int tile, float* out) {
  const int n = head.n, d = head.d, B = std::min(tile, n);
  std::vector<float> m(B), l(B), o(static_cast<size_t>(B) * d), scores(static_cast<size_t>(B) * B);  // (Br) (Br) (Br, d) (Br, Bc)
  const float scale = scaleOf(d);
  for (int qBegin = 0; qBegin < n; qBegin += B) {
    const int qEnd = std::min(n, qBegin + B), rows = qEnd - qBegin;
    std::fill(m.begin(), m.end(), kMinusInf);
    std::fill(l.begin(), l.end(), 0.0f);
    std::fill(o.begin(), o.end(), 0.0f);
    for (int kBegin = 0; kBegin < n; kBegin += B) {
      if (head.causal && kBegin > qEnd - 1) break;  // this and every later tile is in the future
      const int kEnd = std::min(n, kBegin + B), cols = kEnd - kBegin;
      RowMap s(scores.data(), rows, cols);
      s.noalias() = ConstRowMap(head.q + static_cast<size_t>(qBegin) * d, rows, d) *
                    ConstRowMap(head.k + static_cast<size_t>(kBegin) * d, cols, d).transpose() * scale;
      for (int r = 0; r < rows; ++r) {
        if (head.causal)
          for (int j = std::max(kBegin, qBegin + r + 1); j < kEnd; ++j) s(r, j - kBegin) = kMinusInf;
        onlineSoftmaxUpdate(m[r], l[r], o.data() + static_cast<size_t>(r) * d, scores.data() + static_cast<size_t>(r) * cols,
                            head.v + static_cast<size_t>(kBegin) * d, cols, d);
      }
    }
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < d; ++c) out[static_cast<size_t>(qBegin + r) * d + c] = o[static_cast<size_t>(r) * d + c] / l[r];
  }
  return bytesOf(m) + bytesOf(l) + bytesOf(o) + bytesOf(scores);
}

// Softmax over the listed keys of query i into out_i; `scores` holds at least keys.size() floats.
void attendToKeys(const HeadQkv& head, int i, const int* keys, int count, float* scores, float* out) {
  const int d = head.d;
  const float scale = scaleOf(d);
  const ConstRowMap qi(head.q + static_cast<size_t>(i) * d, 1, d);
  for (int x = 0; x < count; ++x) scores[x] = (qi * ConstRowMap(head.k + static_cast<size_t>(keys[x]) * d, 1, d).transpose())(0, 0) * scale;
  softmaxInPlace(scores, count);
  RowMap o(out + static_cast<size_t>(i) * d, 1, d);
  o.setZero();
  for (int x = 0; x < count; ++x) o += scores[x] * ConstRowMap(head.v + static_cast<size_t>(keys[x]) * d, 1, d);
}

// Sliding window: query i attends to the keys of its window only.
size_t windowFast(const HeadQkv& head, int window, float* out) {
  const int n = head.n;
  const int span = static_cast<int>(std::min<long>(n, head.causal ? window : 2L * window - 1));
  std::vector<int> keys(span);
  std::vector<float> scores(span);
  for (int i = 0; i < n; ++i) {
    const int first = std::max(0, i - window + 1);
    const int last = head.causal ? i : static_cast<int>(std::min<long>(n - 1, static_cast<long>(i) + window - 1));
    for (int j = first; j <= last; ++j) keys[j - first] = j;
    attendToKeys(head, i, keys.data(), last - first + 1, scores.data(), out);
  }
  return bytesOf(keys) + bytesOf(scores);
}

// LSH: per round the query's own and previous chunk of the sorted order, keys of its bucket only;
// the union over rounds (sorted, duplicates removed), then the softmax over it.
size_t lshFast(const HeadQkv& head, const AttentionVariantParams& params, float* out) {
  const int n = head.n, d = head.d, chunk = params.chunk;
  // While hashing: the directions (rounds, b, d) and stable_sort's buffer (n) beside the result.
  const size_t hashingBytes = (static_cast<size_t>(params.rounds) * params.buckets * d + static_cast<size_t>(n)) * sizeof(float);
  const LshHashing h = lshHash(head, params);
  const size_t tables = bytesOf(h.queryBuckets) + bytesOf(h.keyBuckets) + bytesOf(h.sortedOrder) + bytesOf(h.keyChunk) + bytesOf(h.queryChunk);
  const size_t most = std::min(static_cast<size_t>(params.rounds) * 2 * std::min(chunk, n), static_cast<size_t>(params.rounds) * n);
  std::vector<int> keys(most);
  std::vector<float> scores(most);
  for (int i = 0; i < n; ++i) {
    int count = 0;
    for (int r = 0; r < h.rounds; ++r) {
      const size_t row = static_cast<size_t>(r) * n;
      const int bucket = h.queryBuckets[row + i], c = h.queryChunk[row + i];
      const int from = std::max(0, (c - 1) * chunk), to = static_cast<int>(std::min<long>(n, static_cast<long>(c + 1) * chunk));
      for (int place = from; place < to; ++place) {
        const int j = h.sortedOrder[row + place];
        if (h.keyBuckets[row + j] == bucket && (!head.causal || j <= i)) keys[count++] = j;
      }
    }
    std::sort(keys.begin(), keys.begin() + count);
    count = static_cast<int>(std::unique(keys.begin(), keys.begin() + count) - keys.begin());
    if (count == 0) keys[count++] = i;  // no key in its buckets: itself only
    attendToKeys(head, i, keys.data(), count, scores.data(), out);
  }
  return tables + std::max(hashingBytes, bytesOf(keys) + bytesOf(scores));
}

// Linformer with the Pool projection, the paper's parallel form: K', V' (k, d) the segment means,
// scores P (n, k) = Q K'^T / sqrt d in one product, row softmax, out = P V'. The segments are cut
// from N >= n columns: the first kn hold tokens (the last of them may be partial), the rest are
// empty and masked. Causal: query i in segment s sees the whole segments r < s and the visible part
// of its own, whose running means (sums over start(s) .. i) replace column s; the rows r > s are masked.
size_t linformerPoolFast(const HeadQkv& head, int k, int N, float* out) {
  const int n = head.n, d = head.d;
  const int kn = linformerSegmentOf(n - 1, k, N) + 1;                                                   // segments with at least one of the n tokens
  std::vector<float> keys(static_cast<size_t>(k) * d, 0.0f), values(static_cast<size_t>(k) * d, 0.0f);  // (k, d) each
  std::vector<float> scores(static_cast<size_t>(n) * k);                                                // (n, k)
  RowMap K(keys.data(), k, d), V(values.data(), k, d), P(scores.data(), n, k);
  for (int r = 0; r < kn; ++r) {
    const int begin = linformerSegmentStart(r, k, N), rows = std::min(linformerSegmentStart(r + 1, k, N), n) - begin;
    K.row(r) = ConstRowMap(head.k + static_cast<size_t>(begin) * d, rows, d).colwise().mean();
    V.row(r) = ConstRowMap(head.v + static_cast<size_t>(begin) * d, rows, d).colwise().mean();
  }
  const float scale = scaleOf(d);
  P.noalias() = ConstRowMap(head.q, n, d) * K.transpose() * scale;
  if (!head.causal) {
    for (int i = 0; i < n; ++i) {
      float* row = scores.data() + static_cast<size_t>(i) * k;
      softmaxInPlace(row, kn);
      std::fill(row + kn, row + k, 0.0f);  // the empty segments
    }
    RowMap(out, n, d).noalias() = P * V;
    return bytesOf(keys) + bytesOf(values) + bytesOf(scores);
  }
  std::vector<float> partial(2 * static_cast<size_t>(d));  // (2, d) the running key and value sums of the query's segment
  Eigen::Map<Eigen::RowVectorXf> partialK(partial.data(), d), partialV(partial.data() + d, d);
  for (int i = 0; i < n; ++i) {
    const int s = linformerSegmentOf(i, k, N), begin = linformerSegmentStart(s, k, N);
    if (i == begin) partial.assign(partial.size(), 0.0f);
    partialK += ConstRowMap(head.k + static_cast<size_t>(i) * d, 1, d);
    partialV += ConstRowMap(head.v + static_cast<size_t>(i) * d, 1, d);
    const float count = static_cast<float>(i - begin + 1);
    float* row = scores.data() + static_cast<size_t>(i) * k;
    row[s] = Eigen::Map<const Eigen::RowVectorXf>(head.q + static_cast<size_t>(i) * d, d).dot(partialK) / count * scale;
    softmaxInPlace(row, s + 1);  // rows r > s: masked
    RowMap(out + static_cast<size_t>(i) * d, 1, d).noalias() = P.row(i).head(s) * V.topRows(s) + (row[s] / count) * partialV;
  }
  return bytesOf(keys) + bytesOf(values) + bytesOf(scores) + bytesOf(partial);
}

// Linformer with the Gaussian or learned projections, causal by running sums K'_i = sum_{j<=i}
// E[:, j] k_j, V'_i = sum_{j<=i} F[:, j] v_j (non-causal: the full sums, the paper's K' = E K,
// V' = F V); out_i = softmax(q_i K'^T / sqrt d) V'.
size_t linformerFast(const HeadQkv& head, const AttentionVariantParams& params, float* out) {
  if (params.linformerE == nullptr && params.linformerProjection == LinformerProjection::Pool) {
    const int N = linformerPoolColumns(params, head.n);
    return linformerPoolFast(head, std::min(params.projected, N), N, out);
  }
  const int n = head.n, d = head.d;
  const LinformerProjections proj = linformerProjections(params, n);
  const int k = proj.k;
  std::vector<float> keys(static_cast<size_t>(k) * d, 0.0f), values(static_cast<size_t>(k) * d, 0.0f), p(k);  // (k, d) (k, d) (k)
  RowMap K(keys.data(), k, d), V(values.data(), k, d);
  const Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>> E(proj.E, k, n, Eigen::OuterStride<>(proj.columns));
  const Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>> F(proj.F, k, n, Eigen::OuterStride<>(proj.columns));
  if (!head.causal) {
    K.noalias() = E * ConstRowMap(head.k, n, d);
    V.noalias() = F * ConstRowMap(head.v, n, d);
  }
  const float scale = scaleOf(d);
  for (int i = 0; i < n; ++i) {
    if (head.causal) {
      K.noalias() += E.col(i) * ConstRowMap(head.k + static_cast<size_t>(i) * d, 1, d);
      V.noalias() += F.col(i) * ConstRowMap(head.v + static_cast<size_t>(i) * d, 1, d);
    }
    Eigen::Map<Eigen::RowVectorXf> pi(p.data(), k);
    pi.noalias() = ConstRowMap(head.q + static_cast<size_t>(i) * d, 1, d) * K.transpose() * scale;
    softmaxInPlace(p.data(), k);
    RowMap(out + static_cast<size_t>(i) * d, 1, d).noalias() = pi * V;
  }
  return proj.owned.capacity() * sizeof(float) + bytesOf(keys) + bytesOf(values) + bytesOf(p);
}

// Kernel attention in the RNN form: S = sum_j phi(k_j) v_j^T (f, d), z = sum_j phi(k_j) (f),
// out_i = phi(q_i).S / phi(q_i).z, over j <= i when causal. `features(x, phi)` writes phi(x)
// divided by e^shift and returns the shift; the key shifts are folded into a running one (state
// rescaled when it grows, as in the online softmax), the query's cancels in the ratio.
template <class Features>
size_t kernelFast(const HeadQkv& head, int f, Features&& features, float* out) {
  const int n = head.n, d = head.d;
  std::vector<float> state(static_cast<size_t>(f) * d, 0.0f), z(f, 0.0f), phiQ(f), phiK(f);
  RowMap S(state.data(), f, d);
  Eigen::Map<Eigen::RowVectorXf> Z(z.data(), f), pq(phiQ.data(), f), pk(phiK.data(), f);
  double keyShift = -std::numeric_limits<double>::infinity();
  auto addKey = [&](int j) {
    const double shift = features(head.k + static_cast<size_t>(j) * d, phiK.data());
    if (shift > keyShift) {
      const float rescale = static_cast<float>(std::exp(keyShift - shift));  // 0 before the first key
      S *= rescale;
      Z *= rescale;
      keyShift = shift;
    }
    pk *= static_cast<float>(std::exp(shift - keyShift));
    S.noalias() += pk.transpose() * ConstRowMap(head.v + static_cast<size_t>(j) * d, 1, d);
    Z += pk;
  };
  if (!head.causal)
    for (int j = 0; j < n; ++j) addKey(j);
  for (int i = 0; i < n; ++i) {
    if (head.causal) addKey(i);
    features(head.q + static_cast<size_t>(i) * d, phiQ.data());
    RowMap(out + static_cast<size_t>(i) * d, 1, d).noalias() = (pq * S) / pq.dot(Z);
  }
  return bytesOf(state) + bytesOf(z) + bytesOf(phiQ) + bytesOf(phiK);
}

size_t linearFast(const HeadQkv& head, float* out) {
  const int d = head.d;
  return kernelFast(
      head, d,
      [d](const float* x, float* phi) {
        for (int c = 0; c < d; ++c) phi[c] = eluPlusOne(x[c]);
        return 0.0;
      },
      out);
}

size_t performerFast(const HeadQkv& head, const AttentionVariantParams& params, float* out) {
  const int d = head.d, m = params.features;
  const std::vector<float> directions = performerDirections(params, d);  // (m, d)
  std::vector<double> logPhi(m);
  const size_t kernelBytes = kernelFast(
      head, m,
      [&](const float* x, float* phi) {
        performerLogFeatures(x, directions.data(), m, d, logPhi.data());
        const double shift = *std::max_element(logPhi.begin(), logPhi.end());
        for (int r = 0; r < m; ++r) phi[r] = static_cast<float>(std::exp(logPhi[r] - shift));
        return shift;
      },
      out);
  return kernelBytes + bytesOf(directions) + bytesOf(logPhi);
}

}  // namespace

size_t naiveScoresBytes(int n) { return static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(float); }

size_t attentionVariantFast(const HeadQkv& head, const AttentionVariantParams& params, float* out) {
  checkVariantInputs(head, params);
  switch (params.variant) {
    case AttentionVariant::Exact: return exactFast(head, out);
    case AttentionVariant::Flash: return flashFast(head, params.tile, out);
    case AttentionVariant::Window: return windowFast(head, params.window, out);
    case AttentionVariant::Lsh: return lshFast(head, params, out);
    case AttentionVariant::Linformer: return linformerFast(head, params, out);
    case AttentionVariant::Linear: return linearFast(head, out);
    case AttentionVariant::Performer: return performerFast(head, params, out);
  }
  return 0;
}

}  // namespace tscope

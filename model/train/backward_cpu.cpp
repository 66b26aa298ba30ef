// The fast CPU backward ops (see backward.h): Eigen GEMMs for the matmuls and for attention, which
// recomputes its probabilities tile by tile (query tiles only touch the keys they can see, so a
// causal or windowed map skips its masked blocks). Work is split across OpenMP threads in static
// blocks, and every cross-row sum (weight and bias gradients) goes through per-thread partials added
// in thread order, so results are bitwise repeatable for a given thread count.
#include <omp.h>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // erf, for the exact GELU
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/train/backward.h"
#include "model/core/cpu_threads.h"
#include "model/core/error.h"

namespace tscope {
namespace {

using Index = Eigen::Index;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;
using StridedConstMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;

constexpr int kQueryTile = 32;                // attention query rows per tile
constexpr Index kElementwiseChunk = 2048;     // elementwise ops work in L1-sized chunks
constexpr double kMinParallelWork = 1 << 16;  // multiply-adds below which a GEMM stays on one thread

// The sum of term(i) for i < n in an order fixed by n alone: 16 interleaved partial sums (which
// the compiler vectorises without reassociating), then added in order. Eigen's vectorised sums
// (and OpenMP simd reductions, when the compiler peels for alignment) start at the first aligned
// element, so their rounding depends on where the data lies and two runs could differ in the last bit.
template <typename Term>
float fixedOrderSum(int n, Term&& term) {
  float lanes[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int lane = 0; lane < 16; ++lane) lanes[lane] += term(i + lane);
  float tail = 0;
  for (; i < n; ++i) tail += term(i);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum + tail;
}

// [begin, end) of block `part` when `count` items are split into `parts` nearly equal blocks.
Index blockBegin(Index count, int part, int parts) { return count * part / parts; }

// dst += lhs . rhs, with dst's rows (or columns, when it is wider than tall) split across
// the threads; each thread runs one Eigen GEMM on its block (Eigen does not nest inside a parallel
// region). Small products run on the calling thread.
template <typename Dst, typename Lhs, typename Rhs>
void productAdd(Dst dst, const Lhs& lhs, const Rhs& rhs, int threads) {
  const Index M = dst.rows(), N = dst.cols(), K = lhs.cols();
  if (M == 0 || N == 0) return;
  if (threads <= 1 || static_cast<double>(M) * N * K < kMinParallelWork) {
    dst.noalias() += lhs * rhs;
    return;
  }
  const bool splitRows = M >= N;
#pragma omp parallel num_threads(threads)
  {
    const int id = omp_get_thread_num(), count = omp_get_num_threads();
    const Index extent = splitRows ? M : N;
    const Index begin = blockBegin(extent, id, count), size = blockBegin(extent, id + 1, count) - begin;
    if (size > 0) {
      if (splitRows) dst.middleRows(begin, size).noalias() += lhs.middleRows(begin, size) * rhs;
      else dst.middleCols(begin, size).noalias() += lhs * rhs.middleCols(begin, size);
    }
  }
}

// sums (N) += column sums of m (rows, N), in double, columns split across threads.
void addColumnSums(float* sums, const float* m, int rows, int N, int threads) {
  const bool parallel = static_cast<double>(rows) * N > kMinParallelWork;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int id = omp_get_thread_num(), count = omp_get_num_threads();
    const int n0 = static_cast<int>(blockBegin(N, id, count)), n1 = static_cast<int>(blockBegin(N, id + 1, count));
    std::vector<double> acc(static_cast<size_t>(std::max(0, n1 - n0)), 0.0);
    for (int r = 0; r < rows; ++r) {
      const float* row = m + static_cast<size_t>(r) * N + n0;
#pragma omp simd
      for (int n = 0; n < n1 - n0; ++n) acc[n] += row[n];
    }
    for (int n = n0; n < n1; ++n) sums[n] += static_cast<float>(acc[n - n0]);
  }
}

// Per-thread partial sums of C-vectors (weight gradients of the norms), added in thread order.
struct Partials {
  Partials(int threads, int C, int vectors) : C(C), vectors(vectors), data(static_cast<size_t>(threads) * vectors * C, 0.0) {}
  double* of(int thread, int vector) { return data.data() + (static_cast<size_t>(thread) * vectors + vector) * C; }
  void addTo(float* out, int vector, int threads) {
    if (!out) return;
    for (int c = 0; c < C; ++c) {
      double sum = 0;
      for (int t = 0; t < threads; ++t) sum += of(t, vector)[c];
      out[c] += static_cast<float>(sum);
    }
  }
  int C, vectors;
  std::vector<double> data;
};

// RoPE's rotation angles for positions 0..T-1 as cos/sin tables (T, D/2), computed as
// applyRope computes them (positional.cpp, with the shape's pair frequencies), to turn gradients
// back by the same angles.
struct RopeTables {
  RopeTables(int T, const AttentionShape& s) : pairs(s.headDim / 2), cosine(static_cast<size_t>(T) * pairs), sine(cosine.size()) {
    const std::vector<double> frequencies = ropePairFrequencies(s);
    for (int i = 0; i < pairs; ++i) {
      const double frequency = frequencies[i];
      for (int t = 0; t < T; ++t) {
        cosine[static_cast<size_t>(t) * pairs + i] = static_cast<float>(std::cos(t * frequency));
        sine[static_cast<size_t>(t) * pairs + i] = static_cast<float>(std::sin(t * frequency));
      }
    }
  }
  int pairs;
  std::vector<float> cosine, sine;  // (T, D/2)
};

// dst rows (stride dstStride) += src (rows, D) rows at positions pos0.., turned back by RoPE's
// angle when rope is set: the forward rotated (x0, x1) by R(theta), so the gradient of the
// unrotated pair is R(theta)^T (d0, d1) = (d0 cos + d1 sin, -d0 sin + d1 cos).
void addHeadGradient(float* dst, int dstStride, const float* src, int rows, int D, int pos0, const RopeTables* rope) {
  for (int t = 0; t < rows; ++t) {
    float* d = dst + static_cast<size_t>(t) * dstStride;
    const float* s = src + static_cast<size_t>(t) * D;
    if (!rope) {
#pragma omp simd
      for (int c = 0; c < D; ++c) d[c] += s[c];
      continue;
    }
    const float* cosine = rope->cosine.data() + static_cast<size_t>(pos0 + t) * rope->pairs;
    const float* sine = rope->sine.data() + static_cast<size_t>(pos0 + t) * rope->pairs;
    for (int i = 0; i < D / 2; ++i) {
      const float d0 = s[2 * i], d1 = s[2 * i + 1];
      d[2 * i] += d0 * cosine[i] + d1 * sine[i];
      d[2 * i + 1] += d1 * cosine[i] - d0 * sine[i];
    }
  }
}

// The keys a query at position p sees form one range [first, last] (AttentionShape::visible).
int firstVisible(const AttentionShape& s, int p) { return s.window > 0 ? std::max(0, p - s.window + 1) : 0; }
int lastVisible(const AttentionShape& s, int p, int T) {
  int last = s.causal ? p : T - 1;
  if (s.window > 0) last = std::min(last, p + s.window - 1);
  return last;
}

class CpuBackwardOps : public BackwardOps {
 public:
  explicit CpuBackwardOps(int threads) : threads_(resolveThreadCount(threads)) {
    // Small products run on the calling thread through Eigen's own GEMM, which would otherwise use
    // its (process-wide) default thread count; makeCpuBackend sets the same.
    Eigen::setNbThreads(threads_);
  }
  std::string name() const override { return "cpu"; }
  int threadCount() const override { return threads_; }

  void embed(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C) override {
    // A scatter of rows*C adds (~0.1 ms for a training batch): one thread, since tokens repeat
    // and a column split costs more in wake-ups than it saves.
    for (int r = 0; r < rows; ++r) {
      const float* g = dout + static_cast<size_t>(r) * C;
      float* token = dwte + static_cast<size_t>(tokens[r]) * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) token[c] += g[c];
      if (!dpositions) continue;
      float* position = dpositions + static_cast<size_t>(r % T) * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) position[c] += g[c];
    }
  }

  void layerNorm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                 float eps) override {
    Partials partials(threads_, C, 2);  // dweight, dbias
#pragma omp parallel num_threads(threads_)
    {
      const int id = omp_get_thread_num(), count = omp_get_num_threads();
      double* pw = partials.of(id, 0);
      double* pb = partials.of(id, 1);
      std::vector<float> xhat(static_cast<size_t>(C));
      for (int r = static_cast<int>(blockBegin(rows, id, count)); r < blockBegin(rows, id + 1, count); ++r) {
        const float* x = in + static_cast<size_t>(r) * C;
        const float* dy = dout + static_cast<size_t>(r) * C;
        const float mean = fixedOrderSum(C, [&](int c) { return x[c]; }) / static_cast<float>(C);
        const float squares = fixedOrderSum(C, [&](int c) { return (x[c] - mean) * (x[c] - mean); });
        const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(C) + eps);
#pragma omp simd
        for (int c = 0; c < C; ++c) {
          xhat[c] = (x[c] - mean) * rstd;
          pw[c] += static_cast<double>(dy[c] * xhat[c]);
          pb[c] += static_cast<double>(dy[c]);
        }
        // dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy * weight.
        const float sumG = fixedOrderSum(C, [&](int c) { return dy[c] * weight[c]; });
        const float sumGXhat = fixedOrderSum(C, [&](int c) { return dy[c] * weight[c] * xhat[c]; });
        const float meanG = sumG / static_cast<float>(C), meanGXhat = sumGXhat / static_cast<float>(C);
        float* dx = din + static_cast<size_t>(r) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) dx[c] += rstd * (dy[c] * weight[c] - meanG - xhat[c] * meanGXhat);
      }
    }
    partials.addTo(dweight, 0, threads_);
    partials.addTo(dbias, 1, threads_);
  }

  void rmsNorm(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps) override {
    Partials partials(threads_, C, 1);
#pragma omp parallel num_threads(threads_)
    {
      const int id = omp_get_thread_num(), count = omp_get_num_threads();
      double* pw = partials.of(id, 0);
      for (int r = static_cast<int>(blockBegin(rows, id, count)); r < blockBegin(rows, id + 1, count); ++r) {
        const float* x = in + static_cast<size_t>(r) * C;
        const float* dy = dout + static_cast<size_t>(r) * C;
        const float squares = fixedOrderSum(C, [&](int c) { return x[c] * x[c]; });
        const float sumGX = fixedOrderSum(C, [&](int c) { return dy[c] * weight[c] * x[c]; });
        const float rrms = 1.0f / std::sqrt(squares / static_cast<float>(C) + eps);
        // dx = rrms (g - x rrms^2 mean(g x)) with g = dy * weight.
        const float k = rrms * rrms * sumGX / static_cast<float>(C);
        float* dx = din + static_cast<size_t>(r) * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
          dx[c] += rrms * (dy[c] * weight[c] - x[c] * k);
          pw[c] += static_cast<double>(dy[c] * x[c] * rrms);
        }
      }
    }
    partials.addTo(dweight, 0, threads_);
  }

  void matmul(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    const ConstRowMap g(dout, rows, N), x(in, rows, K), w(weight, K, N);
    if (din) productAdd(RowMap(din, rows, K), g, w.transpose(), threads_);  // (rows, N) . (N, K)
    productAdd(RowMap(dweight, K, N), x.transpose(), g, threads_);          // (K, rows) . (rows, N)
    if (dbias) addColumnSums(dbias, dout, rows, N, threads_);
  }

  void matmulTransposed(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    const ConstRowMap g(dout, rows, N), x(in, rows, K), w(weight, N, K);
    productAdd(RowMap(din, rows, K), g, w, threads_);               // (rows, N) . (N, K)
    productAdd(RowMap(dweight, N, K), g.transpose(), x, threads_);  // (N, rows) . (rows, K)
  }

  void activation(float* din, const float* dout, const float* in, size_t n, Activation activation) override {
    if (activation == Activation::SwiGlu) throw Error("activation backward: SwiGLU needs swiglu(), which takes the gate");
    forChunks(n, [&](Index begin, Index size, Eigen::ArrayXf& scratch) {
      ArrayMap dx(din + begin, size);
      const ConstArrayMap dy(dout + begin, size), x(in + begin, size);
      auto slope = scratch.head(size);  // d out / d in
      switch (activation) {
        case Activation::GeluTanh: {
          // y = x/2 (1 + tanh u), u = k (x + 0.044715 x^3):
          // y' = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2)
          const float k = 0.7978845608028654f;  // sqrt(2 / pi)
          slope = (k * (x + 0.044715f * x.cube())).tanh();
          slope = 0.5f * (1.0f + slope) + 0.5f * x * (1.0f - slope.square()) * k * (1.0f + 0.134145f * x.square());
          break;
        }
        case Activation::GeluErf:
          // y = x Phi(x): y' = Phi(x) + x phi(x)
          slope = 0.5f * (1.0f + (x * 0.7071067811865476f).erf()) + x * 0.3989422804014327f * (-0.5f * x.square()).exp();
          break;
        case Activation::Relu: slope = (x > 0.0f).select(Eigen::ArrayXf::Ones(size), 0.0f); break;
        case Activation::SwiGlu: break;
      }
      dx += dy * slope;
    });
  }

  void swiglu(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) override {
    forChunks(n, [&](Index begin, Index size, Eigen::ArrayXf& scratch) {
      const ConstArrayMap dy(dout + begin, size), g(gate + begin, size), v(value + begin, size);
      auto sigmoid = scratch.head(size);
      sigmoid = 1.0f / (1.0f + (-g).exp());
      // silu(g) = g s, silu'(g) = s (1 + g (1 - s))
      ArrayMap(dvalue + begin, size) += dy * g * sigmoid;
      ArrayMap(dgate + begin, size) += dy * v * sigmoid * (1.0f + g * (1.0f - sigmoid));
    });
  }

  void attention(float* dqkv, const float* dout, const float* qkv, const AttentionShape& s, int batch) override {
    requireNoCache(s);
    const int T = s.T, D = s.headDim, kvHeads = s.kvHeads();
    const std::unique_ptr<RopeTables> rope = s.ropeBase > 0 ? std::make_unique<RopeTables>(T, s) : nullptr;
    // One task per (sequence, kv head): it owns the gradient columns of its K and V head and of
    // the query heads that read them, so tasks never write the same floats.
    const int tasks = batch * kvHeads;
#pragma omp parallel num_threads(threads_)
    {
      AttentionScratch scratch(T, D);
#pragma omp for schedule(static)
      for (int task = 0; task < tasks; ++task) attentionTask(dqkv, dout, qkv, s, task / kvHeads, task % kvHeads, rope.get(), scratch);
    }
  }

  // The plain loop's math per (sequence, key/value head) task, which owns that head's dK, dV columns
  // and its query heads' dQ columns: P = softmax(Q K^T s), dV += P^T dO, dP = dO V^T,
  // dS = P * (dP - rowsum(P * dP)) s, dQ += dS K, dK += dS^T Q.
  void crossAttention(float* dq, float* dkv, const float* dout, const float* q, const float* kv, int T, int S, int H, int Hkv, int D,
                      int batch) override {
    using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
    const int C = H * D, KV = Hkv * D, group = H / Hkv, tasks = batch * Hkv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const bool parallel = static_cast<size_t>(batch) * H * T * S * D > 32768;
#pragma omp parallel num_threads(threads_) if (parallel)
    {
      RowMatrix p(T, S), dp(T, S);
#pragma omp for schedule(static)
      for (int task = 0; task < tasks; ++task) {
        const int b = task / Hkv, g = task % Hkv;
        const float* kvb = kv + static_cast<size_t>(b) * S * 2 * KV;
        float* dkvb = dkv + static_cast<size_t>(b) * S * 2 * KV;
        StridedConstMap k(kvb + g * D, S, D, Eigen::OuterStride<>(2 * KV));
        StridedConstMap v(kvb + KV + g * D, S, D, Eigen::OuterStride<>(2 * KV));
        StridedMap dk(dkvb + g * D, S, D, Eigen::OuterStride<>(2 * KV));
        StridedMap dv(dkvb + KV + g * D, S, D, Eigen::OuterStride<>(2 * KV));
        for (int h = g * group; h < (g + 1) * group; ++h) {
          const size_t at = static_cast<size_t>(b) * T * C + h * D;
          StridedConstMap qh(q + at, T, D, Eigen::OuterStride<>(C));
          StridedConstMap go(dout + at, T, D, Eigen::OuterStride<>(C));
          StridedMap dqh(dq + at, T, D, Eigen::OuterStride<>(C));
          p.noalias() = (qh * k.transpose()) * scale;
          for (int t = 0; t < T; ++t) {
            auto row = p.row(t).array();
            row = (row - row.maxCoeff()).exp();
            row /= row.sum();
          }
          dv.noalias() += p.transpose() * go;
          dp.noalias() = go * v.transpose();
          for (int t = 0; t < T; ++t) {
            const float weighted = p.row(t).dot(dp.row(t));
            dp.row(t) = (p.row(t).array() * (dp.row(t).array() - weighted) * scale).matrix();
          }
          dqh.noalias() += dp * k;
          dk.noalias() += dp.transpose() * qh;
        }
      }
    }
  }

  double crossEntropy(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale) override {
    for (int r = 0; r < rows; ++r)
      if ((!scored || scored[r]) && (targets[r] < 0 || targets[r] >= V))
        throw Error("crossEntropy: target " + std::to_string(targets[r]) + " of row " + std::to_string(r) + " is outside the vocabulary");
    std::vector<double> losses(static_cast<size_t>(rows), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      Eigen::ArrayXf scratch(kElementwiseChunk);  // aligned: see forChunks
#pragma omp for schedule(static)
      for (int r = 0; r < rows; ++r) {
        const float* x = logits + static_cast<size_t>(r) * V;
        float* d = dlogits + static_cast<size_t>(r) * V;
        if (scored && !scored[r]) {
          std::memset(d, 0, static_cast<size_t>(V) * sizeof(float));
          continue;
        }
        const int target = targets[r];
        const float targetLogit = x[target];  // read before d (maybe x itself) is overwritten
        const float max = ConstArrayMap(x, V).maxCoeff();
        for (Index begin = 0; begin < V; begin += kElementwiseChunk) {
          const Index size = std::min(kElementwiseChunk, V - begin);
          scratch.head(size) = (ConstArrayMap(x + begin, size) - max).exp();
          ArrayMap(d + begin, size) = scratch.head(size);
        }
        const float sum = fixedOrderSum(V, [&](int v) { return d[v]; });
        losses[r] = std::log(static_cast<double>(sum)) - (static_cast<double>(targetLogit) - max);
        ArrayMap(d, V) *= scale / sum;
        d[target] -= scale;
      }
    }
    double total = 0;
    for (double loss : losses) total += loss;
    return total;
  }

 private:
  // Per-thread buffers of the attention backward (T tokens, head dim D).
  // Eigen's allocations are 64-byte aligned, so the alignment of a softmax row (and with it which
  // elements Eigen's exp computes in scalar code) depends on the shape alone.
  struct AttentionScratch {
    AttentionScratch(int T, int D) : probs(kQueryTile * T), dprobs(kQueryTile * T), dk(T, D), dv(T, D), dq(kQueryTile, D) {}
    Eigen::VectorXf probs, dprobs;  // (tile rows, visible keys), row-major
    RowMatrix dk, dv;               // (T, D) of the task's kv head, summed over its query heads
    RowMatrix dq;                   // (tile rows, D)
  };

  // Runs f(begin, size, scratch) over chunks of [0, n), chunks split across threads; scratch
  // holds kElementwiseChunk floats of the calling thread, aligned, so that Eigen's vectorised
  // exp/tanh/erf written into it take the same (packet or scalar) path for the same element
  // wherever the caller's arrays lie (Eigen peels unaligned heads with the scalar functions,
  // which round differently).
  template <typename F>
  void forChunks(size_t n, F&& f) {
    const Index chunks = (static_cast<Index>(n) + kElementwiseChunk - 1) / kElementwiseChunk;
    const bool parallel = n > 4 * static_cast<size_t>(kElementwiseChunk);
#pragma omp parallel num_threads(threads_) if (parallel)
    {
      Eigen::ArrayXf scratch(kElementwiseChunk);
#pragma omp for schedule(static)
      for (Index chunk = 0; chunk < chunks; ++chunk) {
        const Index begin = chunk * kElementwiseChunk;
        f(begin, std::min(kElementwiseChunk, static_cast<Index>(n) - begin), scratch);
      }
    }
  }

  // The backward of sequence b for kv head kvHead and the query heads of its group, query tile
  // by query tile (probabilities recomputed from the rotated Q and K the forward left):
  //   S = Q K^T scale + alibi, P = softmax over visible keys, dV += P^T dO, dP = dO V^T,
  //   dS = P (dP - rowsum(P dP)), dQ = dS K scale, dK += dS^T Q scale.
  static void attentionTask(float* dqkv, const float* dout, const float* qkv, const AttentionShape& s, int b, int kvHead, const RopeTables* rope,
                            AttentionScratch& m) {
    const int T = s.T, H = s.nHead, D = s.headDim, C = H * D, W = s.qkvDim(), group = H / s.kvHeads();
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const float* seq = qkv + static_cast<size_t>(b) * T * W;
    float* dseq = dqkv + static_cast<size_t>(b) * T * W;
    const float* dseqOut = dout + static_cast<size_t>(b) * T * C;
    const int kOffset = C + kvHead * D, vOffset = C + s.kvDim() + kvHead * D;
    const StridedConstMap k(seq + kOffset, T, D, Eigen::OuterStride<>(W)), v(seq + vOffset, T, D, Eigen::OuterStride<>(W));
    m.dk.setZero();
    m.dv.setZero();
    for (int h = kvHead * group; h < (kvHead + 1) * group; ++h) {
      const float slope = s.alibiSlopes ? s.alibiSlopes[h] : 0.0f;
      for (int r0 = 0; r0 < T; r0 += kQueryTile) {
        const int rows = std::min(kQueryTile, T - r0);
        // Visible ranges only move right with the query, so the tile's keys are [k0, k1).
        const int k0 = firstVisible(s, r0), k1 = lastVisible(s, r0 + rows - 1, T) + 1, keys = k1 - k0;
        const StridedConstMap q(seq + static_cast<size_t>(r0) * W + h * D, rows, D, Eigen::OuterStride<>(W));
        const StridedConstMap dO(dseqOut + static_cast<size_t>(r0) * C + h * D, rows, D, Eigen::OuterStride<>(C));
        const auto kTile = k.middleRows(k0, keys);
        const auto vTile = v.middleRows(k0, keys);
        RowMap probs(m.probs.data(), rows, keys), dprobs(m.dprobs.data(), rows, keys);
        probs.noalias() = (scale * q) * kTile.transpose();
        for (int i = 0; i < rows; ++i) {
          const int p = r0 + i, first = firstVisible(s, p) - k0, last = lastVisible(s, p, T) - k0;
          float* row = probs.data() + static_cast<size_t>(i) * keys;
          if (slope != 0.0f)
            for (int j = first; j <= last; ++j) row[j] -= slope * static_cast<float>(std::abs(p - (j + k0)));
          ArrayMap visible(row + first, last - first + 1);
          visible = (visible - visible.maxCoeff()).exp();
          visible *= 1.0f / fixedOrderSum(last - first + 1, [&](int j) { return row[first + j]; });
          std::fill(row, row + first, 0.0f);
          std::fill(row + last + 1, row + keys, 0.0f);
        }
        m.dv.middleRows(k0, keys).noalias() += probs.transpose() * dO;
        dprobs.noalias() = dO * vTile.transpose();
        for (int i = 0; i < rows; ++i) {
          ArrayMap dp(dprobs.data() + static_cast<size_t>(i) * keys, keys);
          const ConstArrayMap pr(probs.data() + static_cast<size_t>(i) * keys, keys);
          const float dot = fixedOrderSum(keys, [&](int j) { return pr[j] * dp[j]; });
          dp = pr * (dp - dot);  // masked keys have p = 0, so dS = 0 there
        }
        auto dq = m.dq.topRows(rows);
        dq.noalias() = (scale * dprobs) * kTile;
        m.dk.middleRows(k0, keys).noalias() += (scale * dprobs.transpose()) * q;
        addHeadGradient(dseq + static_cast<size_t>(r0) * W + h * D, W, m.dq.data(), rows, D, r0, rope);
      }
    }
    addHeadGradient(dseq + kOffset, W, m.dk.data(), T, D, 0, rope);
    addHeadGradient(dseq + vOffset, W, m.dv.data(), T, D, 0, nullptr);
  }

  int threads_ = 1;
};

}  // namespace

std::unique_ptr<BackwardOps> makeCpuBackwardOps(int threads) { return std::make_unique<CpuBackwardOps>(threads); }

}  // namespace tscope

// The fast CPU backend: Eigen GEMMs for multi-token work, hand-parallelised GEMV for single-token
// decode (Eigen's GEMV is single-threaded and batch-1 decode is bound by memory bandwidth, so each
// thread streams a contiguous block of weight rows) and a multi-row GEMV for the unembedding of a
// few rows (up to 16), Eigen's vectorised tanh for GELU. Weights kept as BF16/F16 halves are
// converted packet by packet inside the GEMV (AVX-512 or AVX2+F16C; scalar elsewhere).
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <omp.h>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // erf, for the exact GELU
#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/core/quant.h"
#include "model/core/aligned.h"
#include "model/nn/backend.h"
#include "model/core/cpu_threads.h"
#include "model/nn/positional.h"

namespace tscope {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;
using StridedConstMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;

class CpuBackend : public HostBackend {
 public:
  explicit CpuBackend(int threads) {
    threads_ = resolveThreadCount(threads);
    Eigen::setNbThreads(threads_);
    partials_.resize(static_cast<size_t>(threads_));
  }
  std::string name() const override { return "cpu"; }
  int threadCount() const override { return threads_; }

  void embed(float* out, const int* tokens, const float* wte, const float* positions, int T, int C, int pos0) override {
    for (int t = 0; t < T; ++t) {
      const float* tokenRow = wte + static_cast<size_t>(tokens[t]) * C;
      float* o = out + static_cast<size_t>(t) * C;
      if (!positions) {
        std::memcpy(o, tokenRow, C * sizeof(float));
        continue;
      }
      const float* posRow = positions + static_cast<size_t>(pos0 + t) * C;
      for (int c = 0; c < C; ++c) o[c] = tokenRow[c] + posRow[c];
    }
  }

  void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) override {
    for (int t = 0; t < T; ++t) {
      const float* x = in + static_cast<size_t>(t) * C;
      float* o = out + static_cast<size_t>(t) * C;
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < C; ++c) sum += x[c];
      const float mean = sum / static_cast<float>(C);
      float squares = 0;
#pragma omp simd reduction(+ : squares)
      for (int c = 0; c < C; ++c) squares += (x[c] - mean) * (x[c] - mean);
      const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(C) + eps);
      if (bias) {
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = (x[c] - mean) * rstd * weight[c] + bias[c];
      } else {
#pragma omp simd
        for (int c = 0; c < C; ++c) o[c] = (x[c] - mean) * rstd * weight[c];
      }
    }
  }

  void rmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps) override {
    for (int t = 0; t < T; ++t) {
      const float* x = in + static_cast<size_t>(t) * C;
      float* o = out + static_cast<size_t>(t) * C;
      float squares = 0;
#pragma omp simd reduction(+ : squares)
      for (int c = 0; c < C; ++c) squares += x[c] * x[c];
      const float rrms = 1.0f / std::sqrt(squares / static_cast<float>(C) + eps);
#pragma omp simd
      for (int c = 0; c < C; ++c) o[c] = x[c] * rrms * weight[c];
    }
  }

  void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) override {
    if (T == 1) {
      gemvRows(out, in, weight, bias, K, N);
      return;
    }
    RowMap o(out, T, N);
    o.noalias() = ConstRowMap(in, T, K) * ConstRowMap(weight, K, N);
    if (bias) o.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, N);
  }

  void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) override {
    if (T <= kFewRows) {
      fewRowsTransposed(out, in, weight, T, K, N);
      return;
    }
    RowMap(out, T, N).noalias() = ConstRowMap(in, T, K) * ConstRowMap(weight, N, K).transpose();
  }

  // W (N, K) packed (16-bit halves or block-quantized): up to kFewRows rows as a GEMV that converts
  // each weight packet or block as it streams it (bound by reading the packed bytes: half those of
  // float32 for halves, about a quarter for Q8_0); more rows as Eigen GEMMs over blocks of weight
  // rows converted to float32 (the conversion is 1/T of the work).
  void matmulPacked(float* out, const float* in, const PackedMatrix& w, const float* bias, int T) override {
    const int N = static_cast<int>(w.rows), K = static_cast<int>(w.cols);
    if (T <= kFewRows && w.type != WeightType::F32) {
      fewRowsPacked(out, in, w, T);
    } else {
      packedBlock_.resize(static_cast<size_t>(kPackedBlockRows) * K);
      for (int n0 = 0; n0 < N; n0 += kPackedBlockRows) {
        const int rows = std::min(kPackedBlockRows, N - n0);
        const int threads = (static_cast<size_t>(rows) * K < 65536) ? 1 : threads_;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int r = 0; r < rows; ++r) w.rowToFloat(n0 + r, packedBlock_.data() + static_cast<size_t>(r) * K);
        StridedMap(out + n0, T, rows, Eigen::OuterStride<>(N)).noalias() =
            ConstRowMap(in, T, K) * ConstRowMap(packedBlock_.data(), rows, K).transpose();
      }
    }
    if (bias) RowMap(out, T, N).rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, N);
  }

  void activate(float* x, size_t n, Activation activation) override {
    Eigen::Map<Eigen::ArrayXf> a(x, static_cast<Eigen::Index>(n));
    switch (activation) {
      case Activation::GeluTanh: {
        const float k = 0.7978845608028654f;  // sqrt(2 / pi)
        a = 0.5f * a * (1.0f + (k * (a + 0.044715f * a.cube())).tanh());
        break;
      }
      case Activation::GeluErf: a = 0.5f * a * (1.0f + (a * 0.7071067811865476f).erf()); break;
      case Activation::Relu: a = a.max(0.0f); break;
      case Activation::SwiGlu: break;  // applied by swiglu(), which needs the gate
    }
  }

  void swiglu(float* value, const float* gate, size_t n) override {
    Eigen::Map<Eigen::ArrayXf> v(value, static_cast<Eigen::Index>(n));
    Eigen::Map<const Eigen::ArrayXf> g(gate, static_cast<Eigen::Index>(n));
    v = v * g / (1.0f + (-g).exp());
  }

  void add(float* x, const float* y, size_t n) override {
    for (size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  void zero(float* x, size_t n) override { std::memset(x, 0, n * sizeof(float)); }

  void gatherRows(float* out, const float* in, const int* rows, int n, int C) override {
    for (int i = 0; i < n; ++i) std::memcpy(out + static_cast<size_t>(i) * C, in + static_cast<size_t>(rows[i]) * C, C * sizeof(float));
  }

  void scatterAddRows(float* out, const float* in, const int* rows, const float* weights, int n, int C) override {
    for (int i = 0; i < n; ++i) {
      float* o = out + static_cast<size_t>(rows[i]) * C;
      const float* x = in + static_cast<size_t>(i) * C;
      const float w = weights[i];
#pragma omp simd
      for (int c = 0; c < C; ++c) o[c] += w * x[c];
    }
  }

  void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s) override {
    const int H = s.nHead, D = s.headDim, C = H * D, T = s.T, Tk = s.keys();
    const int kvDim = s.kvDim(), rowWidth = s.qkvDim(), group = H / s.kvHeads();
    if (s.ropeBase > 0) {
      applyRope(qkv, T, H, D, rowWidth, s.pos0, s.ropeBase, s.ropeFrequencies);
      applyRope(qkv + C, T, s.kvHeads(), D, rowWidth, s.pos0, s.ropeBase, s.ropeFrequencies);
    }
    for (int t = 0; t < T; ++t) {
      std::memcpy(kCache + static_cast<size_t>(s.pos0 + t) * kvDim, qkv + static_cast<size_t>(t) * rowWidth + C, kvDim * sizeof(float));
      std::memcpy(vCache + static_cast<size_t>(s.pos0 + t) * kvDim, qkv + static_cast<size_t>(t) * rowWidth + C + kvDim, kvDim * sizeof(float));
    }
    // Blocks of query rows: a block multiplies only by the keys one of its rows can see (causal:
    // up to its last row's position; a window: from its first row's window on), so a causal
    // prompt does half the q k^T and p v work of the full square and its exps, and without maps
    // to keep each thread reuses one (block, keys) tile instead of an (H, T, Tk) scratch.
    const size_t mapSize = static_cast<size_t>(T) * Tk;
    const int blocks = (T + kAttentionRowBlock - 1) / kAttentionRowBlock;
    const bool parallel = static_cast<size_t>(H) * mapSize * D > 32768;
    if (!probs) scratch_.resize(static_cast<size_t>(parallel ? threads_ : 1) * kAttentionRowBlock * Tk);
    const float scale = static_cast<float>(s.scale());
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) if (parallel)
    for (int item = 0; item < H * blocks; ++item) {
      const int h = item / blocks, t0 = (item % blocks) * kAttentionRowBlock, rows = std::min(kAttentionRowBlock, T - t0);
      const int kvHead = h / group;
      // Keys [lo, hi]: every key some row of the block sees.
      int lo = 0, hi = s.causal ? s.pos0 + t0 + rows - 1 : Tk - 1;
      if (s.window > 0) {
        lo = std::max(0, s.pos0 + t0 - s.window + 1);
        hi = std::min(hi, s.pos0 + t0 + rows - 1 + s.window - 1);
      }
      const int width = hi - lo + 1;
      float* tile = probs ? probs + h * mapSize + static_cast<size_t>(t0) * Tk + lo
                          : scratch_.data() + static_cast<size_t>(omp_get_thread_num()) * kAttentionRowBlock * Tk;
      const int stride = probs ? Tk : width;
      StridedConstMap q(qkv + static_cast<size_t>(t0) * rowWidth + h * D, rows, D, Eigen::OuterStride<>(rowWidth));
      StridedConstMap k(kCache + static_cast<size_t>(lo) * kvDim + kvHead * D, width, D, Eigen::OuterStride<>(kvDim));
      StridedConstMap v(vCache + static_cast<size_t>(lo) * kvDim + kvHead * D, width, D, Eigen::OuterStride<>(kvDim));
      StridedMap p(tile, rows, width, Eigen::OuterStride<>(stride));
      p.noalias() = (q * k.transpose()) * scale;
      const float slope = s.alibiSlopes ? s.alibiSlopes[h] : 0.0f;
      for (int r = 0; r < rows; ++r) {
        const int t = t0 + r, position = s.pos0 + t;
        // The visible keys form one contiguous range [first, last] inside [lo, hi].
        int first = 0, last = s.causal ? position : Tk - 1;
        if (s.window > 0) {
          first = std::max(0, position - s.window + 1);
          last = std::min(last, position + s.window - 1);
        }
        float* row = tile + static_cast<size_t>(r) * stride;  // row[j - lo]: key j, for j in [lo, hi]
        if (slope != 0.0f)
          for (int j = first; j <= last; ++j) row[j - lo] -= slope * static_cast<float>(std::abs(position - j));
        if (scores) {
          float* scoreRow = scores + h * mapSize + static_cast<size_t>(t) * Tk;
          for (int j = 0; j < Tk; ++j) scoreRow[j] = (j < first || j > last) ? kNegInf : row[j - lo];
        }
        Eigen::Map<Eigen::ArrayXf> visibleRow(row + (first - lo), last - first + 1);
        visibleRow = (visibleRow - visibleRow.maxCoeff()).exp();  // Eigen's vectorised exp
        visibleRow *= 1.0f / visibleRow.sum();
        // Zeros for the keys this row does not see: in the tile, and in the kept map around it.
        std::fill(row, row + (first - lo), 0.0f);
        std::fill(row + (last - lo) + 1, row + width, 0.0f);
        if (probs) {
          float* mapRow = probs + h * mapSize + static_cast<size_t>(t) * Tk;
          std::fill(mapRow, mapRow + lo, 0.0f);
          std::fill(mapRow + hi + 1, mapRow + Tk, 0.0f);
        }
      }
      StridedMap o(out + static_cast<size_t>(t0) * C + h * D, rows, D, Eigen::OuterStride<>(C));
      o.noalias() = p * v;
    }
  }

  // The reference's math with Eigen per head: scores (T, S), a vectorised softmax per row, then p v.
  void crossAttention(float* out, float* probs, const float* q, const float* kv, int T, int S, int H, int Hkv, int D) override {
    const int C = H * D, KV = Hkv * D, group = H / Hkv;
    const size_t mapSize = static_cast<size_t>(T) * S;
    if (!probs) {
      scratch_.resize(static_cast<size_t>(H) * mapSize);
      probs = scratch_.data();
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const bool parallel = static_cast<size_t>(H) * mapSize * D > 32768;
#pragma omp parallel for num_threads(threads_) schedule(static) if (parallel)
    for (int h = 0; h < H; ++h) {
      const int g = (h / group) * D;
      StridedConstMap qh(q + h * D, T, D, Eigen::OuterStride<>(C));
      StridedConstMap k(kv + g, S, D, Eigen::OuterStride<>(2 * KV));
      StridedConstMap v(kv + KV + g, S, D, Eigen::OuterStride<>(2 * KV));
      RowMap p(probs + h * mapSize, T, S);
      p.noalias() = (qh * k.transpose()) * scale;
      for (int t = 0; t < T; ++t) {
        Eigen::Map<Eigen::ArrayXf> row(p.data() + static_cast<size_t>(t) * S, S);
        row = (row - row.maxCoeff()).exp();
        row *= 1.0f / row.sum();
      }
      StridedMap o(out + h * D, T, D, Eigen::OuterStride<>(C));
      o.noalias() = p * v;
    }
  }

 private:
  // out (N) = x (K) . W (K, N) + bias: each thread sums a contiguous block of W's rows into its own
  // partial vector (streaming memory once), then the partials are added.
  void gemvRows(float* out, const float* x, const float* w, const float* bias, int K, int N) {
    const int threads = (static_cast<size_t>(K) * N < 65536) ? 1 : threads_;
    for (int i = 0; i < threads; ++i) partials_[i].assign(static_cast<size_t>(N), 0.0f);
#pragma omp parallel num_threads(threads)
    {
      const int id = omp_get_thread_num(), count = omp_get_num_threads();
      const int k0 = static_cast<int>(static_cast<long>(K) * id / count);
      const int k1 = static_cast<int>(static_cast<long>(K) * (id + 1) / count);
      float* y = partials_[id].data();
      int k = k0;
      for (; k + 4 <= k1; k += 4) {
        const float x0 = x[k], x1 = x[k + 1], x2 = x[k + 2], x3 = x[k + 3];
        const float* w0 = w + static_cast<size_t>(k) * N;
        const float* w1 = w0 + N;
        const float* w2 = w1 + N;
        const float* w3 = w2 + N;
#pragma omp simd
        for (int n = 0; n < N; ++n) y[n] += x0 * w0[n] + x1 * w1[n] + x2 * w2[n] + x3 * w3[n];
      }
      for (; k < k1; ++k) {
        const float xk = x[k];
        const float* wk = w + static_cast<size_t>(k) * N;
#pragma omp simd
        for (int n = 0; n < N; ++n) y[n] += xk * wk[n];
      }
    }
    for (int n = 0; n < N; ++n) {
      float sum = bias ? bias[n] : 0.0f;
      for (int i = 0; i < threads; ++i) sum += partials_[i][n];
      out[n] = sum;
    }
  }

  // out (T, N) = in (T, K) . weight (N, K)^T for T <= kFewRows (the unembedding of a decode step,
  // or of an edit's logits and logit-lens rows): a multi-row GEMV bound by reading the weights.
  // Threads split the weight rows; each streams its rows once, four at a time, and sums their dot
  // products with up to four input rows at once in SIMD registers (Eigen's packet primitives), so
  // one load of a weight packet feeds four FMAs. Eigen's GEMM would first pack the whole (N, K)
  // weight: a second pass over it.
  void fewRowsTransposed(float* out, const float* in, const float* weight, int T, int K, int N) const {
    const int blocks = (N + 3) / 4;
    const int threads = (static_cast<size_t>(K) * N < 65536) ? 1 : threads_;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int block = 0; block < blocks; ++block) {
      const int n0 = block * 4;
      const float* w = weight + static_cast<size_t>(n0) * K;
      if (n0 + 4 > N) {  // the last 1..3 weight rows: plain dot products
        for (int t = 0; t < T; ++t)
          for (int n = n0; n < N; ++n)
            out[static_cast<size_t>(t) * N + n] = dot(in + static_cast<size_t>(t) * K, weight + static_cast<size_t>(n) * K, K);
        continue;
      }
      // The first tile over these rows also prefetches the rows kAhead further on.
      const float* ahead = n0 + kAhead + 4 <= N ? w + static_cast<size_t>(kAhead) * K : nullptr;
      int t = 0;
      for (; t + 4 <= T; t += 4, ahead = nullptr) dot4x4(out + static_cast<size_t>(t) * N + n0, in + static_cast<size_t>(t) * K, w, ahead, K, N);
      for (; t < T; ++t, ahead = nullptr) dot1x4(out + static_cast<size_t>(t) * N + n0, in + static_cast<size_t>(t) * K, w, ahead, K);
    }
  }

  // SIMD packets of Eigen's (its primitives: load, multiply-add, horizontal sum), so the tiles
  // below keep their sums in named registers on every instruction set Eigen supports.
  using Packet = Eigen::internal::packet_traits<float>::type;
  static constexpr int kLanes = Eigen::internal::packet_traits<float>::size;
  static Packet load(const float* p) { return Eigen::internal::ploadu<Packet>(p); }
  static Packet zeroPacket() { return Eigen::internal::pset1<Packet>(0.0f); }
  static Packet fma(const Packet& a, const Packet& b, const Packet& c) { return Eigen::internal::pmadd(a, b, c); }
  static float sum(const Packet& a) { return Eigen::internal::predux(a); }
  static void prefetch(const float* p) { Eigen::internal::prefetch(p); }
  static constexpr int kAhead = 8;  // weight rows to prefetch ahead: the hardware prefetcher alone falls behind

  // x (K) . w (K)
  static float dot(const float* x, const float* w, int K) {
    Packet s = zeroPacket();
    int k = 0;
    for (; k + kLanes <= K; k += kLanes) s = fma(load(x + k), load(w + k), s);
    float total = sum(s);
    for (; k < K; ++k) total += x[k] * w[k];
    return total;
  }

  // o (4) = x (K) . w (4, K)^T; prefetches the 4 rows at `ahead` (K each) unless null.
  static void dot1x4(float* o, const float* x, const float* w, const float* ahead, int K) {
    const float *w0 = w, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    Packet s0 = zeroPacket(), s1 = s0, s2 = s0, s3 = s0;
    int k = 0;
    for (; k + kLanes <= K; k += kLanes) {
      if (ahead)
        for (int j = 0; j < 4; ++j) prefetch(ahead + static_cast<size_t>(j) * K + k);
      const Packet xv = load(x + k);
      s0 = fma(xv, load(w0 + k), s0);
      s1 = fma(xv, load(w1 + k), s1);
      s2 = fma(xv, load(w2 + k), s2);
      s3 = fma(xv, load(w3 + k), s3);
    }
    float t0 = sum(s0), t1 = sum(s1), t2 = sum(s2), t3 = sum(s3);
    for (; k < K; ++k) {
      t0 += x[k] * w0[k];
      t1 += x[k] * w1[k];
      t2 += x[k] * w2[k];
      t3 += x[k] * w3[k];
    }
    o[0] = t0, o[1] = t1, o[2] = t2, o[3] = t3;
  }

  // o (4, 4) at row stride N = x (4, K) . w (4, K)^T: one load of each weight packet feeds four
  // multiply-adds, 16 sums in registers. Prefetches the 4 rows at `ahead` (K each) unless null.
  static void dot4x4(float* o, const float* x, const float* w, const float* ahead, int K, int N) {
    const float *x0 = x, *x1 = x0 + K, *x2 = x1 + K, *x3 = x2 + K;
    const float *w0 = w, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    Packet s00 = zeroPacket(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    Packet s20 = s00, s21 = s00, s22 = s00, s23 = s00, s30 = s00, s31 = s00, s32 = s00, s33 = s00;
    int k = 0;
    for (; k + kLanes <= K; k += kLanes) {
      const Packet a = load(w0 + k), b = load(w1 + k), c = load(w2 + k), d = load(w3 + k);
      if (ahead)
        for (int j = 0; j < 4; ++j) prefetch(ahead + static_cast<size_t>(j) * K + k);
      Packet xv = load(x0 + k);
      s00 = fma(xv, a, s00), s01 = fma(xv, b, s01), s02 = fma(xv, c, s02), s03 = fma(xv, d, s03);
      xv = load(x1 + k);
      s10 = fma(xv, a, s10), s11 = fma(xv, b, s11), s12 = fma(xv, c, s12), s13 = fma(xv, d, s13);
      xv = load(x2 + k);
      s20 = fma(xv, a, s20), s21 = fma(xv, b, s21), s22 = fma(xv, c, s22), s23 = fma(xv, d, s23);
      xv = load(x3 + k);
      s30 = fma(xv, a, s30), s31 = fma(xv, b, s31), s32 = fma(xv, c, s32), s33 = fma(xv, d, s33);
    }
    float sums[4][4] = {{sum(s00), sum(s01), sum(s02), sum(s03)},
                        {sum(s10), sum(s11), sum(s12), sum(s13)},
                        {sum(s20), sum(s21), sum(s22), sum(s23)},
                        {sum(s30), sum(s31), sum(s32), sum(s33)}};
    const float* xs[4] = {x0, x1, x2, x3};
    const float* ws[4] = {w0, w1, w2, w3};
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j) {
        for (int kk = k; kk < K; ++kk) sums[r][j] += xs[r][kk] * ws[j][kk];
        o[static_cast<size_t>(r) * N + j] = sums[r][j];
      }
  }

  // out (T, N) = in (T, K) . W (N, K)^T for a packed W (16-bit or block-quantized) and T <= kFewRows:
  // the rows in chunks over the threads, each chunk by quant.h's matmulFewRows (every weight block
  // decoded once for up to four input rows, as it streams), so the packed bytes are read once.
  void fewRowsPacked(float* out, const float* in, const PackedMatrix& w, int T) const {
    constexpr int kChunk = 64;
    const int N = static_cast<int>(w.rows), K = static_cast<int>(w.cols);
    const int chunks = (N + kChunk - 1) / kChunk;
    const int threads = (static_cast<size_t>(K) * N < 65536) ? 1 : threads_;
#pragma omp parallel num_threads(threads)
    {
      std::vector<float> local(static_cast<size_t>(kChunk) * T);
#pragma omp for schedule(static)
      for (int chunk = 0; chunk < chunks; ++chunk) {
        const int n0 = chunk * kChunk, count = std::min(kChunk, N - n0);
        float* target = T == 1 ? out + n0 : local.data();
        matmulFewRows(w.type, w.row(n0), w.rowBytes(), in, T, target, count, K);
        if (T > 1)
          for (int t = 0; t < T; ++t) std::copy_n(local.data() + static_cast<size_t>(t) * count, count, out + static_cast<size_t>(t) * N + n0);
      }
    }
  }

  static constexpr int kAttentionRowBlock = 64;  // attention: query rows per tile (a 64 x 4096 tile is 1 MiB)
  static constexpr int kFewRows = 16;            // matmulTransposed: up to this many rows by fewRowsTransposed
  static constexpr int kPackedBlockRows = 256;   // matmulPacked: weight rows converted per GEMM
  int threads_ = 1;
  std::vector<AlignedFloats> partials_;  // per-thread GEMV partial sums (N)
  AlignedFloats scratch_;                // attention probabilities when the caller wants none
  AlignedFloats packedBlock_;            // (kPackedBlockRows, K) weight rows of matmulPacked as float32
};

}  // namespace

std::unique_ptr<Backend> makeCpuBackend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace tscope

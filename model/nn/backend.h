// The Backend interface: every op the transformer needs, behind one small abstract class, so the
// forward pass is written once (transformer.cpp) and runs on the plain-loop reference, the Eigen
// fast path or (kernels/) CUDA. Pointers passed to ops live in the backend's own memory
// (host memory for the CPU backends, device memory for CUDA); tokens are always host ints.
#pragma once
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/core/config.h"
#include "model/core/packed_matrix.h"

namespace tscope {

class Backend;
class Rng;  // model/generate/sampling.h (not included: kernels/ builds as C++17, sampling.h needs C++20)
struct SamplingParams;

// A block of backend memory holding `count` floats (RAII, move-only).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend* owner, float* data, size_t count) : owner_(owner), data_(data), count_(count) {}
  ~Buffer();
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  Backend* owner_ = nullptr;
  float* data_ = nullptr;
  size_t count_ = 0;
};

// Shapes and variant of one attention call. Queries are the T newest tokens at absolute positions
// pos0 .. pos0+T-1; keys/values for positions 0 .. pos0+T-1 are in the cache after the call.
struct AttentionShape {
  int T = 0;            // new tokens
  int pos0 = 0;         // tokens already in the cache
  int nHead = 0;        // H query heads
  int headDim = 0;      // D (C = H * D)
  int cacheRows = 0;    // capacity of the cache in tokens
  int nKvHead = 0;      // Hkv key/value heads (grouped-query attention); 0 = nHead. Query head h reads kv head h / (H / Hkv)
  bool causal = true;   // false: every query sees every key in the cache (an encoder)
  int window = 0;       // sliding window: a query at position p sees keys j with |p - j| < window; 0 = no limit
  double ropeBase = 0;  // > 0: rotate q and k (RoPE) at their absolute positions before the scores
  // Host (headDim/2): pair i's angle per position when RoPE's frequencies are not plain
  // ropeBase^(-2i/D) (Llama 3 scaling: ropeInverseFrequencies in positional.h); null = plain.
  const double* ropeFrequencies = nullptr;
  const float* alibiSlopes = nullptr;  // host (H): add -slope_h * |p - j| to the scores (ALiBi)
  double scoreScale = 0;               // > 0: scores = q.k * scoreScale (what_if.h's no-scale: 1); 0 = 1 / sqrt(headDim)
  // Recorded decode steps only (T == 1): the position is the backend's step position (backend
  // memory, see Backend::beginRecording), not pos0. pos0 must then be cacheRows - 1 or less and
  // is only a bound.
  bool stepPosition = false;
  int keys() const { return pos0 + T; }  // Tk
  double scale() const { return scoreScale > 0 ? scoreScale : 1.0 / std::sqrt(static_cast<double>(headDim)); }
  int kvHeads() const { return nKvHead > 0 ? nKvHead : nHead; }
  int kvDim() const { return kvHeads() * headDim; }
  int qkvDim() const { return nHead * headDim + 2 * kvDim(); }
  // Whether a query at absolute position p sees the key at position j.
  bool visible(int p, int j) const {
    if (causal && j > p) return false;
    if (window > 0 && (p > j ? p - j : j - p) >= window) return false;
    return true;
  }
};

// (headDim/2) host: the angle per position of RoPE pair i under shape s: s.ropeFrequencies, or
// ropeBase^(-2i/D) computed as positional.h's ropeInverseFrequencies does. For the backwards, which
// turn gradients back by the forward's angles.
std::vector<double> ropePairFrequencies(const AttentionShape& s);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "reference", "cpu" (Eigen), "cuda"
  virtual bool isHost() const { return true; }  // host-addressable memory (no copies needed)
  virtual int threadCount() const { return 1; }

  // --- memory -----------------------------------------------------------------------------
  virtual Buffer allocate(size_t count) = 0;  // zero-filled
  virtual void release(float* data) = 0;      // called by ~Buffer
  virtual void upload(float* dst, const float* hostSrc, size_t count) = 0;
  virtual void download(float* hostDst, const float* src, size_t count) = 0;
  virtual void copy(float* dst, const float* src, size_t count) = 0;
  virtual void sync() {}

  // --- ops (shapes in comments; all row-major) ---------------------------------------------
  // out (T, C) = wte[tokens] + positions[pos0 + t]; positions may be null (no additive encoding)
  virtual void embed(float* out, const int* hostTokens, const float* wte, const float* positions, int T, int C, int pos0) = 0;
  // out (T, C) = LayerNorm(in) * weight + bias over the last axis; bias may be null
  virtual void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) = 0;
  // out (T, C) = in / sqrt(mean(in^2) + eps) * weight
  virtual void rmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps) = 0;
  // qk_norm: in qkv (rows, stride), each row's H query slices of D floats (from column 0, weight
  // qWeight (D)) and Hkv key slices (from column H D, weight kWeight) as rmsNorm normalises a row,
  // in place. The default calls rmsNorm twice per row (in place is safe: a row's sum of squares
  // is read before it is written); CUDA does every slice in one launch.
  virtual void headRmsNorm(float* qkv, const float* qWeight, const float* kWeight, int rows, int H, int Hkv, int D, int stride, float eps);
  // out (T, N) = in (T, K) . weight (K, N) + bias (N); bias may be null
  virtual void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) = 0;
  // out (T, N) = in (T, K) . weight (N, K)^T   (the unembedding: weight = wte or lm_head)
  virtual void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) = 0;
  // Weights kept as 16-bit halves (loaded BF16/F16 checkpoints; host backends only, a device gets
  // float32 copies). out (T, N) = in (T, K) . W^T + bias for W (N, K) = weight (rows N, cols K),
  // computed in float32; bias may be null. The default is the plain loop (the reference's).
  virtual void matmulPacked(float* out, const float* in, const PackedMatrix& weight, const float* bias, int T);
  // out (T, C) = W[tokens] + positions[pos0 + t] for an embedding W (V, C) kept as halves; positions may be null.
  virtual void embedPacked(float* out, const int* hostTokens, const PackedMatrix& wte, const float* positions, int T, int pos0);
  // x (n) = act(x) in place: GELU (tanh or erf form) or ReLU
  virtual void activate(float* x, size_t n, Activation activation) = 0;
  // value (n) = silu(gate) * value, silu(g) = g / (1 + exp(-g))   (SwiGLU)
  virtual void swiglu(float* value, const float* gate, size_t n) = 0;
  // x (n) += y (n)
  virtual void add(float* x, const float* y, size_t n) = 0;
  // x (n) = 0
  virtual void zero(float* x, size_t n) = 0;
  // out (n, C) = in[rows[i]] for i < n   (rows on the host)
  virtual void gatherRows(float* out, const float* in, const int* hostRows, int n, int C) = 0;
  // out[rows[i]] += weights[i] * in (i) for i < n   (rows and weights on the host)
  virtual void scatterAddRows(float* out, const float* in, const int* hostRows, const float* hostWeights, int n, int C) = 0;
  // Multi-head attention with a KV cache, in every variant of AttentionShape.
  //   qkv (T, C + 2 Hkv D): Q | K | V of the new tokens (RoPE rotates its Q and K in place);
  //   kCache, vCache (cacheRows, Hkv D): this layer's cache, rows pos0.. are written here.
  //   out (T, C): concatenated heads (before the output projection).
  //   probs, scores (H, T, Tk) if not null: post-softmax probabilities and pre-softmax scores
  //   (scaled, ALiBi included; masked entries: probability 0, score -inf).
  virtual void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& shape) = 0;

  // Cross-attention (an encoder-decoder's decoder reading the encoder; docs/ENCODER_DECODER.md):
  //   q (T, H D) queries; kv (S, 2 Hkv D) keys | values of the S source rows; query head h reads
  //   key/value head h / (H / Hkv); every query sees every source row (no mask, no positions).
  //   out (T, H D) = concatenated heads of softmax(q_h k^T / sqrt(D)) v; probs (H, T, S) if not null.
  // The default is the plain loop (ref::crossAttention, ops_reference.h) on the host, through copies on a device.
  virtual void crossAttention(float* out, float* probs, const float* q, const float* kv, int T, int S, int H, int Hkv, int D);

  // --- fused ops: the defaults (backend.cpp) run the plain ops in turn; CUDA fuses them --------
  // x (T, C) += y; out (T, C) = norm(x): LayerNorm (bias may be null), RMSNorm (bias unused), or
  // none (norm: none; out = x, weight and bias unused): the post-norm residual add of every norm kind.
  virtual void addNorm(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, NormKind kind);
  // out (T, N) = act(in (T, K) . weight (K, N) + bias) for GELU (either form) or ReLU.
  virtual void matmulActivate(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N, Activation activation);
  // The next token from logits (V) in backend memory, exactly as sampleNext() picks it: argmax
  // when greedy (rng untouched), else one rng.uniform() draw through the temperature / top-k /
  // top-p pipeline. The default downloads the logits and calls sampleNext; CUDA samples on the
  // device (only the token and the rng state cross). Throws tscope::Error as sampleNext does.
  virtual int sampleToken(const float* logits, int V, const SamplingParams& params, Rng& rng);

  // --- recorded decode steps (optional; CUDA records them as a CUDA graph) --------------------
  // A step's token and position live in backend memory, so the ops of one whole decode step
  // (embedStep, the layers with AttentionShape::stepPosition, the unembedding, sampleStep) can be
  // recorded once and replayed for every new token with no host round trip but the sampled token.
  virtual bool canRecordSteps() const { return false; }
  // Ops issued between these two are recorded, not run. Throws tscope::Error when unsupported.
  virtual void beginRecording();
  virtual void endRecording();
  // Sets the step state: the token to feed, its position and the sampler's rng.
  virtual void setStep(int token, int position, const Rng& rng);
  // Counts recordings (and anything else that invalidates the recorded step): a caller that
  // recorded at count n may replay only while this is still n.
  virtual uint64_t recordingCount() const { return 0; }
  // Runs the recorded step once and returns stepResult(rng).
  virtual int replayStep(Rng* rng);
  // Waits for the step ops issued so far (a replay, or the step ops run directly, unrecorded) and
  // returns the token the last sampleStep drew (the one wait), copying the advanced rng into *rng
  // when given. The step state then feeds that token at position + 1.
  virtual int stepResult(Rng* rng);
  // out (1, C) = wte[step token] + positions[step position] (positions may be null).
  virtual void embedStep(float* out, const float* wte, const float* positions, int C);
  // step token = sampleToken(logits (V), params, step rng) on the device; step position += 1.
  virtual void sampleStep(const float* logits, int V, const SamplingParams& params);
};

// Memory plumbing shared by the CPU backends: buffers are plain zero-filled host arrays.
class HostBackend : public Backend {
 public:
  Buffer allocate(size_t count) override;
  void release(float* data) override;
  void upload(float* dst, const float* hostSrc, size_t count) override;
  void download(float* hostDst, const float* src, size_t count) override;
  void copy(float* dst, const float* src, size_t count) override;
};

// The plain-loop reference backend (the ground truth) and the Eigen fast path.
std::unique_ptr<Backend> makeReferenceBackend();
// threads 0: $TSCOPE_THREADS if set, else the number of cores that really run in parallel.
std::unique_ptr<Backend> makeCpuBackend(int threads = 0);

}  // namespace tscope

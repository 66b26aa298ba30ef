// The Backend interface: every op the transformer needs, behind one small abstract class, so the
// forward pass is written once (transformer.cpp) and runs on the plain-loop reference, the Eigen
// fast path or (kernels/) CUDA. Pointers passed to ops live in the backend's own memory
// (host memory for the CPU backends, device memory for CUDA); tokens are always host ints.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace tscope {

class Backend;

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

// Shapes of one attention call. Queries are the T newest tokens at absolute positions
// pos0 .. pos0+T-1; keys/values for positions 0 .. pos0+T-1 are in the cache after the call.
struct AttentionShape {
  int T = 0;         // new tokens
  int pos0 = 0;      // tokens already in the cache
  int nHead = 0;     // H
  int headDim = 0;   // D (C = H * D)
  int cacheRows = 0; // capacity of the cache in tokens
  int keys() const { return pos0 + T; }  // Tk
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "reference", "cpu" (Eigen), "cuda"
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
  // out (T, C) = wte[tokens] + wpe[pos0 + t]
  virtual void embed(float* out, const int* hostTokens, const float* wte, const float* wpe, int T, int C, int pos0) = 0;
  // out (T, C) = LayerNorm(in) * weight + bias over the last axis
  virtual void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) = 0;
  // out (T, N) = in (T, K) . weight (K, N) + bias (N); bias may be null
  virtual void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) = 0;
  // out (T, N) = in (T, K) . weight (N, K)^T   (the tied unembedding: weight = wte)
  virtual void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) = 0;
  // x (n) = gelu_tanh(x) in place
  virtual void gelu(float* x, size_t n) = 0;
  // x (n) += y (n)
  virtual void add(float* x, const float* y, size_t n) = 0;
  // Causal multi-head attention with a KV cache.
  //   qkv (T, 3C): Q | K | V of the new tokens; kCache, vCache (cacheRows, C): this layer's cache,
  //   rows pos0.. are written here. out (T, C): concatenated heads (before the output projection).
  //   probs, scores (H, T, Tk) if not null: post-softmax probabilities and pre-softmax scaled
  //   scores (masked entries: probability 0, score -inf).
  virtual void attention(float* out, float* probs, float* scores, const float* qkv, float* kCache, float* vCache,
                         const AttentionShape& shape) = 0;
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

// CudaBackend: the Backend interface on one CUDA device. Memory is cudaMalloc'd and zero-filled on
// the backend's own stream, every op is enqueued on that stream (cuBLAS is bound to it), and only
// download() and sync() wait for it. Host-side arguments (token ids, MoE rows and gates, ALiBi
// slopes) are copied into a reused device scratch area first; copies from pageable host memory
// return once the data is staged, so the caller may reuse its arrays at once.
#include "kernels/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"
#include "model/error.h"

namespace tscope {
namespace {

using namespace tscope::cuda;

// A growable device byte area (RAII, move-only). Growing waits for the stream, so work already
// enqueued never reads freed memory.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch() {
    if (data_) cudaFree(data_);
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* reserve(size_t bytes, cudaStream_t stream) {
    if (bytes <= bytes_) return data_;
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (data_) TSCOPE_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    bytes_ = 0;
    TSCOPE_CUDA_CHECK(cudaMalloc(&data_, bytes));
    bytes_ = bytes;
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    TSCOPE_CUDA_CHECK(cudaSetDevice(device));
    TSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TSCOPE_CUBLAS_CHECK(cublasCreate(&cublas_));
    TSCOPE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    TSCOPE_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));  // full FP32: no TF32 rounding of the inputs
  }
  ~CudaBackend() override {
    // Buffers owned by this backend must be gone already (they call release()).
    cudaStreamSynchronize(stream_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  bool isHost() const override { return false; }

  // --- memory -----------------------------------------------------------------------------
  Buffer allocate(size_t count) override {
    if (count == 0) return Buffer(this, nullptr, 0);
    float* data = nullptr;
    TSCOPE_CUDA_CHECK(cudaMalloc(&data, count * sizeof(float)));
    TSCOPE_CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream_));
    return Buffer(this, data, count);
  }
  void release(float* data) override {
    // Called from ~Buffer: report, never throw. Work still queued may read `data`: wait for it.
    cudaError_t error = cudaStreamSynchronize(stream_);
    if (error == cudaSuccess) error = cudaFree(data);
    if (error != cudaSuccess) std::fprintf(stderr, "tscope: cudaFree failed: %s\n", cudaGetErrorString(error));
  }
  void upload(float* dst, const float* hostSrc, size_t count) override {
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, hostSrc, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  }
  void download(float* hostDst, const float* src, size_t count) override {
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(hostDst, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(float* dst, const float* src, size_t count) override {
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
  void sync() override { TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  // --- ops -------------------------------------------------------------------------------------
  void embed(float* out, const int* hostTokens, const float* wte, const float* positions, int T, int C, int pos0) override {
    const int* tokens = stage(hostTokens, T);
    launchEmbed(out, tokens, wte, positions, T, C, pos0, stream_);
  }
  void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) override {
    launchLayerNorm(out, in, weight, bias, T, C, eps, stream_);
  }
  void rmsNorm(float* out, const float* in, const float* weight, int T, int C, float eps) override {
    launchRmsNorm(out, in, weight, T, C, eps, stream_);
  }
  void matmul(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N) override {
    launchMatmul(cublas_, out, in, weight, bias, T, K, N, stream_);
  }
  void matmulTransposed(float* out, const float* in, const float* weight, int T, int K, int N) override {
    launchMatmulTransposed(cublas_, out, in, weight, T, K, N);
  }
  void activate(float* x, size_t n, Activation activation) override { launchActivate(x, n, activation, stream_); }
  void swiglu(float* value, const float* gate, size_t n) override { launchSwiglu(value, gate, n, stream_); }
  void add(float* x, const float* y, size_t n) override { launchAdd(x, y, n, stream_); }
  void zero(float* x, size_t n) override {
    if (n) TSCOPE_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), stream_));
  }
  void gatherRows(float* out, const float* in, const int* hostRows, int n, int C) override {
    if (n <= 0) return;
    launchGatherRows(out, in, stage(hostRows, n), n, C, stream_);
  }
  void scatterAddRows(float* out, const float* in, const int* hostRows, const float* hostWeights, int n, int C) override {
    if (n <= 0) return;
    // Rows and gates share one staging area: n ints, then n floats.
    char* area = static_cast<char*>(hostArgs_.reserve(n * (sizeof(int) + sizeof(float)), stream_));
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(area, hostRows, n * sizeof(int), cudaMemcpyHostToDevice, stream_));
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(area + n * sizeof(int), hostWeights, n * sizeof(float), cudaMemcpyHostToDevice, stream_));
    launchScatterAddRows(out, in, reinterpret_cast<const int*>(area), reinterpret_cast<const float*>(area + n * sizeof(int)), n, C, stream_);
  }
  void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s) override {
    if (s.T <= 0) return;
    if (s.nKvHead > 0 && s.nHead % s.nKvHead != 0) throw Error("attention: nKvHead must divide nHead");
    if (s.ropeBase > 0 && s.headDim % 2 != 0) throw Error("attention: RoPE needs an even head dimension");
    const float* slopes = s.alibiSlopes ? stage(s.alibiSlopes, s.nHead) : nullptr;
    float* rowScratch = nullptr;
    if (!probs) {
      const size_t mapFloats = static_cast<size_t>(s.nHead) * s.T * s.keys();
      rowScratch = static_cast<float*>(attentionRows_.reserve(mapFloats * sizeof(float), stream_));
    }
    launchAttention(out, probs, scores, qkv, kCache, vCache, s, slopes, rowScratch, stream_);
  }

 private:
  // Copies n host values into the staging area and returns their device address (valid until
  // the next stage(); stream order keeps earlier kernels reading their own values).
  template <typename Value>
  const Value* stage(const Value* host, int n) {
    void* area = hostArgs_.reserve(static_cast<size_t>(n) * sizeof(Value), stream_);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(area, host, static_cast<size_t>(n) * sizeof(Value), cudaMemcpyHostToDevice, stream_));
    return static_cast<const Value*>(area);
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceScratch hostArgs_;       // staged host arguments (tokens, rows + gates, ALiBi slopes)
  DeviceScratch attentionRows_;  // (H, T, Tk) probabilities when the caller wants none
};

}  // namespace

bool cudaDeviceAvailable(std::string* reason) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear it, so no later check reports it
    if (reason) *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
    return false;
  }
  if (count == 0) {
    if (reason) *reason = "cudaGetDeviceCount found 0 devices";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> makeCudaBackend(int device, std::string* description) {
  std::string reason;
  if (!cudaDeviceAvailable(&reason)) throw Error("no CUDA device (" + reason + ")");
  cudaDeviceProp properties{};
  TSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  auto backend = std::make_unique<CudaBackend>(device);
  if (description)
    *description = std::string(properties.name) + " (device " + std::to_string(device) + ", sm_" + std::to_string(properties.major) +
                   std::to_string(properties.minor) + ", " + std::to_string(properties.totalGlobalMem >> 30) + " GiB)";
  return backend;
}

}  // namespace tscope

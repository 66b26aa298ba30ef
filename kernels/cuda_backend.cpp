// CudaBackend: the Backend interface on one CUDA device. Memory is cudaMalloc'd and zero-filled on
// the backend's own stream, every op is enqueued on that stream (cuBLAS is bound to it), and only
// download() and sync() wait for it. Host-side arguments (token ids, MoE rows and gates) go
// through a pinned ring (host_staging.h): copied there at once, so the caller may reuse its
// arrays, and sent by an asynchronous copy that does not wait for the stream.
#include "kernels/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>  // attention: std::equal over ALiBi slopes
#include <memory>
#include <utility>
#include <vector>
#include <string>

#include "kernels/cuda_backward.h"  // CudaStreamContext (training shares the stream and cuBLAS handle)
#include "kernels/cublas_loader.h"
#include "kernels/cuda_check.h"
#include "kernels/device_scratch.h"
#include "kernels/host_staging.h"
#include "kernels/launchers.h"
#include "model/core/error.h"
#include "model/generate/sampling.h"

namespace tscope {
namespace {

using namespace tscope::cuda;

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    TSCOPE_CUDA_CHECK(cudaSetDevice(device));
    TSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TSCOPE_CUBLAS_CHECK(cublasCreate(&cublas_));
    TSCOPE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    TSCOPE_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));  // full FP32: no TF32 rounding of the inputs
    // A fixed cuBLAS workspace, so captured GEMMs never allocate (cuBLAS's advice for CUDA graphs).
    TSCOPE_CUDA_CHECK(cudaMalloc(&cublasWorkspace_, kCublasWorkspaceBytes));
    TSCOPE_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublasWorkspace_, kCublasWorkspaceBytes));
  }
  ~CudaBackend() override {
    // Buffers owned by this backend must be gone already (they call release()).
    cudaStreamSynchronize(stream_);
    if (stepGraph_) cudaGraphExecDestroy(stepGraph_);
    if (stepHost_) cudaFreeHost(stepHost_);
    if (stepDevice_) cudaFree(stepDevice_);
    cudaFree(cublasWorkspace_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  bool isHost() const override { return false; }
  CudaStreamContext context() const { return {device_, stream_, cublas_}; }  // for training (cuda_backward.h)

  // --- memory -----------------------------------------------------------------------------
  Buffer allocate(size_t count) override {
    if (recording_) throw Error("CUDA backend: allocate while a decode step is recorded");
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
    if (recording_) throw Error("CUDA backend: upload while a decode step is recorded");
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, hostSrc, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  }
  void download(float* hostDst, const float* src, size_t count) override {
    if (recording_) throw Error("CUDA backend: download while a decode step is recorded");
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(hostDst, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(float* dst, const float* src, size_t count) override {
    if (count) TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
  void sync() override {
    if (recording_) throw Error("CUDA backend: sync while a decode step is recorded");
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // --- ops -------------------------------------------------------------------------------------
  void embed(float* out, const int* hostTokens, const float* wte, const float* positions, int T, int C, int pos0) override {
    const int* tokens = stage(hostTokens, T);
    launchEmbed(out, tokens, wte, positions, T, C, pos0, stream_);
  }
  void layerNorm(float* out, const float* in, const float* weight, const float* bias, int T, int C, float eps) override {
    launchLayerNorm(out, in, weight, bias, T, C, eps, stream_);
  }
  void headRmsNorm(float* qkv, const float* qWeight, const float* kWeight, int rows, int H, int Hkv, int D, int stride, float eps) override {
    launchHeadRmsNorm(qkv, qWeight, kWeight, rows, H, Hkv, D, stride, eps, stream_);
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
  // Fused ops (norm.cu, matmul.cu): one kernel per row for add + norm; GEMM then one bias + activation pass.
  void addNorm(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, NormKind kind) override {
    if (kind == NormKind::None) return Backend::addNorm(x, y, out, weight, bias, T, C, eps, kind);  // add, then copy
    launchAddNorm(x, y, out, weight, bias, T, C, eps, kind, stream_);
  }
  void matmulActivate(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N, Activation activation) override {
    if (activation == Activation::SwiGlu) return matmul(out, in, weight, bias, T, K, N);  // as the default: swiglu() applies it
    launchMatmulActivate(cublas_, out, in, weight, bias, T, K, N, activation, stream_);
  }
  // Samples on the device (sampling.cu): only the rng state goes over, and the token, the error
  // code and the advanced rng state come back, in the one wait.
  int sampleToken(const float* logits, int V, const SamplingParams& params, Rng& rng) override {
    if (V <= 0) throw Error("logits are empty");
    if (!params.greedy)  // sampleNext validates only what it uses: greedy ignores the knobs
      if (const char* problem = validateSamplingParams(params); *problem) throw Error(problem);
    if (recording_) throw Error("CUDA backend: sampleToken waits for the device; a recorded step samples with sampleStep");
    char* area = static_cast<char*>(sampling_.reserve(kSampleExchangeBytes + sampleScratchBytes(V), stream_));
    SampleExchange exchange{};
    std::memcpy(exchange.rng, rng.state(), sizeof exchange.rng);
    exchange.token = -1;
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(area, &exchange, sizeof exchange, cudaMemcpyHostToDevice, stream_));
    launchSample(logits, V, params.temperature, params.topK, params.topP, params.greedy,
                 reinterpret_cast<unsigned long long*>(area + offsetof(SampleExchange, rng)),
                 reinterpret_cast<int*>(area + offsetof(SampleExchange, token)), reinterpret_cast<int*>(area + offsetof(SampleExchange, error)),
                 nullptr, area + kSampleExchangeBytes, stream_);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(&exchange, area, sizeof exchange, cudaMemcpyDeviceToHost, stream_));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (exchange.error != kSampleOk) throw Error(sampleErrorMessage(exchange.error));
    rng.setState(exchange.rng);
    return exchange.token;
  }
  // --- recorded decode steps (CUDA graphs) -------------------------------------------------------
  // The step state (rng, token, position, error) lives in device memory; every step op reads it
  // there, so one captured graph serves every token. Each step ends by copying the state into
  // pinned host memory (a node of the graph), which stepResult() reads after the one wait.
  bool canRecordSteps() const override { return true; }
  void beginRecording() override {
    if (recording_) throw Error("CUDA backend: already recording a decode step");
    ensureStepState();
    TSCOPE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    recording_ = true;
    ++cuda::capturesInProgress();  // TSCOPE_CUDA_SYNC must not wait inside the capture
  }
  void endRecording() override {
    if (!recording_) throw Error("CUDA backend: endRecording without beginRecording");
    recording_ = false;
    --cuda::capturesInProgress();
    cudaGraph_t graph = nullptr;
    TSCOPE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    if (stepGraph_) {
      TSCOPE_CUDA_CHECK(cudaGraphExecDestroy(stepGraph_));
      stepGraph_ = nullptr;
    }
    const cudaError_t instantiated = cudaGraphInstantiate(&stepGraph_, graph, 0);
    cudaGraphDestroy(graph);
    ++recordingCount_;
    TSCOPE_CUDA_CHECK(instantiated);
  }
  uint64_t recordingCount() const override { return recordingCount_; }
  void setStep(int token, int position, const Rng& rng) override {
    if (recording_) throw Error("CUDA backend: setStep while recording");
    ensureStepState();
    StepState state{};
    std::memcpy(state.rng, rng.state(), sizeof state.rng);
    state.token = token;
    state.position = position;
    // An earlier step's copy into stepHost_ may still be queued: let it land before overwriting.
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    *stepHost_ = state;
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(stepDevice_, stepHost_, sizeof(StepState), cudaMemcpyHostToDevice, stream_));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // stepHost_ is rewritten by every step
  }
  int replayStep(Rng* rng) override {
    if (!stepGraph_) throw Error("CUDA backend: no decode step was recorded");
    TSCOPE_CUDA_CHECK(cudaGraphLaunch(stepGraph_, stream_));
    return stepResult(rng);
  }
  int stepResult(Rng* rng) override {
    if (recording_) throw Error("CUDA backend: stepResult while recording");
    if (!stepHost_) throw Error("CUDA backend: no decode step state (setStep)");
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const StepState state = *stepHost_;
    if (state.error != kSampleOk) throw Error(sampleErrorMessage(state.error));
    if (rng) rng->setState(state.rng);
    return state.token;
  }
  void embedStep(float* out, const float* wte, const float* positions, int C) override {
    if (!stepDevice_) throw Error("CUDA backend: embedStep without the step state (setStep)");
    launchEmbedStep(out, &stepDevice_->token, &stepDevice_->position, wte, positions, C, stream_);
  }
  void sampleStep(const float* logits, int V, const SamplingParams& params) override {
    if (!stepDevice_) throw Error("CUDA backend: sampleStep without the step state (setStep)");
    if (!params.greedy)
      if (const char* problem = validateSamplingParams(params); *problem) throw Error(problem);
    const size_t bytes = sampleScratchBytes(V);
    if (bytes > stepSampleBytes_) {
      if (recording_) throw Error("CUDA backend: the sampler's scratch would grow while recording");
      // The recorded step reads the old area: it may not be replayed any more.
      if (stepGraph_) TSCOPE_CUDA_CHECK(cudaGraphExecDestroy(stepGraph_));
      stepGraph_ = nullptr;
      ++recordingCount_;
      stepSampleBytes_ = bytes;
    }
    void* scratch = stepSampling_.reserve(bytes, stream_);
    launchSample(logits, V, params.temperature, params.topK, params.topP, params.greedy, reinterpret_cast<unsigned long long*>(stepDevice_->rng),
                 &stepDevice_->token, &stepDevice_->error, &stepDevice_->position, scratch, stream_);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(stepHost_, stepDevice_, sizeof(StepState), cudaMemcpyDeviceToHost, stream_));
  }

  void zero(float* x, size_t n) override {
    if (n) TSCOPE_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), stream_));
  }
  void gatherRows(float* out, const float* in, const int* hostRows, int n, int C) override {
    if (n <= 0) return;
    launchGatherRows(out, in, stage(hostRows, n), n, C, stream_);
  }
  void scatterAddRows(float* out, const float* in, const int* hostRows, const float* hostWeights, int n, int C) override {
    if (recording_) throw Error("CUDA backend: host arguments cannot be staged while a decode step is recorded");
    if (n <= 0) return;
    const int* rows = stage(hostRows, n);
    const float* weights = stage(hostWeights, n);
    launchScatterAddRows(out, in, rows, weights, n, C, stream_);
  }
  void attention(float* out, float* probs, float* scores, float* qkv, float* kCache, float* vCache, const AttentionShape& s) override {
    if (s.T <= 0) return;
    if (s.nKvHead > 0 && s.nHead % s.nKvHead != 0) throw Error("attention: nKvHead must divide nHead");
    if (s.ropeBase > 0 && s.headDim % 2 != 0) throw Error("attention: RoPE needs an even head dimension");
    if (s.cacheRows > 0 && s.keys() > s.cacheRows) throw Error("attention: pos0 + T is past the cache's rows");
    // Everything checkable is checked before any kernel runs: the launchers rotate qkv and write
    // the cache first, so a late throw would leave them changed.
    if (s.headDim > 256) throw Error("attention: head dimension " + std::to_string(s.headDim) + " is over the CUDA kernels' 256");
    const int* position = nullptr;
    if (s.stepPosition) {
      if (s.T != 1) throw Error("attention: a recorded decode step has T == 1");
      if (probs || scores) throw Error("attention: a recorded decode step captures no attention maps");
      if (!stepPosition_) throw Error("attention: stepPosition without the backend's step state (beginRecording)");
      position = stepPosition_;
    }
    const float* slopes = s.alibiSlopes ? deviceAlibiSlopes(s.alibiSlopes, s.nHead) : nullptr;
    float* scratch = reserveAttentionScratch(attentionScratchFloats(s, out, qkv, kCache, vCache));
    launchAttention(out, qkv, kCache, vCache, s, slopes, position, scratch, stream_);
    if (probs || scores) launchAttentionMaps(probs, scores, qkv, kCache, scratch, s, slopes, stream_);
  }

 private:
  // --- attention's device state ---------------------------------------------------------------
  // Attention's scratch (lse, split-key partials) of at least `floats`. Growth is refused while a
  // step is recorded (Transformer::decodeRecorded runs the first step unrecorded, which sizes it),
  // and an outgrown area is kept, not freed, because a recorded step may still point at it; areas
  // grow by doubling, so the kept ones add up to less than the current one.
  float* reserveAttentionScratch(size_t floats) {
    const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
    if (!attentionScratch_ || bytes > attentionScratchBytes_) {
      if (recording_) throw Error("attention: its scratch would have to grow while a decode step is recorded");
      size_t grown = size_t{1} << 16;
      while (grown < bytes) grown *= 2;
      if (attentionScratch_) retiredAttentionScratch_.push_back(std::move(attentionScratch_));
      attentionScratch_ = std::make_unique<DeviceScratch>();
      attentionScratch_->reserve(grown, stream_);
      attentionScratchBytes_ = grown;
    }
    return static_cast<float*>(attentionScratch_->reserve(bytes, stream_));
  }
  // A device copy of the ALiBi slopes (H), uploaded once per distinct set of values and kept for
  // the backend's life (recorded steps read them by address); no upload while recording.
  const float* deviceAlibiSlopes(const float* host, int H) {
    for (auto& [values, copy] : alibiCopies_)
      if (values.size() == static_cast<size_t>(H) && std::equal(values.begin(), values.end(), host))
        return static_cast<const float*>(copy->reserve(values.size() * sizeof(float), stream_));
    if (recording_) throw Error("attention: ALiBi slopes seen for the first time while a decode step is recorded");
    auto copy = std::make_unique<DeviceScratch>();
    void* area = copy->reserve(static_cast<size_t>(H) * sizeof(float), stream_);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(area, host, static_cast<size_t>(H) * sizeof(float), cudaMemcpyHostToDevice, stream_));
    alibiCopies_.emplace_back(std::vector<float>(host, host + H), std::move(copy));
    return static_cast<const float*>(area);
  }

 private:
  // Copies n host values through the pinned ring and returns their device address (valid for the
  // work enqueued after it: the ring waits for the stream before it reuses a slice).
  template <typename Value>
  const Value* stage(const Value* host, int n) {
    if (recording_) throw Error("CUDA backend: host arguments cannot be staged while a decode step is recorded");
    return static_cast<const Value*>(hostArgs_.put(host, static_cast<size_t>(n) * sizeof(Value), stream_));
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  bool recording_ = false;  // between beginRecording() and endRecording(): no staging, no scratch growth
  HostStaging hostArgs_;    // staged host arguments (tokens, rows + gates)
  // attention: scratch (lse (H, T), split-key partials), outgrown scratch areas, ALiBi copies.
  std::unique_ptr<DeviceScratch> attentionScratch_;
  // Recorded decode steps: the state in device memory and its pinned host mirror, the graph, the
  // sampler's scratch, and the cuBLAS workspace (fixed, so captured GEMMs never allocate).
  struct StepState {
    uint64_t rng[4];  // xoshiro256** state (Rng::state())
    int token;        // the token to feed next (sampleStep writes the one it drew)
    int position;     // its position (sampleStep adds 1)
    int error;        // a SampleError from the last sampleStep
    int unused;
  };
  void ensureStepState() {
    if (stepDevice_) return;
    if (recording_) throw Error("CUDA backend: no step state while recording");
    TSCOPE_CUDA_CHECK(cudaMalloc(&stepDevice_, sizeof(StepState)));
    TSCOPE_CUDA_CHECK(cudaMallocHost(&stepHost_, sizeof(StepState)));
    stepPosition_ = &stepDevice_->position;
  }
  StepState* stepDevice_ = nullptr;
  StepState* stepHost_ = nullptr;  // pinned
  // The step position in device memory (null until the step state exists); attention() reads it
  // when shape.stepPosition.
  int* stepPosition_ = nullptr;
  cudaGraphExec_t stepGraph_ = nullptr;
  DeviceScratch stepSampling_;
  size_t stepSampleBytes_ = 0;
  uint64_t recordingCount_ = 0;  // recordings, and invalidations of the recorded step
  static constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
  void* cublasWorkspace_ = nullptr;
  size_t attentionScratchBytes_ = 0;
  std::vector<std::unique_ptr<DeviceScratch>> retiredAttentionScratch_;
  std::vector<std::pair<std::vector<float>, std::unique_ptr<DeviceScratch>>> alibiCopies_;
  // sampleToken's device area: a SampleExchange, then sampleScratchBytes(V) of scratch.
  struct SampleExchange {
    uint64_t rng[4];  // xoshiro256** state (Rng::state())
    int token;
    int error;  // a SampleError
  };
  static constexpr size_t kSampleExchangeBytes = 256;  // keeps the scratch 256-byte aligned
  static_assert(sizeof(SampleExchange) <= kSampleExchangeBytes);
  DeviceScratch sampling_;
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
  const std::string cublas = cublasLoadProblem();
  if (!cublas.empty()) {
    if (reason) *reason = cublas;
    return false;
  }
  return true;
}

CudaStreamContext cudaStreamContext(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw Error("training on the device needs the CUDA backend, got '" + backend.name() + "'");
  return cuda->context();
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

// CudaBackwardOps and CudaAdamW (see cuda_backward.h): host-side plumbing around the launchers of
// backward_*.cu and adamw.cu. Host arguments (token ids, targets, the scored mask) are copied into
// a reused device staging area, and op workspaces (norm statistics, column partial sums, the
// attention maps of one sequence) live in one growable scratch area; both grow only after waiting
// for the stream, so queued kernels never read freed memory.
#include "kernels/cuda_backward.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/device_scratch.h"
#include "kernels/host_staging.h"
#include "kernels/launchers.h"
#include "model/core/error.h"

namespace tscope {
namespace {

using namespace tscope::cuda;

class CudaBackwardOps : public BackwardOps {
 public:
  explicit CudaBackwardOps(Backend& backend) : context_(cudaStreamContext(backend)) {
    stream_ = static_cast<cudaStream_t>(context_.stream);
    cublas_ = static_cast<cublasHandle_t>(context_.cublas);
  }
  ~CudaBackwardOps() override { cudaStreamSynchronize(stream_); }  // the areas may still be read by queued work

  std::string name() const override { return "cuda"; }

  void embed(float* dwte, float* dpositions, const float* dout, const int* tokens, int rows, int T, int C) override {
    if (rows <= 0 || C <= 0) return;
    if (T <= 0 || rows % T != 0) throw Error("embedding backward: rows must be a multiple of T");
    // A bad id would make the kernel write outside dwte: check on the host, where the ids are.
    for (int r = 0; r < rows; ++r)
      if (tokens[r] < 0) throw Error("embedding backward: negative token id " + std::to_string(tokens[r]));
    // Bucket the rows by token on the host (stable: rows ascend within a bucket), so the device
    // sums each token's rows in a fixed order with no atomics.
    std::vector<int> order(rows);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tokens[a] < tokens[b]; });
    std::vector<int> bucketTokens, bucketStarts;
    for (int i = 0; i < rows; ++i)
      if (i == 0 || tokens[order[i]] != tokens[order[i - 1]]) {
        bucketTokens.push_back(tokens[order[i]]);
        bucketStarts.push_back(i);
      }
    bucketStarts.push_back(rows);
    const int buckets = static_cast<int>(bucketTokens.size());
    // One staging area: tokens (buckets) | starts (buckets + 1) | rows (rows).
    std::vector<int> packed;
    packed.reserve(bucketTokens.size() + bucketStarts.size() + order.size());
    packed.insert(packed.end(), bucketTokens.begin(), bucketTokens.end());
    packed.insert(packed.end(), bucketStarts.begin(), bucketStarts.end());
    packed.insert(packed.end(), order.begin(), order.end());
    const int* staged = stage(packed.data(), packed.size());
    launchEmbedTokensBackward(dwte, dout, staged, staged + buckets, staged + 2 * buckets + 1, buckets, C, stream_);
    if (dpositions) launchEmbedPositionsBackward(dpositions, dout, rows, T, C, stream_);
  }

  void layerNorm(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int C,
                 float eps) override {
    float* scratch = work(normBackwardScratchFloats(rows, C));
    launchLayerNormBackward(din, dweight, dbias, dout, in, weight, rows, C, eps, scratch, stream_);
  }
  void rmsNorm(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int C, float eps) override {
    float* scratch = work(normBackwardScratchFloats(rows, C));
    launchRmsNormBackward(din, dweight, dout, in, weight, rows, C, eps, scratch, stream_);
  }
  void matmul(float* din, float* dweight, float* dbias, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    float* scratch = dbias ? work(matmulBackwardScratchFloats(rows, N)) : nullptr;
    launchMatmulBackward(cublas_, din, dweight, dbias, dout, in, weight, rows, K, N, scratch, stream_);
  }
  void matmulTransposed(float* din, float* dweight, const float* dout, const float* in, const float* weight, int rows, int K, int N) override {
    launchMatmulTransposedBackward(cublas_, din, dweight, dout, in, weight, rows, K, N);
  }
  void activation(float* din, const float* dout, const float* in, size_t n, Activation activation) override {
    launchActivationBackward(din, dout, in, n, activation, stream_);
  }
  void swiglu(float* dgate, float* dvalue, const float* dout, const float* gate, const float* value, size_t n) override {
    launchSwigluBackward(dgate, dvalue, dout, gate, value, n, stream_);
  }
  void attention(float* dqkv, const float* dout, const float* qkv, const AttentionShape& shape, int batch) override {
    requireNoCache(shape);
    if (shape.T <= 0 || batch <= 0) return;
    const float* slopes = nullptr;
    if (shape.alibiSlopes) slopes = stage(shape.alibiSlopes, static_cast<size_t>(shape.nHead));
    float* scratch = work(attentionBackwardScratchFloats(shape));
    launchAttentionBackward(dqkv, dout, qkv, shape, batch, slopes, scratch, stream_);
  }
  double crossEntropy(float* dlogits, const float* logits, const int* targets, const uint8_t* scored, int rows, int V, float scale) override {
    if (rows <= 0) return 0;
    for (int r = 0; r < rows; ++r)
      if ((!scored || scored[r]) && (targets[r] < 0 || targets[r] >= V))
        throw Error("crossEntropy: target " + std::to_string(targets[r]) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
    // Targets and the scored flags go through the pinned ring; the row losses (doubles) come back.
    const int* deviceTargets = stage(targets, static_cast<size_t>(rows));
    const uint8_t* deviceScored = scored ? stage(scored, static_cast<size_t>(rows)) : nullptr;
    auto* rowLoss = static_cast<double*>(rowLoss_.reserve(rows * sizeof(double), stream_));
    launchCrossEntropyBackward(dlogits, logits, deviceTargets, deviceScored, rows, V, scale, rowLoss, stream_);
    hostLoss_.resize(rows);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(hostLoss_.data(), rowLoss, rows * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    double sum = 0;  // in row order, as the reference sums
    for (double loss : hostLoss_) sum += loss;
    return sum;
  }

 private:
  // Copies n host values through the pinned ring (host_staging.h) and returns their device address.
  template <typename Value>
  const Value* stage(const Value* host, size_t n) {
    return static_cast<const Value*>(hostArgs_.put(host, n * sizeof(Value), stream_));
  }
  float* work(size_t floats) { return static_cast<float*>(work_.reserve(std::max<size_t>(floats, 1) * sizeof(float), stream_)); }

  CudaStreamContext context_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  HostStaging hostArgs_;   // staged host arguments (pinned ring)
  DeviceScratch work_;     // op workspaces
  DeviceScratch rowLoss_;  // (rows) doubles of crossEntropy
  std::vector<double> hostLoss_;
};

}  // namespace

std::unique_ptr<BackwardOps> makeCudaBackwardOps(Backend& cudaBackend) { return std::make_unique<CudaBackwardOps>(cudaBackend); }

// ---- CudaAdamW ----------------------------------------------------------------------------------

CudaAdamW::CudaAdamW(Backend& cudaBackend, size_t n, AdamWConfig config)
    : backend_(&cudaBackend), context_(cudaStreamContext(cudaBackend)), config_(config), n_(n) {
  validate(config_);
  m_ = backend_->allocate(n);
  v_ = backend_->allocate(n);
  // sumSquaresScratchDoubles() partials + 1 result, as doubles in a float buffer.
  normScratch_ = backend_->allocate(2 * (sumSquaresScratchDoubles() + 1));
}

CudaAdamW::~CudaAdamW() = default;

void CudaAdamW::setDecayMask(const uint8_t* hostMask) {
  if (!hostMask) {
    decayMask_ = Buffer();
    return;
  }
  if (decayMask_.size() * sizeof(float) < n_) decayMask_ = backend_->allocate((n_ + sizeof(float) - 1) / sizeof(float));
  if (n_) {
    auto stream = static_cast<cudaStream_t>(context_.stream);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(decayMask_.data(), hostMask, n_, cudaMemcpyHostToDevice, stream));
  }
}

void CudaAdamW::step(float* params, const float* grads, float lr) {
  if (!(std::isfinite(lr) && lr >= 0)) throw Error("AdamW::step: lr must be finite and >= 0, got " + std::to_string(lr));
  if (n_ > 0 && (params == nullptr || grads == nullptr)) throw Error("AdamW::step: null params or grads");
  ++step_;
  // The scalars exactly as AdamW::step computes them (model/train/optimizer.cpp).
  const double beta1 = config_.beta1, beta2 = config_.beta2;
  const double biasCorrection1 = 1.0 - std::pow(beta1, static_cast<double>(step_));
  const double biasCorrection2 = 1.0 - std::pow(beta2, static_cast<double>(step_));
  AdamWScalars s{};
  s.decayFactor = static_cast<float>(1.0 - double(lr) * double(config_.weightDecay));
  s.b1 = config_.beta1;
  s.oneMinusB1 = static_cast<float>(1.0 - beta1);
  s.b2 = config_.beta2;
  s.oneMinusB2 = static_cast<float>(1.0 - beta2);
  s.stepSize = static_cast<float>(double(lr) / biasCorrection1);
  s.biasCorrection2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
  s.eps = config_.eps;
  const auto* mask = decayMask_.data() ? reinterpret_cast<const uint8_t*>(decayMask_.data()) : nullptr;
  launchAdamW(params, grads, m_.data(), v_.data(), mask, n_, s, static_cast<cudaStream_t>(context_.stream));
}

double CudaAdamW::clipGradNorm(float* grads, size_t n, float maxNorm) {
  if (std::isnan(maxNorm) || std::isinf(maxNorm)) throw Error("clipGradNorm: maxNorm must be finite, got " + std::to_string(maxNorm));
  auto stream = static_cast<cudaStream_t>(context_.stream);
  auto* partials = reinterpret_cast<double*>(normScratch_.data());
  double* result = partials + sumSquaresScratchDoubles();
  double sumSquares = 0;
  if (n) {
    launchSumSquares(result, grads, n, partials, stream);
    TSCOPE_CUDA_CHECK(cudaMemcpyAsync(&sumSquares, result, sizeof(double), cudaMemcpyDeviceToHost, stream));
    TSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const double norm = std::sqrt(sumSquares);
  if (maxNorm <= 0) return norm;  // measured only
  if (std::isfinite(norm) && norm > maxNorm) launchScale(grads, n, static_cast<float>(double(maxNorm) / norm), stream);
  return static_cast<float>(norm);
}

void CudaAdamW::divide(float* x, size_t n, float divisor) { launchScale(x, n, 1.0f / divisor, static_cast<cudaStream_t>(context_.stream)); }

AdamWState CudaAdamW::saveState() const {
  AdamWState state;
  state.m.resize(n_);
  state.v.resize(n_);
  state.step = step_;
  backend_->download(state.m.data(), m_.data(), n_);
  backend_->download(state.v.data(), v_.data(), n_);
  return state;
}

void CudaAdamW::loadState(const AdamWState& state) {
  if (state.m.size() != n_) throw Error("AdamWState.m has " + std::to_string(state.m.size()) + " values, the optimizer has " + std::to_string(n_));
  if (state.v.size() != n_) throw Error("AdamWState.v has " + std::to_string(state.v.size()) + " values, the optimizer has " + std::to_string(n_));
  if (state.step < 0) throw Error("AdamWState.step must be >= 0, got " + std::to_string(state.step));
  backend_->upload(m_.data(), state.m.data(), n_);
  backend_->upload(v_.data(), state.v.data(), n_);
  step_ = state.step;
}

}  // namespace tscope

// Training on a CUDA device, behind plain C++ (no CUDA header, so model-side code and the tests
// include it in any build that links tscope_kernels): the BackwardOps of model/train/backward.h on
// device memory, and AdamW with its state (m, v) on the device. Both run on the stream and cuBLAS
// handle of the CUDA forward Backend they are made from, so forward, backward and optimizer work
// is ordered on one stream with no extra synchronisation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "model/nn/backend.h"
#include "model/train/backward.h"
#include "model/train/device.h"
#include "model/train/optimizer.h"

namespace tscope {

// The device, stream (cudaStream_t) and cuBLAS handle (cublasHandle_t) of a backend made by
// makeCudaBackend, as opaque pointers. Throws tscope::Error if `backend` is not a CUDA backend.
// (Defined in cuda_backend.cpp, which owns them; valid while the backend lives.)
struct CudaStreamContext {
  int device = 0;
  void* stream = nullptr;
  void* cublas = nullptr;
};
CudaStreamContext cudaStreamContext(Backend& backend);

// BackwardOps whose float pointers are device memory of `cudaBackend` (Buffers from its
// allocate()); tokens, targets and the scored mask stay HOST pointers, as in model/train/backward.h
// (they are staged to the device). Every contract of backward.h holds: gradients accumulate (+=),
// crossEntropy writes dlogits (=) and may run in place, null gradients are not computed.
// crossEntropy waits for the stream (it returns the loss); the other ops only enqueue work.
// Deterministic: the embedding's gradient is summed per token in row order from host-built
// buckets, column sums run in a fixed order, and there are no floating-point atomics.
// Keeps a reference to the backend, which must outlive it.
std::unique_ptr<BackwardOps> makeCudaBackwardOps(Backend& cudaBackend);

// AdamW (model/train/optimizer.h) with m and v in device memory of `cudaBackend`: the DeviceAdamW
// of the CUDA Device (kernels/cuda_device.h); params and grads are device pointers. Each element
// gets the same float operations as AdamW::step (no FMA contraction on the device), with the
// scalars computed on the host exactly as AdamW::step does.
class CudaAdamW : public DeviceAdamW {
 public:
  CudaAdamW(Backend& cudaBackend, size_t n, AdamWConfig config);
  ~CudaAdamW() override;
  CudaAdamW(const CudaAdamW&) = delete;
  CudaAdamW& operator=(const CudaAdamW&) = delete;

  // The decay mask for every later step: host (n) bytes, copied to the device; null = decay all.
  void setDecayMask(const uint8_t* hostMask) override;
  // One update of params (n) from grads (n), both device memory; lr finite and >= 0. Enqueues only.
  void step(float* params, const float* grads, float lr) override;
  // DeviceAdamW::clipGradNorm on device grads (n): the squared norm is summed in double on the
  // device (deterministic, but not in the CPU's index order), then downloaded (waits for the
  // stream); with maxNorm > 0, grads are scaled by float(maxNorm / norm) when the norm is finite
  // and above maxNorm.
  double clipGradNorm(float* grads, size_t n, float maxNorm) override;
  // x (n, device) *= 1 / divisor (averaging accumulated gradients). Enqueues only.
  void divide(float* x, size_t n, float divisor) override;

  size_t size() const { return n_; }
  int64_t stepCount() const override { return step_; }
  const AdamWConfig& config() const { return config_; }
  AdamWState saveState() const override;             // downloads m and v
  void loadState(const AdamWState& state) override;  // throws tscope::Error as AdamW::loadState

 private:
  Backend* backend_;
  CudaStreamContext context_;
  AdamWConfig config_;
  size_t n_;
  int64_t step_ = 0;
  Buffer m_, v_;        // (n)
  Buffer decayMask_;    // (n) bytes in ceil(n / 4) floats; empty = decay all
  Buffer normScratch_;  // partial sums (doubles) and the result
};

}  // namespace tscope

// One object per compute backend for training: the forward ops and memory (Backend), the backward
// ops on that memory (BackwardOps) and the optimizer step on it (DeviceAdamW: AdamW, clipping,
// averaging). Made together, so they cannot be paired wrongly: makeCpuDevice / makeReferenceDevice
// here, the CUDA one in kernels/cuda_device.h, the run-time choice in model/select/backend_select.h.
// TrainModel and Trainer are written once against a Device; callers that only infer take forward().
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/nn/backend.h"
#include "model/train/backward.h"
#include "model/train/optimizer.h"

namespace tscope {

// AdamW with its state in a device's memory; params and grads are pointers into that memory (on
// the host: optimizer.h's AdamW and clipGradNorm, bit for bit).
class DeviceAdamW {
 public:
  virtual ~DeviceAdamW() = default;
  // Host (n) bytes copied for every later step; null = decay all.
  virtual void setDecayMask(const uint8_t* hostMask) = 0;
  // One update of params (n) from grads (n); lr finite and >= 0.
  virtual void step(float* params, const float* grads, float lr) = 0;
  // The global L2 norm of grads (n), returned; maxNorm > 0: grads are clipped to it first as
  // clipGradNorm (optimizer.h) does (the norm is then rounded to float, as clipGradNorm returns
  // it); maxNorm <= 0: grads are left alone and the norm is the double sum's square root.
  virtual double clipGradNorm(float* grads, size_t n, float maxNorm) = 0;
  // x (n) /= divisor (averaging accumulated gradients; the device may multiply by 1 / divisor).
  virtual void divide(float* x, size_t n, float divisor) = 0;
  virtual int64_t stepCount() const = 0;
  virtual AdamWState saveState() const = 0;  // host copies of m and v
  virtual void loadState(const AdamWState& state) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  // The forward ops and the memory (allocate, upload, download, copy, add) everything below uses.
  virtual Backend& forward() = 0;
  // The backward ops on forward()'s memory.
  virtual BackwardOps& backward() = 0;
  // AdamW over n parameters with its state in this device's memory.
  virtual std::unique_ptr<DeviceAdamW> makeAdamW(size_t n, AdamWConfig config) = 0;

  std::string name() { return forward().name(); }  // "cpu", "reference" or "cuda"
  bool isHost() { return forward().isHost(); }     // memory is plain host memory
};

// The Eigen forward and backward ops (threads 0: as makeCpuBackend(0)) and the plain-loop
// reference ones, both with optimizer.h's AdamW on host memory.
std::unique_ptr<Device> makeCpuDevice(int threads = 0);
std::unique_ptr<Device> makeReferenceDevice();

}  // namespace tscope

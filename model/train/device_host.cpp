// The host devices (see device.h): the CPU (Eigen) or reference (plain loops) forward and backward
// ops, and HostAdamW, which is optimizer.h's AdamW and clipGradNorm on host memory, bit for bit
// (a CPU training run stays bit-reproducible, and resumes bit for bit).
#include <cmath>
#include <vector>

#include "model/train/device.h"

namespace tscope {

namespace {

class HostAdamW : public DeviceAdamW {
 public:
  HostAdamW(size_t n, AdamWConfig config) : adamw_(n, config) {}
  void setDecayMask(const uint8_t* hostMask) override {
    if (hostMask) mask_.assign(hostMask, hostMask + adamw_.size());
    else mask_.clear();
  }
  void step(float* params, const float* grads, float lr) override { adamw_.step(params, grads, mask_.empty() ? nullptr : mask_.data(), lr); }
  double clipGradNorm(float* grads, size_t n, float maxNorm) override {
    if (maxNorm > 0) return tscope::clipGradNorm(grads, n, maxNorm);
    double sumSquares = 0;
    for (size_t i = 0; i < n; ++i) sumSquares += (double)grads[i] * grads[i];
    return std::sqrt(sumSquares);
  }
  void divide(float* x, size_t n, float divisor) override {
    for (size_t i = 0; i < n; ++i) x[i] /= divisor;
  }
  int64_t stepCount() const override { return adamw_.stepCount(); }
  AdamWState saveState() const override { return adamw_.saveState(); }
  void loadState(const AdamWState& state) override { adamw_.loadState(state); }

 private:
  AdamW adamw_;
  std::vector<uint8_t> mask_;
};

class HostDevice : public Device {
 public:
  HostDevice(std::unique_ptr<Backend> forward, std::unique_ptr<BackwardOps> backward)
      : forward_(std::move(forward)), backward_(std::move(backward)) {}
  Backend& forward() override { return *forward_; }
  BackwardOps& backward() override { return *backward_; }
  std::unique_ptr<DeviceAdamW> makeAdamW(size_t n, AdamWConfig config) override { return std::make_unique<HostAdamW>(n, config); }

 private:
  std::unique_ptr<Backend> forward_;
  std::unique_ptr<BackwardOps> backward_;
};

}  // namespace

std::unique_ptr<Device> makeCpuDevice(int threads) { return std::make_unique<HostDevice>(makeCpuBackend(threads), makeCpuBackwardOps(threads)); }

std::unique_ptr<Device> makeReferenceDevice() { return std::make_unique<HostDevice>(makeReferenceBackend(), makeReferenceBackwardOps()); }

}  // namespace tscope

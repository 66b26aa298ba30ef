// CudaDevice (see cuda_device.h): owns the CUDA backend and the backward ops made on it (declared
// in that order, so the ops, which keep a reference to the backend, are destroyed first); its
// optimizer is CudaAdamW on the same stream.
#include "kernels/cuda_device.h"

#include "kernels/cuda_backend.h"
#include "kernels/cuda_backward.h"

namespace tscope {

namespace {

class CudaDevice : public Device {
 public:
  CudaDevice(int device, std::string* description) : forward_(makeCudaBackend(device, description)), backward_(makeCudaBackwardOps(*forward_)) {}
  Backend& forward() override { return *forward_; }
  BackwardOps& backward() override { return *backward_; }
  std::unique_ptr<DeviceAdamW> makeAdamW(size_t n, AdamWConfig config) override { return std::make_unique<CudaAdamW>(*forward_, n, config); }

 private:
  std::unique_ptr<Backend> forward_;
  std::unique_ptr<BackwardOps> backward_;
};

}  // namespace

std::unique_ptr<Device> makeCudaDevice(int device, std::string* description) { return std::make_unique<CudaDevice>(device, description); }

}  // namespace tscope

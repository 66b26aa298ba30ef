// The CUDA training Device (model/train/device.h) in plain C++ (no CUDA header): the CUDA backend,
// its backward ops and CudaAdamW, all on the backend's one stream. backend_select.cpp offers it as
// makeDevice("cuda"); defined in kernels/cuda_device.cpp.
#pragma once
#include <memory>
#include <string>

#include "model/train/device.h"

namespace tscope {

// On CUDA device `device`; throws tscope::Error when there is no usable device. *description (if
// given) names the device as makeCudaBackend does.
std::unique_ptr<Device> makeCudaDevice(int device = 0, std::string* description = nullptr);

}  // namespace tscope

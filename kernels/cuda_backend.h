// The CUDA backend's entry points, in plain C++ (no CUDA header), so model/select/backend_select.cpp can
// offer it without the engine ever seeing CUDA. Defined in kernels/cuda_backend.cpp.
#pragma once
#include <memory>
#include <string>

#include "model/nn/backend.h"

namespace tscope {

// Whether a CUDA device can be used; when not, *reason says why in a few words, e.g.
// "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version".
bool cudaDeviceAvailable(std::string* reason);

// The CUDA backend on device `device`. Throws tscope::Error when there is no usable device.
// *description (if given) names the device: "NVIDIA H200 (device 0, sm_90, 139 GiB)".
std::unique_ptr<Backend> makeCudaBackend(int device = 0, std::string* description = nullptr);

}  // namespace tscope

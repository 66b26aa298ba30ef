// Picks a Backend by name at run time: "cpu" (Eigen), "reference" (plain loops), "cuda" (kernels/,
// when this build has it and a device is present) or "auto" (CUDA when usable, else the CPU, with
// a note saying why). Lives in the tscope_backends library, above tscope_model and tscope_kernels.
#pragma once
#include <memory>
#include <string>

#include "model/backend.h"

namespace tscope {

// Whether this build contains the CUDA backend (the toolkit was found at build time).
bool buildHasCuda();

// threads: for the CPU backend (0 = automatic). Throws tscope::Error (one line) for an unknown
// name or an unavailable "cuda". *note (if given) describes the choice for the user, e.g.
// "CUDA: NVIDIA H200 (device 0, sm_90, 139 GiB)" or "CPU: no CUDA device (cudaGetDeviceCount: ...)";
// empty for an explicit "cpu" or "reference".
std::unique_ptr<Backend> makeBackend(const std::string& name, int threads = 0, std::string* note = nullptr);

}  // namespace tscope

// Picks the compute by name at run time: "cpu" (Eigen), "reference" (plain loops), "cuda" (kernels/,
// when this build has it and a device is present) or "auto" (CUDA when usable, else the CPU, with
// a note saying why). makeBackend gives the forward ops alone (inference); makeDevice gives the
// whole training Device (model/train/device.h: forward, backward and optimizer on one memory).
// Lives in the tscope_backends library, above tscope_model and tscope_kernels.
#pragma once
#include <memory>
#include <string>

#include "model/nn/backend.h"
#include "model/train/device.h"

namespace tscope {

// Whether this build contains the CUDA backend (the toolkit was found at build time).
bool buildHasCuda();

// Whether the CUDA backend's libraries can be opened here: "" or one line saying why not (cuBLAS is
// opened on first use, not at start: kernels/cublas_loader.h). A build without CUDA says so.
std::string cudaLibraryProblem();

// threads: for the CPU backend (0 = automatic). Throws tscope::Error (one line) for an unknown
// name or an unavailable "cuda". *note (if given) describes the choice for the user, e.g.
// "CUDA: NVIDIA H200 (device 0, sm_90, 139 GiB)" or "CPU: no CUDA device (cudaGetDeviceCount: ...)";
// empty for an explicit "cpu" or "reference".
std::unique_ptr<Backend> makeBackend(const std::string& name, int threads = 0, std::string* note = nullptr);

// The same choice (names, errors, *note) for training: makeCpuDevice, makeReferenceDevice or the
// CUDA device (kernels/cuda_device.h).
std::unique_ptr<Device> makeDevice(const std::string& name, int threads = 0, std::string* note = nullptr);

// A Trainer's device: the GPU when `name` ("cpu", "cuda" or "auto") picks one, else null, so the
// Trainer makes its own CPU device from its run's thread count (bit-reproducible). Same errors and
// *note as makeDevice.
std::unique_ptr<Device> makeTrainingDevice(const std::string& name, std::string* note = nullptr);

}  // namespace tscope

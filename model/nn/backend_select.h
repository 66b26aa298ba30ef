// Picks a Backend by name at run time: "cpu" (Eigen), "reference" (plain loops), "cuda" (kernels/,
// when this build has it and a device is present) or "auto" (CUDA when usable, else the CPU, with
// a note saying why). Lives in the tscope_backends library, above tscope_model and tscope_kernels.
#pragma once
#include <memory>
#include <string>

#include "model/nn/backend.h"
#include "model/train/backward.h"
#include "model/train/optimizer.h"
#include "model/train/train_model.h"
#include "model/train/trainer.h"  // TrainCompute

namespace tscope {

// Whether this build contains the CUDA backend (the toolkit was found at build time).
bool buildHasCuda();

// threads: for the CPU backend (0 = automatic). Throws tscope::Error (one line) for an unknown
// name or an unavailable "cuda". *note (if given) describes the choice for the user, e.g.
// "CUDA: NVIDIA H200 (device 0, sm_90, 139 GiB)" or "CPU: no CUDA device (cudaGetDeviceCount: ...)";
// empty for an explicit "cpu" or "reference".
std::unique_ptr<Backend> makeBackend(const std::string& name, int threads = 0, std::string* note = nullptr);

// The BackwardOps that work on `forward`'s memory: "reference" -> the plain loops, "cpu" -> Eigen
// (threads as makeCpuBackwardOps), "cuda" -> the device ops on forward's stream (kernels/
// cuda_backward.h; forward must outlive them). Throws tscope::Error for any other backend.
std::unique_ptr<BackwardOps> makeBackwardOps(Backend& forward, int threads = 0);

// AdamW on `backend`'s memory (BackendAdamW, train_model.h): optimizer.h's AdamW and clipGradNorm
// on a host backend (bit for bit), CudaAdamW (state on the device) on CUDA.
std::unique_ptr<BackendAdamW> makeAdamW(Backend& backend, size_t n, AdamWConfig config);

}  // namespace tscope

namespace tscope {

// Everything a Trainer computes with, on the backend `name` names (as makeBackend: "cpu",
// "reference", "cuda" or "auto", *note as there).
TrainCompute makeTrainCompute(const std::string& name, int threads = 0, std::string* note = nullptr);

}  // namespace tscope

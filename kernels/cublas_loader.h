// cuBLAS, opened when the CUDA backend is first made instead of when the program starts. Linking
// libcublas costs every process about half a second of CPU before main() (libcublasLt's own
// initializers and page faults, measured on a 2-core machine without a GPU), so every tscope-cli
// run, app start and test process paid it, GPU or not. kernels/cublas_loader.cpp defines the few
// cuBLAS functions the kernels call; each forwards to the library, opened with dlopen on first use.
#pragma once
#include <string>

namespace tscope {

// Opens libcublas once per process and resolves every entry point the kernels call. Returns "" when
// all resolved, else one line naming what failed ("cannot open libcublas.so.13: ...").
std::string cublasLoadProblem();

}  // namespace tscope

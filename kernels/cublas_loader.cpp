// The cuBLAS functions the kernels call, defined here with cuBLAS's own signatures (from its header)
// and forwarded to the library, which is opened with dlopen on the first call (see cublas_loader.h
// for why). The library is the toolkit's file found at build time (TSCOPE_CUBLAS_PATH), else its
// soname on the loader's path. When it cannot be opened, every call answers
// CUBLAS_STATUS_NOT_INITIALIZED, and cudaDeviceAvailable() reports cublasLoadProblem() first.
#include "kernels/cublas_loader.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

namespace tscope {
namespace {

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSetMathMode) setMathMode = nullptr;
  decltype(&cublasSetWorkspace_v2) setWorkspace = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemv_v2) sgemv = nullptr;
  decltype(&cublasGetStatusName) statusName = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
  std::string problem;
};

template <class F>
void resolve(void* library, const char* name, F& slot, Cublas& api) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  if (!slot && api.problem.empty()) api.problem = std::string("the cuBLAS library has no ") + name;
}

Cublas open() {
  Cublas api;
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* library = nullptr;
#ifdef TSCOPE_CUBLAS_PATH
  library = dlopen(TSCOPE_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
#endif
  if (!library) library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    api.problem = "cannot open " + soname + ": " + (why ? why : "not found");
    return api;
  }
  resolve(library, "cublasCreate_v2", api.create, api);
  resolve(library, "cublasDestroy_v2", api.destroy, api);
  resolve(library, "cublasSetStream_v2", api.setStream, api);
  resolve(library, "cublasSetMathMode", api.setMathMode, api);
  resolve(library, "cublasSetWorkspace_v2", api.setWorkspace, api);
  resolve(library, "cublasSgemm_v2", api.sgemm, api);
  resolve(library, "cublasSgemv_v2", api.sgemv, api);
  resolve(library, "cublasGetStatusName", api.statusName, api);
  resolve(library, "cublasGetStatusString", api.statusString, api);
  return api;  // the library stays open for the process's life
}

const Cublas& cublas() {
  static const Cublas api = open();  // thread-safe, once
  return api;
}

}  // namespace

std::string cublasLoadProblem() { return cublas().problem; }

}  // namespace tscope

using tscope::cublas;

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  return cublas().create ? cublas().create(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  return cublas().destroy ? cublas().destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return cublas().setStream ? cublas().setStream(handle, stream) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return cublas().setMathMode ? cublas().setMathMode(handle, mode) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  return cublas().setWorkspace ? cublas().setWorkspace(handle, workspace, bytes) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                                           int ldc) {
  if (!cublas().sgemm) return CUBLAS_STATUS_NOT_INITIALIZED;
  return cublas().sgemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float* alpha, const float* A, int lda,
                                           const float* x, int incx, const float* beta, float* y, int incy) {
  if (!cublas().sgemv) return CUBLAS_STATUS_NOT_INITIALIZED;
  return cublas().sgemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  return cublas().statusName ? cublas().statusName(status) : "CUBLAS_STATUS (cuBLAS not loaded)";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  return cublas().statusString ? cublas().statusString(status) : cublas().problem.c_str();
}

}  // extern "C"

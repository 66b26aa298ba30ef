// The two ceilings of the GPU benchmark (bench/gpu/run_all.sh), measured on the device it runs on
// rather than read off a datasheet:
//   copy: device-to-device cudaMemcpyAsync of a buffer many times the L2, counting bytes read plus
//         bytes written (2 x size), the bandwidth the decode floor divides the weight bytes by;
//   sgemm: cublasSgemm in FP32 with CUBLAS_DEFAULT_MATH (no TF32: the math tscope's CUDA backend
//         uses, kernels/cuda_backend.cpp) at a large square size (the chip's FP32 matrix rate, which
//         the prefill floor divides the FLOPs by) and at GPT-2 124M's prefill shapes (what cuBLAS
//         reaches on the products a prefill really does).
// Every figure is the median of event-timed repeats after warm-up, on random non-zero inputs (zeros
// can run faster than real data: /work/.library/device/METHOD.md). Prints one JSON object.
// Usage: bench_floors [--copy-mib 2048] [--square 8192] [--repeats 20]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "model/core/error.h"

namespace {

// Uniform values in [-1, 1) from a per-element hash (splitmix64 finaliser), never zero-filled.
__global__ void fillRandom(float* data, size_t n, unsigned long long seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    data[i] = float((z >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
  }
}

struct DeviceFloats {
  float* data = nullptr;
  explicit DeviceFloats(size_t n, unsigned long long seed) {
    TSCOPE_CUDA_CHECK(cudaMalloc(&data, n * sizeof(float)));
    fillRandom<<<1024, 256>>>(data, n, seed);
    TSCOPE_LAUNCH_CHECK();
  }
  ~DeviceFloats() {  // a destructor cannot throw: report and carry on
    if (const cudaError_t e = cudaFree(data); e != cudaSuccess) std::fprintf(stderr, "bench_floors: cudaFree: %s\n", cudaGetErrorName(e));
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `body` run `inner` times between two events, over `repeats` timings
// after `warmup` untimed runs. `inner` > 1 keeps products of a few microseconds well above the
// events' resolution (about half a microsecond).
template <class Body>
double timeMs(Body body, int warmup, int repeats, int inner) {
  cudaEvent_t start, stop;
  TSCOPE_CUDA_CHECK(cudaEventCreate(&start));
  TSCOPE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) body(i);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    TSCOPE_CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < inner; ++i) body(r * inner + i);
    TSCOPE_CUDA_CHECK(cudaEventRecord(stop));
    TSCOPE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(double(ms) / inner);
  }
  TSCOPE_CUDA_CHECK(cudaEventDestroy(start));
  TSCOPE_CUDA_CHECK(cudaEventDestroy(stop));
  return median(times);
}

// One product shape, in tscope's terms: out (T, N) = in (T, K) . weight (K, N), row-major, which
// cuBLAS (column-major) computes as out^T (N, T) = weight^T (N, K) . in^T (K, T), the call
// kernels/matmul.cu makes.
struct GemmShape {
  std::string name;
  int T, K, N;
};

struct GemmResult {
  GemmShape shape;
  double ms = 0, tflops = 0;
  int sets = 0;
};

GemmResult timeGemm(cublasHandle_t cublas, const GemmShape& s, int repeats) {
  // Rotate among enough weight/input sets that they do not all sit in the 50-60 MB L2, as a real
  // prefill's twelve layers (340 MB of weights) do not.
  const size_t floatsPerSet = size_t(s.T) * s.K + size_t(s.K) * s.N + size_t(s.T) * s.N;
  const size_t targetBytes = size_t(256) << 20;
  const int sets = int(std::clamp<size_t>(targetBytes / (floatsPerSet * sizeof(float)) + 1, 1, 16));
  std::vector<std::unique_ptr<DeviceFloats>> in, weight, out;
  for (int i = 0; i < sets; ++i) {
    in.push_back(std::make_unique<DeviceFloats>(size_t(s.T) * s.K, 11 + 3 * i));
    weight.push_back(std::make_unique<DeviceFloats>(size_t(s.K) * s.N, 12 + 3 * i));
    out.push_back(std::make_unique<DeviceFloats>(size_t(s.T) * s.N, 13 + 3 * i));
  }
  const float one = 1.0f, zero = 0.0f;
  auto body = [&](int i) {
    const int k = i % sets;
    TSCOPE_CUBLAS_CHECK(
        cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, s.N, s.T, s.K, &one, weight[k]->data, s.N, in[k]->data, s.K, &zero, out[k]->data, s.N));
  };
  const double flops = 2.0 * s.T * s.K * s.N;
  // About a millisecond of work between the events.
  const int inner = int(std::clamp(1e-3 / (flops / 40e12), 1.0, 200.0));
  GemmResult result;
  result.shape = s;
  result.sets = sets;
  result.ms = timeMs(body, 3 * inner + 2, repeats, inner);
  result.tflops = flops / (result.ms * 1e-3) / 1e12;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int copyMib = 2048, square = 8192, repeats = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--copy-mib") copyMib = value;
    else if (flag == "--square") square = value;
    else if (flag == "--repeats") repeats = value;
    else {
      std::fprintf(stderr, "bench_floors: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (copyMib < 1 || square < 16 || repeats < 1) {
    std::fprintf(stderr, "bench_floors: --copy-mib >= 1, --square >= 16, --repeats >= 1\n");
    return 2;
  }
  try {
    int device = 0;
    TSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    TSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

    // Copy bandwidth: one buffer of copyMib to another; each byte is read once and written once.
    const size_t copyFloats = (size_t(copyMib) << 20) / sizeof(float);
    double copyMs = 0;
    {
      DeviceFloats src(copyFloats, 1), dst(copyFloats, 2);
      copyMs = timeMs([&](int) { TSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, copyFloats * sizeof(float), cudaMemcpyDeviceToDevice)); }, 3,
                      repeats, 1);
    }
    const double copyBytes = 2.0 * copyFloats * sizeof(float);
    const double copyGbps = copyBytes / (copyMs * 1e-3) / 1e9;

    cublasHandle_t cublas;
    TSCOPE_CUBLAS_CHECK(cublasCreate(&cublas));
    TSCOPE_CUBLAS_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH));  // FP32, as the backend
    std::vector<GemmShape> shapes = {{"square", square, square, square}};
    // GPT-2 124M (C = 768, F = 3072): the four products of every block, at both prefill lengths.
    for (int T : {128, 1024}) {
      const std::string t = std::to_string(T);
      shapes.push_back({"qkv_T" + t, T, 768, 2304});
      shapes.push_back({"attn_proj_T" + t, T, 768, 768});
      shapes.push_back({"fc_T" + t, T, 768, 3072});
      shapes.push_back({"mlp_proj_T" + t, T, 3072, 768});
    }
    std::vector<GemmResult> results;
    for (const auto& s : shapes) results.push_back(timeGemm(cublas, s, repeats));
    TSCOPE_CUBLAS_CHECK(cublasDestroy(cublas));
    TSCOPE_CUDA_CHECK(cudaDeviceSynchronize());

    std::printf(
        "{\"device\": \"%s\", \"sm_count\": %d, \"l2_bytes\": %d, \"repeats\": %d, \"copy_bytes_moved\": %.0f, \"copy_ms\": %.4f, "
        "\"copy_gb_per_s\": %.1f, \"sgemm_math\": \"FP32 CUBLAS_DEFAULT_MATH\", \"sgemm_square_n\": %d, "
        "\"sgemm_square_tflops\": %.3f, \"sgemm\": [",
        prop.name, prop.multiProcessorCount, prop.l2CacheSize, repeats, copyBytes, copyMs, copyGbps, square, results[0].tflops);
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      std::printf("%s{\"name\": \"%s\", \"T\": %d, \"K\": %d, \"N\": %d, \"ms\": %.5f, \"tflops\": %.3f, \"rotated_sets\": %d}", i ? ", " : "",
                  r.shape.name.c_str(), r.shape.T, r.shape.K, r.shape.N, r.ms, r.tflops, r.sets);
    }
    std::printf("]}\n");
  } catch (const tscope::Error& e) {
    std::fprintf(stderr, "bench_floors: %s\n", e.what());
    return 1;
  }
  return 0;
}

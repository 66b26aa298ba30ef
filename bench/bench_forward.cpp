// Forward benchmark, GPT-2 124M shape with seeded random weights: prefill of P tokens
// (last-position logits) and decode of N tokens through the KV cache, plus, on the CPU, the decode
// floor (bytes of weights read per token / measured memcpy bandwidth). Prints one JSON object;
// bench/run_cpu_bench.py puts it beside PyTorch's figures. --backend cpu|reference|cuda|auto
// (default cpu); device floors are not measured here yet (the host bandwidth fields are null).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/backend_select.h"
#include "model/cost.h"
#include "model/error.h"
#include "model/sampling.h"
#include "model/transformer.h"

using namespace tscope;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Best-of-5 memcpy of 512 MiB: bytes copied per second (each byte is read once and written once).
double memcpyBandwidth() {
  const size_t n = size_t(512) << 20;
  std::vector<char> src(n, 1), dst(n, 0);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), n);
    auto t1 = Clock::now();
    best = std::max(best, n / seconds(t0, t1));
  }
  return best + dst[n / 2] * 0.0;
}

// Best-of-5 streaming read of 512 MiB (a vectorised sum on `threads` threads): the rate at which
// a GEMV on the same threads can at best read its weights.
double readBandwidth(int threads) {
  const size_t n = (size_t(512) << 20) / sizeof(float);
  std::vector<float> data(n, 1.0f);
  double best = 0;
  float total = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    float sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      const size_t begin = n * omp_get_thread_num() / omp_get_num_threads(), end = n * (omp_get_thread_num() + 1) / omp_get_num_threads();
      const float* values = data.data();
      float part = 0;
#pragma omp simd reduction(+ : part)
      for (size_t i = begin; i < end; ++i) part += values[i];
      sum += part;
    }
    auto t1 = Clock::now();
    total += sum;
    best = std::max(best, n * sizeof(float) / seconds(t0, t1));
  }
  return best + (total == -1.0f ? 1.0 : 0.0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int prefillTokens = 128, decodeTokens = 128, threads = 0, repeats = 3;
  std::string backendName = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--backend") backendName = argv[i + 1];
    else if (flag == "--prefill") prefillTokens = value;
    else if (flag == "--decode") decodeTokens = value;
    else if (flag == "--threads") threads = value;
    else if (flag == "--repeats") repeats = value;
    else {
      std::fprintf(stderr, "bench_forward: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  ModelConfig config;  // GPT-2 124M
  Weights weights(config);
  weights.initRandom(1234);
  std::string backendNote;
  std::unique_ptr<Backend> backend;
  try {
    backend = makeBackend(backendName, threads, &backendNote);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_forward: %s\n", e.what());
    return 1;
  }
  if (!backendNote.empty()) std::fprintf(stderr, "bench_forward: %s\n", backendNote.c_str());
  Transformer model(weights, *backend);
  Rng rng(7);
  std::vector<int> prompt(prefillTokens);
  for (auto& id : prompt) id = static_cast<int>(rng.next() % config.vocab_size);

  std::vector<double> prefillTimes, decodeTimes;
  std::vector<float> logits;
  for (int r = 0; r <= repeats; ++r) {  // r == 0 is the warm-up
    KVCache cache(*backend, config, prefillTokens + decodeTokens);
    auto t0 = Clock::now();
    model.forward(prompt, cache, logits, false);
    auto t1 = Clock::now();
    for (int s = 0; s < decodeTokens; ++s) {
      const int next[1] = {argmax(logits)};
      model.forward(next, cache, logits, false);
    }
    auto t2 = Clock::now();
    if (r > 0) {
      prefillTimes.push_back(seconds(t0, t1));
      decodeTimes.push_back(seconds(t1, t2) / decodeTokens);
    }
  }
  const ParamCounts params = countParameters(config);
  // Decode reads every block weight and the (tied) unembedding once per token; of wpe one row.
  const double bytesPerToken = 4.0 * (params.nonEmbedding + params.tokenEmbedding);
  const double prefillMs = median(prefillTimes) * 1e3, decodeMs = median(decodeTimes) * 1e3;
  const double prefillFlops = flopsPerToken(config, prefillTokens / 2).forward * prefillTokens + flopsPerToken(config, 0).unembedForward;
  std::printf(
      "{\"backend\": \"%s\", \"threads\": %d, \"prefill_tokens\": %d, \"decode_tokens\": %d, \"prefill_ms\": %.3f, "
      "\"prefill_tokens_per_s\": %.1f, \"prefill_gflops_per_s\": %.1f, \"decode_ms_per_token\": %.3f, \"decode_tokens_per_s\": %.2f, "
      "\"decode_bytes_per_token\": %.0f, ",
      backend->name().c_str(), backend->threadCount(), prefillTokens, decodeTokens, prefillMs, prefillTokens / (prefillMs / 1e3),
      prefillFlops / (prefillMs / 1e3) / 1e9, decodeMs, 1e3 / decodeMs, bytesPerToken);
  if (!backend->isHost()) {  // host memory bandwidth says nothing about a device
    std::printf(
        "\"memcpy_gb_per_s\": null, \"decode_floor_ms\": null, \"decode_fraction_of_floor\": null, \"read_gb_per_s\": null, "
        "\"decode_read_floor_ms\": null, \"decode_fraction_of_read_floor\": null}\n");
    return 0;
  }
  const double bandwidth = memcpyBandwidth();
  const double floorMs = bytesPerToken / bandwidth * 1e3;
  const double readGbps = readBandwidth(backend->threadCount()) / 1e9, readFloorMs = bytesPerToken / (readGbps * 1e9) * 1e3;
  std::printf(
      "\"memcpy_gb_per_s\": %.2f, \"decode_floor_ms\": %.3f, \"decode_fraction_of_floor\": %.3f, "
      "\"read_gb_per_s\": %.2f, \"decode_read_floor_ms\": %.3f, \"decode_fraction_of_read_floor\": %.3f}\n",
      bandwidth / 1e9, floorMs, floorMs / decodeMs, readGbps, readFloorMs, readFloorMs / decodeMs);
  return 0;
}

// Forward benchmark, GPT-2 124M shape with seeded random weights: prefill of P tokens
// (last-position logits) and decode of N tokens through the KV cache (--decode 0: prefill only, so
// a prompt may fill the whole context), plus, on the CPU, the decode
// floor (bytes of weights read per token / measured memcpy bandwidth). Prints one JSON object;
// bench/run_cpu_bench.py and bench/gpu/run_all.sh put it beside PyTorch's figures.
// --backend cpu|reference|cuda|auto (default cpu). Device floors are measured by bench_floors
// (the host bandwidth fields are null on a device); this program reports the FLOPs and weight
// bytes the floors divide.
// Decode runs through generate() (greedy), so it takes whatever path the app takes (the recorded
// CUDA-graph step where the backend has one). Every clock read follows Backend::sync().
// --save-weights DIR writes the same seeded weights as a tscope model directory plus
// DIR/tscope_reference.json (a short prompt, its last-position logits and greedy continuation on
// this backend), so the PyTorch peers run the SAME weights and can prove it
// (bench/peers/torch_gpu_bench.py --check DIR).
// --model DIR runs the same measurement on any model directory loadModel opens (a HuggingFace
// checkpoint, e.g. bench/run_hf_bench.py's Qwen2.5-0.5B shape) and adds the load time, the
// checkpoint's file size and peak resident memory (VmHWM) after loading and after the timed runs
// (read before the bandwidth probes, which allocate 1.5 GiB of their own). --reference FILE writes
// the prompt/logits JSON of --save-weights for whatever model runs (the peer's agreement check).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/select/backend_select.h"
#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/io/model_io.h"
#include "model/generate/sampling.h"
#include "model/nn/transformer.h"

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

// initRandom leaves biases at 0 and LayerNorm gains at 1; give them seeded random values too, so
// that a peer which mixed up a bias or a LayerNorm parameter would disagree with tscope in
// --save-weights' check (timing does not depend on the values).
void randomizeBiasesAndNorms(Weights& weights, uint64_t seed) {
  Rng rng(seed);
  for (const auto& spec : weights.layout()) {
    const bool isBias = spec.name.ends_with(".bias");
    const bool isNormGain = spec.name.find("ln_") != std::string::npos && spec.name.ends_with(".weight");
    if (!isBias && !isNormGain) continue;
    float* p = weights.arena() + spec.offset;
    for (size_t i = 0; i < spec.numel(); ++i) p[i] = (isNormGain ? 1.0f : 0.0f) + 0.1f * static_cast<float>(2.0 * rng.uniform() - 1.0);
  }
}

// Writes `path`: a 16-token prompt, the last position's logits on this backend and 8 greedy tokens
// through generate().
void writeReference(const std::string& path, Transformer& model) {
  const int V = model.config().vocab_size;
  Rng rng(99);
  std::vector<int> prompt(16);
  for (auto& id : prompt) id = static_cast<int>(rng.next() % V);
  KVCache cache(model.backend(), model.config(), static_cast<int>(prompt.size()));
  std::vector<float> logits;
  model.forward(prompt, cache, logits, false);
  SamplingParams greedy;
  greedy.greedy = true;
  const GenerationResult continuation = generate(model, prompt, 8, greedy);
  std::ofstream out(path);
  out << "{\"backend\": \"" << model.backend().name() << "\", \"prompt\": [";
  for (size_t i = 0; i < prompt.size(); ++i) out << (i ? ", " : "") << prompt[i];
  out << "], \"greedy_ids\": [";
  for (size_t i = 0; i < continuation.ids.size(); ++i) out << (i ? ", " : "") << continuation.ids[i];
  out << "], \"last_logits\": [";
  char number[32];
  for (int i = 0; i < V; ++i) {
    std::snprintf(number, sizeof number, "%.9g", logits[i]);
    out << (i ? ", " : "") << number;
  }
  out << "]}\n";
  if (!out) throw Error(path + ": write failed");
}

// Writes the model directory and DIR/tscope_reference.json (writeReference).
void saveWeightsAndReference(const std::string& dir, const Weights& weights, Transformer& model) {
  saveModelDir(dir, weights, nullptr);
  writeReference(dir + "/tscope_reference.json", model);
}

// Peak resident memory so far (VmHWM of /proc/self/status), in kB.
long peakResidentKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmHWM:")) return std::atol(line.c_str() + 6);
  throw Error("/proc/self/status: no VmHWM line");
}

// Bytes of the *.safetensors files of a model directory (the file itself for a file path).
double checkpointFileBytes(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) return static_cast<double>(fs::file_size(path));
  double bytes = 0;
  for (const auto& entry : fs::directory_iterator(path))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") bytes += static_cast<double>(entry.file_size());
  return bytes;
}

// The model --model names, or GPT-2 124M's shape with seeded random weights (the default).
struct BenchModel {
  Weights weights;
  std::string format = "random gpt2-124m", path;
  double loadMs = 0;
};

BenchModel openBenchModel(const std::string& modelDir) {
  BenchModel m;
  if (modelDir.empty()) {
    m.weights = Weights(ModelConfig{});  // GPT-2 124M
    m.weights.initRandom(1234);
    randomizeBiasesAndNorms(m.weights, 4321);
    return m;
  }
  const auto t0 = Clock::now();
  LoadedModel loaded = loadModel(modelDir);
  m.loadMs = seconds(t0, Clock::now()) * 1e3;
  m.weights = std::move(loaded.weights);
  m.format = loaded.format;
  m.path = loaded.path;
  return m;
}

// Decode reads every block weight and the unembedding (tied: the token embedding) once per token,
// in the dtype it is held in (float32, or 16-bit halves for a BF16/F16 checkpoint); of wte
// (untied) and wpe one row.
double decodeBytesPerToken(const Weights& weights, const ModelConfig& config) {
  double bytesPerToken = 0;
  for (size_t i = 0; i < weights.layout().size(); ++i) {
    const std::string& name = weights.layout()[i].name;
    if (name == "wpe.weight" || (name == "wte.weight" && !config.tie_word_embeddings)) continue;
    bytesPerToken +=
        weights.packed(i) ? static_cast<double>(weights.packed(i).bytes()) : sizeof(float) * static_cast<double>(weights.layout()[i].numel());
  }
  return bytesPerToken;
}

// Prefill FLOPs: 2 N per token for the block weights (cost.h's matmulForward), QK^T and P.V over
// the causal triangle (4 C FLOPs per visible query-key pair and layer: T (T + 1) / 2 pairs), and
// one row of logits (2 V C).
struct PrefillFlops {
  double matmul = 0, attention = 0, total = 0;
};
PrefillFlops prefillFlops(const ModelConfig& config, int tokens) {
  const double T = tokens;
  const FlopCounts flops = flopsPerToken(config, 0);
  PrefillFlops out;
  out.matmul = flops.matmulForward * T;
  out.attention = 4.0 * config.n_layer * config.n_embd * (T * (T + 1) / 2);
  out.total = out.matmul + out.attention + flops.unembedForward;
  return out;
}

// The JSON fields of a checkpoint read with --model: its format, size, load time and memory.
void printModelFields(const BenchModel& bench, const Weights& weights, long long parameters, long peakAfterLoadKb, long peakAfterRunKb) {
  const ModelConfig& config = weights.config();
  const double fileBytes = checkpointFileBytes(bench.path);
  std::printf(
      "\"model_format\": \"%s\", \"weights_held\": \"%s\", \"half_bytes\": %zu, \"n_layer\": %d, \"n_embd\": %d, \"vocab_size\": %d, "
      "\"parameters\": %lld, \"load_ms\": %.1f, "
      "\"file_bytes\": %.0f, \"peak_rss_after_load_mb\": %.1f, \"peak_rss_after_run_mb\": %.1f, \"peak_rss_over_file\": %.3f, ",
      bench.format.c_str(), weights.hasPacked() ? "halves" : "float32", weights.packedBytes(), config.n_layer, config.n_embd, config.vocab_size,
      parameters, bench.loadMs, fileBytes, peakAfterLoadKb * 1024 / 1e6, peakAfterRunKb * 1024 / 1e6,
      fileBytes > 0 ? peakAfterRunKb * 1024 / fileBytes : 0.0);
}

}  // namespace

int run(int argc, char** argv) {
  int prefillTokens = 128, decodeTokens = 128, threads = 0, repeats = 3;
  std::string backendName = "cpu", saveDir, modelDir, referencePath;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--backend") backendName = argv[i + 1];
    else if (flag == "--save-weights") saveDir = argv[i + 1];
    else if (flag == "--model") modelDir = argv[i + 1];
    else if (flag == "--reference") referencePath = argv[i + 1];
    else if (flag == "--prefill") prefillTokens = value;
    else if (flag == "--decode") decodeTokens = value;
    else if (flag == "--threads") threads = value;
    else if (flag == "--repeats") repeats = value;
    else {
      std::fprintf(stderr, "bench_forward: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (!modelDir.empty() && !saveDir.empty()) {
    std::fprintf(stderr, "bench_forward: --save-weights writes the random GPT-2 weights; it does not go with --model\n");
    return 2;
  }
  BenchModel bench;
  try {
    bench = openBenchModel(modelDir);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_forward: --model %s: %s\n", modelDir.c_str(), e.what());
    return 1;
  }
  const long peakAfterLoadKb = peakResidentKb();
  const Weights& weights = bench.weights;
  const ModelConfig& config = weights.config();
  if (prefillTokens < 1 || decodeTokens < 0 || repeats < 1 || prefillTokens + decodeTokens > config.n_positions) {
    std::fprintf(stderr, "bench_forward: need --prefill >= 1, --decode >= 0 (0: prefill only), --repeats >= 1, prefill + decode <= %d\n",
                 config.n_positions);
    return 2;
  }
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
  if (!saveDir.empty()) {
    try {
      saveWeightsAndReference(saveDir, weights, model);
    } catch (const Error& e) {
      std::fprintf(stderr, "bench_forward: --save-weights: %s\n", e.what());
      return 1;
    }
    std::fprintf(stderr, "bench_forward: wrote %s (model directory + tscope_reference.json)\n", saveDir.c_str());
  }
  if (!referencePath.empty()) {
    try {
      writeReference(referencePath, model);
    } catch (const Error& e) {
      std::fprintf(stderr, "bench_forward: --reference: %s\n", e.what());
      return 1;
    }
    std::fprintf(stderr, "bench_forward: wrote %s\n", referencePath.c_str());
  }
  Rng rng(7);
  std::vector<int> prompt(prefillTokens);
  for (auto& id : prompt) id = static_cast<int>(rng.next() % config.vocab_size);
  SamplingParams greedy;
  greedy.greedy = true;

  std::vector<double> prefillTimes, decodeTimes, generateTimes;
  std::vector<float> logits;
  int decodeSteps = 0;
  for (int r = 0; r <= repeats; ++r) {  // r == 0 is the warm-up (and records the CUDA graph)
    {
      KVCache cache(*backend, config, prefillTokens);
      backend->sync();
      const auto t0 = Clock::now();
      model.forward(prompt, cache, logits, false);
      backend->sync();
      const auto t1 = Clock::now();
      if (r > 0) prefillTimes.push_back(seconds(t0, t1));
    }
    if (decodeTokens == 0) continue;  // prefill only (a prompt of the whole context leaves no room)
    // decodeTokens + 1 new tokens: the first comes from the prompt's logits, then decodeTokens
    // single-token steps, each ending in a host read of the sampled token (so decodeMs is device
    // time too).
    backend->sync();
    const auto t0 = Clock::now();
    const GenerationResult result = generate(model, prompt, decodeTokens + 1, greedy);
    backend->sync();
    const auto t1 = Clock::now();
    decodeSteps = result.decodeSteps;
    if (r > 0 && decodeSteps > 0) {
      decodeTimes.push_back(result.decodeMs / 1e3 / decodeSteps);
      generateTimes.push_back(seconds(t0, t1));
    }
  }
  if (decodeTokens > 0 && decodeTimes.empty()) {
    std::fprintf(stderr, "bench_forward: generate() made no decode step\n");
    return 1;
  }
  const long peakAfterRunKb = peakResidentKb();  // before the bandwidth probes allocate theirs
  const ParamCounts params = countParameters(config);
  const double bytesPerToken = decodeBytesPerToken(weights, config);
  const PrefillFlops prefill = prefillFlops(config, prefillTokens);
  const double prefillMatmulFlops = prefill.matmul, prefillAttentionFlops = prefill.attention, prefillFlops = prefill.total;
  const bool decoded = !decodeTimes.empty();
  const double prefillMs = median(prefillTimes) * 1e3, decodeMs = decoded ? median(decodeTimes) * 1e3 : 0.0;
  // JSON number, or null when there was no decode (--decode 0).
  auto decodeNumber = [decoded](double value, const char* format) {
    if (!decoded) return std::string("null");
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return std::string(text);
  };
  std::printf(
      "{\"backend\": \"%s\", \"threads\": %d, \"prefill_tokens\": %d, \"decode_tokens\": %d, \"repeats\": %d, \"prefill_ms\": %.4f, "
      "\"prefill_tokens_per_s\": %.1f, \"prefill_gflops_per_s\": %.1f, \"prefill_flops\": %.6g, \"prefill_matmul_flops\": %.6g, "
      "\"prefill_attention_flops\": %.6g, \"decode_path\": \"generate() greedy, %s\", \"decode_steps\": %d, "
      "\"decode_ms_per_token\": %s, \"decode_tokens_per_s\": %s, \"generate_ms\": %s, \"decode_bytes_per_token\": %.0f, ",
      backend->name().c_str(), backend->threadCount(), prefillTokens, decodeTokens, repeats, prefillMs, prefillTokens / (prefillMs / 1e3),
      prefillFlops / (prefillMs / 1e3) / 1e9, prefillFlops, prefillMatmulFlops, prefillAttentionFlops,
      model.canRecordSteps() ? "recordable steps (CUDA graph when generate() uses them)" : "forward() per token", decodeSteps,
      decodeNumber(decodeMs, "%.4f").c_str(), decodeNumber(1e3 / decodeMs, "%.2f").c_str(),
      decodeNumber(decoded ? median(generateTimes) * 1e3 : 0, "%.3f").c_str(), bytesPerToken);
  if (!modelDir.empty()) printModelFields(bench, weights, params.total, peakAfterLoadKb, peakAfterRunKb);
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
      "\"memcpy_gb_per_s\": %.2f, \"decode_floor_ms\": %.3f, \"decode_fraction_of_floor\": %s, "
      "\"read_gb_per_s\": %.2f, \"decode_read_floor_ms\": %.3f, \"decode_fraction_of_read_floor\": %s}\n",
      bandwidth / 1e9, floorMs, decodeNumber(floorMs / decodeMs, "%.3f").c_str(), readGbps, readFloorMs,
      decodeNumber(readFloorMs / decodeMs, "%.3f").c_str());
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {  // e.g. a CUDA failure inside the timed loops
    std::fprintf(stderr, "bench_forward: %s\n", e.what());
    return 1;
  }
}

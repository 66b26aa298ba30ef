// bench_load: how fast a GPT-2-124M-sized F32 safetensors file (148 tensors, about 500 MB) loads:
// SafetensorsFile open (mmap + header validation) plus readFloat of every tensor into one
// preallocated arena, best of 5, beside fread of the same file and a RAM-to-RAM memcpy (the floor).
// The file is freshly written, so it sits in the page cache: nothing is dropped from the cache
// (that needs root and disturbs the whole machine), so this measures copies and page faults, not the disk.
// `bench_load --memory` measures resident memory instead: a GPT-2 124M model directory with random
// weights is written under /tmp, then a fresh child process per path loads it (VmRSS / VmHWM from
// /proc/self/status before, after loading and after one forward pass): tscope's loader (F32
// tensors read in place from the mapped file) beside the copying path it replaced (readFloat of
// every tensor into an owned Weights arena, as loadModel did before).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/core/error.h"
#include "model/nn/kv_cache.h"
#include "model/io/model_io.h"
#include "model/io/safetensors.h"
#include "model/nn/transformer.h"

namespace {

struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
  size_t numel() const {
    size_t count = 1;
    for (int64_t dim : shape) count *= static_cast<size_t>(dim);
    return count;
  }
};

// GPT-2 small (124M) as HuggingFace names it: C = 768, F = 3072, V = 50257, 1024 positions, 12 layers.
std::vector<TensorShape> gpt2SmallTensors() {
  const int64_t C = 768, F = 3072, V = 50257, positions = 1024, layers = 12;
  std::vector<TensorShape> tensors = {{"wte.weight", {V, C}}, {"wpe.weight", {positions, C}}};
  for (int64_t layer = 0; layer < layers; ++layer) {
    const std::string prefix = "h." + std::to_string(layer) + ".";
    const std::vector<TensorShape> perLayer = {{"ln_1.weight", {C}},
                                               {"ln_1.bias", {C}},
                                               {"attn.c_attn.weight", {C, 3 * C}},
                                               {"attn.c_attn.bias", {3 * C}},
                                               {"attn.c_proj.weight", {C, C}},
                                               {"attn.c_proj.bias", {C}},
                                               {"ln_2.weight", {C}},
                                               {"ln_2.bias", {C}},
                                               {"mlp.c_fc.weight", {C, F}},
                                               {"mlp.c_fc.bias", {F}},
                                               {"mlp.c_proj.weight", {F, C}},
                                               {"mlp.c_proj.bias", {C}}};
    for (const TensorShape& tensor : perLayer) tensors.push_back({prefix + tensor.name, tensor.shape});
  }
  tensors.push_back({"ln_f.weight", {C}});
  tensors.push_back({"ln_f.bias", {C}});
  return tensors;
}

double bestOfMilliseconds(int runs, const std::function<void()>& work) {
  double best = 1e30;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    work();
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

void printRow(const char* what, double megabytes, double milliseconds) {
  std::printf("%-44s %9.1f %9.1f %9.2f\n", what, megabytes, milliseconds, megabytes / milliseconds);
}

int run(const std::string& path) {
  const std::vector<TensorShape> tensors = gpt2SmallTensors();
  size_t totalFloats = 0, largestFloats = 0;
  for (const TensorShape& tensor : tensors) {
    totalFloats += tensor.numel();
    largestFloats = std::max(largestFloats, tensor.numel());
  }
  // Every tensor is written from the front of one patterned buffer (the values do not matter).
  std::vector<float> source(largestFloats);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<float>(i % 1000) * 0.001f;
  std::vector<tscope::TensorToWrite> toWrite;
  for (const TensorShape& tensor : tensors) toWrite.push_back({tensor.name, tensor.shape, source.data()});
  tscope::writeSafetensors(path, toWrite, {{"format", "pt"}});
  const double megabytes = static_cast<double>(std::filesystem::file_size(path)) / 1e6;

  std::vector<float> arena(totalFloats, 1.0f);  // allocated and touched before any timing
  const double loadMs = bestOfMilliseconds(5, [&] {
    const tscope::SafetensorsFile file(path);
    size_t offset = 0;
    for (const TensorShape& tensor : tensors) {
      file.readFloat(tensor.name, arena.data() + offset, tensor.shape);
      offset += tensor.numel();
    }
  });
  // Check that the arena holds what was written: the last tensor (ln_f.bias) starts the pattern again.
  const size_t lastOffset = totalFloats - tensors.back().numel();
  if (std::memcmp(arena.data() + lastOffset, source.data(), tensors.back().numel() * sizeof(float)) != 0) {
    std::fprintf(stderr, "bench_load: the loaded arena does not match what was written\n");
    return 1;
  }

  const double freadMs = bestOfMilliseconds(5, [&] {
    FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw tscope::Error(path + ": cannot open for fread");
    const size_t read = std::fread(arena.data(), 1, arena.size() * sizeof(float), file);
    std::fclose(file);
    if (read == 0) throw tscope::Error(path + ": fread returned nothing");
  });
  std::vector<float> copySource(totalFloats, 2.0f);
  const double memcpyMs = bestOfMilliseconds(5, [&] { std::memcpy(arena.data(), copySource.data(), totalFloats * sizeof(float)); });

  std::printf("GPT-2 124M F32 safetensors: %zu tensors, %zu floats, file in the page cache (not dropped)\n", tensors.size(), totalFloats);
  std::printf("%-44s %9s %9s %9s\n", "best of 5", "MB", "ms", "GB/s");
  printRow("tscope: SafetensorsFile open + readFloat all", megabytes, loadMs);
  printRow("peer: fread whole file into the arena", megabytes, freadMs);
  printRow("floor: memcpy RAM to RAM, same bytes", static_cast<double>(totalFloats * sizeof(float)) / 1e6, memcpyMs);
  std::printf("measured/floor: %.2f\n", loadMs / memcpyMs);
  return 0;
}

// ---- resident memory (--memory) ----

struct Resident {
  long rssKb = -1, hwmKb = -1;  // VmRSS and VmHWM of /proc/self/status
};

Resident residentNow() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (!status) throw tscope::Error("/proc/self/status: cannot open");
  Resident r;
  char line[256];
  while (std::fgets(line, sizeof line, status)) {
    std::sscanf(line, "VmRSS: %ld kB", &r.rssKb);
    std::sscanf(line, "VmHWM: %ld kB", &r.hwmKb);
  }
  std::fclose(status);
  if (r.rssKb < 0 || r.hwmKb < 0) throw tscope::Error("/proc/self/status: no VmRSS / VmHWM line");
  return r;
}

// The loader before weights were read in place: an owned, zero-filled arena and a copy of every
// tensor out of the (then released) mapping.
tscope::Weights loadByCopying(const std::string& dir) {
  tscope::Weights mapped = tscope::loadModel(dir).weights;  // only for the config
  tscope::Weights owned(mapped.config());
  mapped = tscope::Weights();
  const tscope::SafetensorsFile file(dir + "/model.safetensors");
  for (const auto& spec : owned.layout()) file.readFloat(spec.name, owned.param(spec.name), spec.shape);
  return owned;
}

// Child process: loads `dir` one way, runs one 16-token forward, prints the figures on one line.
int measureChild(const std::string& how, const std::string& dir) {
  const Resident before = residentNow();
  const auto start = std::chrono::steady_clock::now();
  tscope::Weights weights = how == "copy" ? loadByCopying(dir) : tscope::loadModel(dir).weights;
  const std::chrono::duration<double, std::milli> loadMs = std::chrono::steady_clock::now() - start;
  const Resident loaded = residentNow();
  auto cpu = tscope::makeCpuBackend(2);
  tscope::Transformer model(weights, *cpu);
  const int T = 16;
  tscope::KVCache cache(*cpu, weights.config(), T);  // a 16-token cache, so activations stay small
  std::vector<int> tokens(T);
  for (int t = 0; t < T; ++t) tokens[t] = (t * 7919) % weights.config().vocab_size;
  std::vector<float> logits;
  model.forward(tokens, cache, logits, false);
  const Resident forwarded = residentNow();
  std::printf("%ld %ld %ld %ld %ld %.1f %zu\n", before.rssKb, loaded.rssKb, loaded.hwmKb, forwarded.rssKb, forwarded.hwmKb, loadMs.count(),
              weights.ownedFloats());
  return 0;
}

Resident runChild(const std::string& how, const std::string& dir, Resident* afterLoad, Resident* afterForward, double* loadMs, size_t* ownedFloats) {
  // Resolved here: inside popen's shell, /proc/self/exe would name the shell.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = "'" + self + "' --measure-rss " + how + " '" + dir + "'";
  FILE* child = ::popen(command.c_str(), "r");
  if (!child) throw tscope::Error("cannot start the measuring child: " + std::string(std::strerror(errno)));
  Resident before;
  const int fields = std::fscanf(child, "%ld %ld %ld %ld %ld %lf %zu", &before.rssKb, &afterLoad->rssKb, &afterLoad->hwmKb, &afterForward->rssKb,
                                 &afterForward->hwmKb, loadMs, ownedFloats);
  const int status = ::pclose(child);
  if (fields != 7 || status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw tscope::Error("the measuring child (" + how + ") failed");
  return before;
}

int runMemory(const std::string& dir) {
  tscope::ModelConfig config;  // GPT-2 small: the defaults are 12 layers, 12 heads, C = 768, V = 50257, 1024 positions
  config.n_layer = 12, config.n_head = 12, config.n_embd = 768, config.vocab_size = 50257, config.n_positions = 1024;
  {
    tscope::Weights weights(config);
    weights.initRandom(1);
    tscope::saveModelDir(dir, weights, nullptr);
  }
  const double fileMb = static_cast<double>(std::filesystem::file_size(dir + "/model.safetensors")) / 1e6;
  std::printf("GPT-2 124M, random weights, HF F32 safetensors %.1f MB under %s (in the page cache)\n", fileMb, dir.c_str());
  std::printf("one fresh process per row; forward = 16 tokens on the CPU backend (2 threads), 16-token KV cache\n");
  std::printf("%-34s %8s %9s %9s %9s %9s %8s %8s %8s\n", "loader", "load ms", "RSS0 MB", "RSS load", "HWM load", "RSS fwd", "HWM fwd", "fwd/file",
              "owned MB");
  for (const char* how : {"in-place", "copy"}) {
    Resident afterLoad, afterForward;
    double loadMs = 0;
    size_t ownedFloats = 0;
    const Resident before = runChild(how, dir, &afterLoad, &afterForward, &loadMs, &ownedFloats);
    auto mb = [](long kb) { return static_cast<double>(kb) * 1024 / 1e6; };
    std::printf("%-34s %8.1f %9.1f %9.1f %9.1f %9.1f %8.1f %7.2fx %8.1f\n",
                std::string(how) == "copy" ? "copying path (before this change)" : "tscope: F32 read in place", loadMs, mb(before.rssKb),
                mb(afterLoad.rssKb), mb(afterLoad.hwmKb), mb(afterForward.rssKb), mb(afterForward.hwmKb), mb(afterForward.hwmKb) / fileMb,
                static_cast<double>(ownedFloats) * 4 / 1e6);
  }
  std::printf("fwd/file = peak resident (VmHWM) after the forward pass / file size; target <= 1.2x\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "--measure-rss") {
    try {
      return measureChild(args[1], args[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_load: %s\n", e.what());
      return 1;
    }
  }
  if (!args.empty() && args != std::vector<std::string>{"--memory"}) {
    std::fprintf(stderr, "usage: bench_load [--memory]\n");
    return 2;
  }
  const bool memory = !args.empty();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tscope_bench_load_" + std::to_string(::getpid()) + (memory ? "" : ".safetensors"))).string();
  int status = 1;
  try {
    status = memory ? runMemory(path) : run(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_load: %s\n", e.what());
  }
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
  return status;
}

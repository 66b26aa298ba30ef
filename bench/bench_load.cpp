// bench_load: how fast a GPT-2-124M-sized F32 safetensors file (148 tensors, about 500 MB) loads:
// SafetensorsFile open (mmap + header validation) plus readFloat of every tensor into one
// preallocated arena, best of 5, beside fread of the same file and a RAM-to-RAM memcpy (the floor).
// The file is freshly written, so it sits in the page cache: nothing is dropped from the cache
// (that needs root and disturbs the whole machine), so this measures copies and page faults, not the disk.
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

#include "model/error.h"
#include "model/safetensors.h"

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
    const std::vector<TensorShape> perLayer = {
        {"ln_1.weight", {C}},           {"ln_1.bias", {C}},
        {"attn.c_attn.weight", {C, 3 * C}}, {"attn.c_attn.bias", {3 * C}},
        {"attn.c_proj.weight", {C, C}}, {"attn.c_proj.bias", {C}},
        {"ln_2.weight", {C}},           {"ln_2.bias", {C}},
        {"mlp.c_fc.weight", {C, F}},    {"mlp.c_fc.bias", {F}},
        {"mlp.c_proj.weight", {F, C}},  {"mlp.c_proj.bias", {C}}};
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
  const double memcpyMs = bestOfMilliseconds(5, [&] {
    std::memcpy(arena.data(), copySource.data(), totalFloats * sizeof(float));
  });

  std::printf("GPT-2 124M F32 safetensors: %zu tensors, %zu floats, file in the page cache (not dropped)\n",
              tensors.size(), totalFloats);
  std::printf("%-44s %9s %9s %9s\n", "best of 5", "MB", "ms", "GB/s");
  printRow("tscope: SafetensorsFile open + readFloat all", megabytes, loadMs);
  printRow("peer: fread whole file into the arena", megabytes, freadMs);
  printRow("floor: memcpy RAM to RAM, same bytes", static_cast<double>(totalFloats * sizeof(float)) / 1e6, memcpyMs);
  std::printf("measured/floor: %.2f\n", loadMs / memcpyMs);
  return 0;
}

}  // namespace

int main() {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tscope_bench_load_" + std::to_string(::getpid()) + ".safetensors")).string();
  int status = 1;
  try {
    status = run(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_load: %s\n", e.what());
  }
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  return status;
}

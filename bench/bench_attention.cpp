// Attention cost benchmark: every efficient-attention variant's fast path (one head, d = 64,
// causal, one thread) for n = 256 .. 32768, measured by `tscope-cli attention-bench` (the one
// measurement), beside PyTorch's exact attention on one CPU thread (bench/peers/attention_peer.py)
// and a floor: exact and flash at causal attention's 2 n^2 d FLOPs and the measured single-thread
// SGEMM rate; the others at the time to read q, k, v and write out once at the measured copy
// bandwidth. Then the fitted log-log slopes beside the complexity table's exponents.
// Usage: bench_attention [--max-n 32768] [--exact-max-n 8192] [--d 64] [--repeats 3] [--no-peer]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/select/backend_select.h"
#include "model/theory/attention_cost.h"

using namespace tscope;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// stdout of a shell command; exits the benchmark when the command fails.
std::string runCommand(const std::string& command) {
  std::fprintf(stderr, "+ %s\n", command.c_str());
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::fprintf(stderr, "cannot run %s\n", command.c_str());
    std::exit(1);
  }
  std::string out;
  char buffer[4096];
  size_t count;
  while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, count);
  if (pclose(pipe) != 0) {
    std::fprintf(stderr, "failed: %s\n", command.c_str());
    std::exit(1);
  }
  return out;
}

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The machine's single-thread rates, measured with the CPU backend's own ops: SGEMM FLOP/s (best
// of 5, 1024^3) and copy bandwidth (bytes read + written per second, best of 5, 256 MiB).
struct MachineRates {
  double flops = 0;
  double bytesPerSecond = 0;
};
MachineRates measureMachine() {
  auto backend = makeBackend("cpu", 1);
  MachineRates rates;
  const int s = 1024;
  Buffer a = backend->allocate(size_t(s) * s), b = backend->allocate(size_t(s) * s), c = backend->allocate(size_t(s) * s);
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    backend->matmul(c.data(), a.data(), b.data(), nullptr, s, s, s);
    rates.flops = std::max(rates.flops, 2.0 * s * s * s / secondsSince(t0));
  }
  const size_t count = (size_t(256) << 20) / sizeof(float);
  Buffer src = backend->allocate(count), dst = backend->allocate(count);
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    backend->copy(dst.data(), src.data(), count);
    rates.bytesPerSecond = std::max(rates.bytesPerSecond, 2.0 * count * sizeof(float) / secondsSince(t0));
  }
  return rates;
}

double floorMs(const std::string& variant, double n, double d, const MachineRates& rates) {
  if (variant == "exact" || variant == "flash") return 2.0 * n * n * d / rates.flops * 1e3;
  return 4.0 * n * d * sizeof(float) / rates.bytesPerSecond * 1e3;
}

std::string joined(const std::vector<int>& values) {
  std::string s;
  for (int v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int maxN = 32768, exactMaxN = 8192, d = 64, repeats = 3;
  bool peer = true;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-peer") {
      peer = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "flag %s needs a value\n", flag.c_str());
      return 2;
    }
    const int value = std::atoi(argv[++i]);
    if (flag == "--max-n") maxN = value;
    else if (flag == "--exact-max-n") exactMaxN = value;
    else if (flag == "--d") d = value;
    else if (flag == "--repeats") repeats = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::vector<int> lengths, peerLengths;
  for (int n = 256; n <= maxN; n *= 2) {
    lengths.push_back(n);
    if (n <= exactMaxN) peerLengths.push_back(n);
  }
  const MachineRates rates = measureMachine();

  // Ours: one CLI run (one thread) with the fitted slopes; exact is skipped above exactMaxN by the
  // CLI's own --max-bytes rule.
  const json ours = json::parse(runCommand(
      "OMP_NUM_THREADS=1 TSCOPE_THREADS=1 " + std::string(TSCOPE_CLI) + " attention-bench --causal --heads 1 --fit --d " + std::to_string(d) +
      " --n " + joined(lengths) + " --repeats " + std::to_string(repeats) + " --max-bytes " + std::to_string(attentionMatrixBytes(exactMaxN, 1))));
  std::map<int, double> torchMs;
  std::string torchKernel = "not run (--no-peer)";
  if (peer) {
    const json p = json::parse(runCommand(std::string("/usr/bin/python3 ") + TSCOPE_SOURCE_DIR + "/bench/peers/attention_peer.py --n " +
                                          joined(peerLengths) + " --d " + std::to_string(d) + " --repeats " + std::to_string(repeats)));
    for (const json& r : p["records"]) torchMs[r["n"].get<int>()] = r["ms"].get<double>();
    torchKernel = "torch " + p["torch"].get<std::string>() + ", " + p["kernel"].get<std::string>() + ", 1 thread";
  }

  std::printf("attention cost, one head, d = %d, causal, one thread; peer: %s\n", d, torchKernel.c_str());
  std::printf("machine (1 thread): SGEMM %.1f GFLOP/s, copy %.1f GB/s (read + write)\n", rates.flops / 1e9, rates.bytesPerSecond / 1e9);
  std::printf("floor: exact, flash: 2 n^2 d FLOPs at the SGEMM rate; others: 4 n d floats read/written once at the copy rate\n\n");
  std::printf("| variant | n | ms | peak MB | torch exact ms | floor ms | ms / floor |\n|---|---|---|---|---|---|---|\n");
  for (const json& r : ours["records"]) {
    const std::string variant = r["variant"];
    const int n = r["n"];
    char torch[32] = "-";
    if (torchMs.count(n)) std::snprintf(torch, sizeof torch, "%.3f", torchMs[n]);
    if (r.contains("skipped")) {
      std::printf("| %s | %d | skipped: %s | | %s | | |\n", variant.c_str(), n, r["skipped"].get<std::string>().c_str(), torch);
      continue;
    }
    const double ms = r["ms"], floor = floorMs(variant, n, d, rates);
    std::printf("| %s | %d | %.3f | %.3f | %s | %.3f | %.1f |\n", variant.c_str(), n, ms, r["peak_bytes"].get<double>() / 1e6, torch, floor,
                ms / floor);
  }

  std::printf("\n| variant | time slope | expected | memory slope | expected | time | memory |\n|---|---|---|---|---|---|---|\n");
  auto slope = [](const json& value) {
    char text[32] = "-";
    if (value.is_number()) std::snprintf(text, sizeof text, "%.2f", value.get<double>());
    return std::string(text);
  };
  for (const json& fit : ours["fits"])
    std::printf("| %s | %s | %.0f | %s | %.0f | %s | %s |\n", fit["variant"].get<std::string>().c_str(), slope(fit["time_slope"]).c_str(),
                fit["expected_time_slope"].get<double>(), slope(fit["memory_slope"]).c_str(), fit["expected_memory_slope"].get<double>(),
                fit["time"].get<std::string>().c_str(), fit["memory"].get<std::string>().c_str());
  if (!torchMs.empty()) {
    std::vector<double> x, y;
    for (const auto& [n, ms] : torchMs) {
      x.push_back(n);
      y.push_back(ms);
    }
    if (x.size() >= 2) std::printf("| torch exact | %.2f | 2 | | | | |\n", fitLogLog(x, y).slope);
  }
  return 0;
}

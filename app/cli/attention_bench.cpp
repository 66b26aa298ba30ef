// tscope-cli attention-bench: time and working-set bytes of every efficient-attention variant's
// fast path (attentionVariantFast) on seeded random q, k, v for each sequence length; JSON records
// on stdout, and with --fit the log-log slopes beside the lecture's expected exponents.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "app/common/args.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/variant_flags.h"
#include "model/core/error.h"
#include "model/nn/efficient_attention.h"
#include "model/theory/attention_cost.h"

using nlohmann::json;

namespace tscope::cli {

namespace {

std::vector<AttentionVariant> parseVariants(const Args& args) {
  std::vector<AttentionVariant> variants;
  for (const std::string& name : args.list("variants", "exact,flash,window,lsh,linformer,linear,performer")) {
    const AttentionVariant variant = parseVariantName("variants", name);
    if (std::find(variants.begin(), variants.end(), variant) == variants.end()) variants.push_back(variant);
  }
  return variants;
}

// q, k, v for every head: (heads, n, d) each, standard normal from the seed.
struct RandomQkv {
  std::vector<float> q, k, v;
  RandomQkv(int heads, int n, int d, uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto* values : {&q, &k, &v}) {
      values->resize(static_cast<size_t>(heads) * n * d);
      for (float& x : *values) x = normal(engine);
    }
  }
};

struct Measurement {
  double ms = 0;         // median over the repeats of all heads' time
  size_t peakBytes = 0;  // the fast path's working set, times heads
};

Measurement measure(const RandomQkv& qkv, int heads, int n, int d, bool causal, const AttentionVariantParams& params, int repeats) {
  std::vector<float> out(static_cast<size_t>(n) * d);
  std::vector<double> times;
  Measurement m;
  for (int r = 0; r < repeats; ++r) {
    size_t bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int h = 0; h < heads; ++h) {
      const size_t offset = static_cast<size_t>(h) * n * d;
      const HeadQkv head{qkv.q.data() + offset, qkv.k.data() + offset, qkv.v.data() + offset, n, d, causal};
      bytes += attentionVariantFast(head, params, out.data());
    }
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    m.peakBytes = bytes;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  m.ms = times[times.size() / 2];
  return m;
}

// The slope of `key` against n over a variant's measured records; null with fewer than two
// distinct n or a value that is not positive.
json slopeOf(const std::vector<json>& records, const std::string& key) {
  std::vector<double> x, y;
  for (const json& r : records) {
    const double value = r[key].get<double>();
    if (!(value > 0)) return nullptr;
    x.push_back(r["n"].get<double>());
    y.push_back(value);
  }
  if (std::adjacent_find(x.begin(), x.end(), std::not_equal_to<>()) == x.end()) return nullptr;
  return fitLogLog(x, y).slope;
}

json fitsOf(const std::vector<AttentionVariant>& variants, const json& records) {
  const auto table = complexityTable();
  json fits = json::array();
  for (AttentionVariant variant : variants) {
    std::vector<json> measured;
    for (const json& r : records)
      if (r["variant"] == attentionVariantName(variant) && !r.contains("skipped")) measured.push_back(r);
    const auto row = std::find_if(table.begin(), table.end(), [&](const VariantComplexity& c) { return c.variant == variant; });
    fits.push_back({{"variant", attentionVariantName(variant)},
                    {"points", measured.size()},
                    {"time_slope", slopeOf(measured, "ms")},
                    {"memory_slope", slopeOf(measured, "peak_bytes")},
                    {"expected_time_slope", row->timeExponent},
                    {"expected_memory_slope", row->memoryExponent},
                    {"time", row->time},
                    {"memory", row->memory}});
  }
  return fits;
}

}  // namespace

int runAttentionBench(const Argv& argv) {
  std::set<std::string> valueFlags = {"n", "variants", "d", "heads", "repeats", "max-bytes"};
  addVariantKnobFlags(valueFlags);
  Args args("attention-bench", argv, valueFlags, {"causal", "no-causal", "fit"});
  if (args.has("causal") && args.has("no-causal")) throw UsageError("--causal and --no-causal contradict each other");
  const bool causal = !args.has("no-causal");
  const std::vector<int> lengths = args.intList("n");
  for (int n : lengths)
    if (n < 1 || n > (1 << 20)) throw UsageError("--n: every length must be between 1 and 1048576 (got " + std::to_string(n) + ")");
  const auto variants = parseVariants(args);
  const int d = static_cast<int>(args.integer("d", 64, 1, 4096));
  const int heads = static_cast<int>(args.integer("heads", 1, 1, 256));
  const int repeats = static_cast<int>(args.integer("repeats", 3, 1, 1000));
  const int64_t maxBytes = args.integer("max-bytes", int64_t{2} << 30, 1, INT64_MAX);

  const AttentionVariantParams base = parseVariantKnobs(args);
  // Every knob is checked for every length before anything runs.
  for (AttentionVariant variant : variants) {
    AttentionVariantParams params = base;
    params.variant = variant;
    for (int n : lengths)
      if (const std::string problem = attentionVariantProblem(params, n); !problem.empty()) throw UsageError(problem);
  }

  json records = json::array();
  for (int n : lengths) {
    const RandomQkv qkv(heads, n, d, base.seed);
    for (AttentionVariant variant : variants) {
      json record = {{"variant", attentionVariantName(variant)}, {"n", n}};
      const int64_t needs = attentionMatrixBytes(n, heads);
      if (variant == AttentionVariant::Exact && needs > maxBytes) {
        record["skipped"] = "needs " + std::to_string(needs) + " bytes (over --max-bytes " + std::to_string(maxBytes) + ")";
        records.push_back(record);
        continue;
      }
      AttentionVariantParams params = base;
      params.variant = variant;
      const Measurement m = measure(qkv, heads, n, d, causal, params, repeats);
      record.update({{"d", d}, {"heads", heads}, {"ms", m.ms}, {"peak_bytes", m.peakBytes}, {"causal", causal}});
      record.update(attentionVariantKnobsJson(params));
      records.push_back(record);
    }
  }
  if (!args.has("fit")) {
    print(records);
    return 0;
  }
  print({{"records", records}, {"fits", fitsOf(variants, records)}});
  return 0;
}

}  // namespace tscope::cli

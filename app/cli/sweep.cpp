// tscope-cli sweep and fit: the scaling lab from the command line. `sweep` creates a sweep directory
// from a preset or a spec file (or continues, and with --sizes / --tokens extends, the one in --out),
// trains its unfinished runs one after another (several at once on a GPU: --parallel) with the train command's progress line, and prints
// the runs and the fitted laws as JSON; Ctrl-C checkpoints the run in progress (exit 130; the next
// `sweep --out DIR` resumes it). `fit` fits the laws to a sweep's finished runs (model/theory/scaling_fit.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/common/args.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"
#include "model/select/backend_select.h"
#include "model/train/sweep.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope::cli {

namespace {

json intervalJson(const Interval& i) { return json::array({i.lo, i.hi}); }

json fitsJson(const SweepFits& f) {
  json out = {{"points", f.points.size()}, {"notes", f.notes}};
  if (f.hasKaplanParams)
    out["kaplan_params"] = {{"alpha_n", f.kaplanParams.alpha},
                            {"n_c", f.kaplanParams.scale},
                            {"rms_log_residual", f.kaplanParams.rmsLogResidual},
                            {"points", f.kaplanParams.points}};
  if (f.hasKaplanTokens)
    out["kaplan_tokens"] = {{"alpha_d", f.kaplanTokens.alpha},
                            {"d_c", f.kaplanTokens.scale},
                            {"rms_log_residual", f.kaplanTokens.rmsLogResidual},
                            {"points", f.kaplanTokens.points}};
  if (f.hasChinchilla) {
    const ChinchillaConstants& c = f.chinchilla.constants;
    json chinchilla = {{"E", c.E},
                       {"A", c.A},
                       {"B", c.B},
                       {"alpha", c.alpha},
                       {"beta", c.beta},
                       {"params_exponent", chinchillaParamsExponent(c)},
                       {"rms_log_residual", f.chinchilla.rmsLogResidual},
                       {"objective", f.chinchilla.objective},
                       {"starts", f.chinchilla.starts}};
    auto optimum = [](const ComputeOptimum& o) {
      return json{{"flops", o.flops}, {"params", o.params}, {"tokens", o.tokens}, {"tokens_per_param", o.tokensPerParam}, {"loss", o.loss}};
    };
    chinchilla["optimum_at_sweep"] = optimum(f.optimumAtSweep);
    chinchilla["optimum_at_chinchilla"] = optimum(f.optimumAtChinchilla);
    if (f.bootstrap.samples > 0)
      chinchilla["bootstrap"] = {{"samples", f.bootstrap.samples},
                                 {"level", f.bootstrap.level},
                                 {"alpha", intervalJson(f.bootstrap.alpha)},
                                 {"beta", intervalJson(f.bootstrap.beta)},
                                 {"E", intervalJson(f.bootstrap.E)},
                                 {"params_exponent", intervalJson(f.bootstrap.paramsExponent)},
                                 {"tokens_per_param", intervalJson(f.bootstrap.tokensPerParam)},
                                 {"at_flops", f.bootstrap.atFlops}};
    out["chinchilla"] = chinchilla;
  }
  return out;
}

json runsJson(const SweepResults& sweep) {
  json runs = json::array();
  for (const SweepRunResult& r : sweep.runs) {
    json run = {{"name", r.name},
                {"params_non_embedding", r.paramsNonEmbedding},
                {"params_total", r.paramsTotal},
                {"tokens", r.tokens},
                {"steps", r.steps},
                {"train_loss", r.trainLoss},
                {"val_loss", r.valLoss},
                {"seconds", r.seconds}};
    if (r.task)
      run["task"] = {{"exact_match", r.task->exactMatch},
                     {"answer_token_loss", r.task->answerTokenLoss},
                     {"answer_token_accuracy", r.task->answerTokenAccuracy}};
    runs.push_back(run);
  }
  return runs;
}

// What the fit takes from the flags, read (and --csv checked writable) before any training.
struct FitFlags {
  int samples = 200;
  uint64_t seed = 1;
  std::string csv;  // "" = no CSV files
};
FitFlags fitFlags(const Args& args) {
  FitFlags f;
  f.samples = static_cast<int>(args.integer("bootstrap", 200, 0, 100000));
  f.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, 1LL << 62));
  f.csv = args.str("csv", "");
  if (args.has("csv")) requireWritableOutput(f.csv, true);
  return f;
}

// The fits of a sweep's runs, and the CSV files when asked for.
json fitAndExport(const SweepResults& sweep, const FitFlags& flags) {
  const SweepFits fits = fitSweep(sweepPoints(sweep), flags.samples, flags.seed);
  json out = {{"params", sweep.spec.totalParams ? "total" : "non-embedding"}, {"fits", fitsJson(fits)}};
  if (!flags.csv.empty()) {
    const fs::path dir = flags.csv;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(dir.string() + ": cannot create the CSV directory (" + ec.message() + ")");
    writeFileAtomically((dir / "runs.csv").string(), sweepRunsCsv(sweep));
    writeFileAtomically((dir / "fits.csv").string(), fitsCsv(fits));
    out["csv"] = {(dir / "runs.csv").string(), (dir / "fits.csv").string()};
  }
  return out;
}

// --backend (as train: auto is the GPU when there is one), --parallel N (runs trained at once; default
// 1 on the CPU, kGpuParallelRuns on a GPU), --threads (each run's CPU threads).
// *note: what "auto" fell back to ("" otherwise), for one line on stderr once training starts.
SweepRunOptions sweepRunOptions(const Args& args, std::string* note) {
  SweepRunOptions options;
  options.threads = static_cast<int>(args.integer("threads", 0, 0, 1024));
  const std::string backend = args.str("backend", "auto");
  const bool gpu = chooseTrainingDevice(backend, note) != nullptr;  // the one probe: names and errors
  if (gpu) options.device = [backend] { return makeTrainingDevice(backend); };
  if (gpu || backend != "auto") note->clear();
  options.parallel = static_cast<int>(args.integer("parallel", gpu ? kGpuParallelRuns : 1, 1, kMaxSweepRuns));
  return options;
}

}  // namespace

int runSweep(const Argv& argv) {
  Args args("sweep", argv, {"out", "preset", "spec", "sizes", "tokens", "threads", "backend", "parallel", "bootstrap", "seed", "csv"}, {"quiet"});
  requireUtf8Flags(argv);  // sweep.json keeps the command line
  const std::string out = args.str("out");
  requireWritableOutput(out, true);
  const FitFlags fit = fitFlags(args);  // a bad --bootstrap, --seed or --csv before any training
  std::string backendNote;
  SweepRunOptions options = sweepRunOptions(args, &backendNote);  // bad --backend / --parallel before anything is written
  const bool exists = fs::exists(fs::path(out) / "sweep.json");
  std::vector<SweepSize> sizes;
  std::vector<int64_t> tokens;
  if (args.has("sizes"))
    for (const std::string& text : args.list("sizes", "")) sizes.push_back(parseSweepSize(text));
  if (args.has("tokens"))
    for (const std::string& text : args.list("tokens", "")) tokens.push_back(parseTokenCount(text));
  if (args.has("preset") && args.has("spec")) throw UsageError("give --preset or --spec, not both");
  // The sweep the flags describe (a preset or a spec, with --sizes / --tokens added).
  auto asked = [&] {
    SweepSpec spec;
    if (args.has("spec")) {
      spec = sweepSpecFromJson(readJsonFile(args.str("spec"), 1u << 20, "sweep spec"));
    } else {
      const std::string key = args.str("preset", "brown");
      const SweepPreset* preset = findSweepPreset(key);
      if (!preset) {
        std::string known;
        for (const SweepPreset& p : sweepPresets()) known += (known.empty() ? "" : ", ") + p.key;
        throw UsageError("unknown sweep preset '" + oneLine(key, 64) + "' (one of: " + known + ")");
      }
      spec = preset->spec;
    }
    for (const SweepSize& size : sizes) spec.sizes.push_back(size);
    for (int64_t budget : tokens) spec.tokens.push_back(budget);
    return spec;
  };
  if (exists) {
    // The same command again continues the sweep (README); --preset / --spec naming another sweep is refused.
    if (args.has("preset") || args.has("spec")) {
      if (sweepSpecToJson(asked()) != sweepSpecToJson(loadSweep((fs::path(out) / "sweep.json").string()).spec))
        throw UsageError(out + " already holds another sweep: run without --preset / --spec to continue it (--sizes / --tokens extend it)");
    } else if (!sizes.empty() || !tokens.empty()) {
      extendSweep(out, sizes, tokens);
    }
  } else {
    createSweep(out, asked(), commandLine("sweep", argv));
  }

  SweepRunner runner(out, std::move(options));
  if (!backendNote.empty() && !args.has("quiet") && !runner.status().done)
    std::fprintf(stderr, "tscope-cli: training on the %s\n", backendNote.c_str());
  const std::atomic<bool>& stop = stopOnInterrupt();
  const bool quiet = args.has("quiet");
  std::unique_ptr<ProgressLine> progress;
  std::string shown;
  SweepStatus status = runner.status();
  while (!status.done) {
    if (stop.load()) {
      runner.checkpoint();
      if (progress) progress->finish();
      std::fprintf(stderr, "interrupted: %d of %d runs finished, the run in progress checkpointed; `tscope-cli sweep --out %s` resumes\n",
                   status.runsDone, status.runs, out.c_str());
      return 130;
    }
    status = runner.step();
    const Trainer* trainer = runner.current();
    if (quiet || !trainer) continue;
    if (status.current != shown) {
      if (progress) progress->finish();
      const std::string others = status.active.size() > 1 ? " (+" + std::to_string(status.active.size() - 1) + " at once)" : "";
      progress = std::make_unique<ProgressLine>(
          status.steps, status.current + others + " " + std::to_string(status.runsDone + 1) + "/" + std::to_string(status.runs) + " ");
      shown = status.current;
    }
    if (trainer->history().steps.empty()) continue;
    const StepReport& step = trainer->history().steps.back();
    progress->update(*trainer, step.seconds > 0 ? step.tokens / step.seconds : 0, false);
  }
  if (progress) progress->finish();
  json result = fitAndExport(runner.results(), fit);
  result["out"] = out;
  result["runs"] = runsJson(runner.results());
  print(result);
  return 0;
}

int runFit(const Argv& argv) {
  Args args("fit", argv, {"runs", "bootstrap", "seed", "csv"}, {});
  const FitFlags flags = fitFlags(args);
  const SweepResults sweep = loadSweep(args.str("runs"));
  json result = fitAndExport(sweep, flags);
  result["runs"] = runsJson(sweep);
  result["title"] = sweep.spec.title;
  print(result);
  return 0;
}

}  // namespace tscope::cli

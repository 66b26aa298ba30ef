// tscope-cli forward: one forward pass over a prompt, its top next tokens, the mean next-token loss
// (--loss-from), optional ablations (beside the clean run's top tokens and loss) and --dump files.
#include <chrono>
#include <climits>
#include <cstdio>
#include <cmath>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "app/cli/ablation.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/forward_dump.h"
#include "app/cli/variant_flags.h"
#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/nn/transformer.h"
#include "model/nn/what_if.h"

using nlohmann::json;

namespace tscope::cli {
namespace {

// Mean cross-entropy (nats) of each next token ids[t + 1] under logits (T, V) row t, over
// t = from .. T - 2.
double nextTokenLoss(const std::vector<float>& logits, const std::vector<int>& ids, int V, int from) {
  double total = 0;
  const int T = static_cast<int>(ids.size());
  for (int t = from; t + 1 < T; ++t) {
    const float* row = logits.data() + static_cast<size_t>(t) * V;
    total += logSumExp(std::span<const float>(row, V)) - row[ids[t + 1]];
  }
  return total / (T - 1 - from);
}

// --attention-variant NAME and its knob flags (only with --dump; the knobs only with a variant).
std::optional<AttentionVariantParams> parseDumpVariant(const Args& args) {
  if (!args.has("attention-variant")) {
    if (anyVariantKnobFlag(args) || args.has("seed")) throw UsageError("the attention knob flags need --attention-variant NAME");
    return std::nullopt;
  }
  if (!args.has("dump")) throw UsageError("--attention-variant needs --dump DIR (it writes the variant's maps there)");
  AttentionVariantParams params = parseVariantKnobs(args);
  params.variant = parseVariantName("attention-variant", args.str("attention-variant"));
  return params;
}

}  // namespace

int runForward(const Argv& argv) {
  std::set<std::string> valueFlags =
      withAblationFlags({"model", "text", "text-file", "ids", "dump", "top", "backend", "threads", "loss-from", "attention-variant", "what-if"});
  addVariantKnobFlags(valueFlags);
  valueFlags.insert(std::begin(kSourceFlags), std::end(kSourceFlags));
  Args args("forward", argv, valueFlags, {});
  const std::optional<AttentionVariantParams> variant = parseDumpVariant(args);
  LoadedModel model = loadModel(args.str("model"));
  Input input = inputIds(args, model, "text");
  const std::optional<Input> source = sourceIds(args, model);
  // --what-if: the model with a piece taken out (what_if.h); a shuffle reorders the ids it reads.
  const WhatIfs whatIfs = parseWhatIfs(args.str("what-if", ""), model.weights.config());
  std::vector<int> shuffleOrder;
  if (whatIfs.has(WhatIfKind::Shuffle)) input.ids = applyShuffle(whatIfs, input.ids, &shuffleOrder);
  const std::vector<int>& ids = input.ids;
  const Ablation ablation = parseAblation(args, model);
  const int top = static_cast<int>(args.integer("top", 10, 1, 1000));
  const ModelConfig& c = model.weights.config();
  const int T = static_cast<int>(ids.size()), V = c.vocab_size;
  const bool dump = args.has("dump"), loss = args.has("loss-from");
  if (dump) requireWritableOutput(args.str("dump"), true);  // before the forward, not after it
  const int lossFrom = static_cast<int>(args.integer("loss-from", 0, 0, INT_MAX));
  if (loss && lossFrom > T - 2)
    throw Error("--loss-from " + std::to_string(lossFrom) + " leaves no next token to score: the prompt is " + std::to_string(T) +
                " tokens (positions 0.." + std::to_string(T - 2) + " have one)");
  if (variant)
    if (const std::string problem = attentionVariantProblem(*variant, T); !problem.empty()) throw UsageError("--attention-variant: " + problem);
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  transformer.setWhatIfs(whatIfs);
  EncoderTrace encoderTrace;
  if (source) transformer.encode(source->ids, dump ? &encoderTrace : nullptr);
  // (T or 1, V): every position when the loss or the dump needs them.
  auto runOnce = [&](std::vector<float>& logits, Trace* trace) {
    KVCache cache(*backend, c, T);
    transformer.forward(ids, cache, logits, dump || loss, trace, trace ? dumpTraceOptions(c) : TraceOptions{});
  };
  json out = {{"model", model.path}, {"backend", backend->name()}, {"ids", ids}, {"tokens", tokensJson(model, ids)}};
  if (!ablation.empty()) {  // the clean run first, then the ablated one
    std::vector<float> clean;
    runOnce(clean, nullptr);
    out["clean_next"] = topTokens(model, clean.data() + clean.size() - V, V, top);
    if (loss) out["clean_loss"] = nextTokenLoss(clean, ids, V, lossFrom);
    out["interventions"] = applyAblation(ablation, transformer, ids);
  }
  Trace trace;
  std::vector<float> logits;
  const auto started = std::chrono::steady_clock::now();
  runOnce(logits, dump ? &trace : nullptr);
  const double forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  out["next"] = topTokens(model, logits.data() + logits.size() - V, V, top);
  if (loss) {
    out["loss"] = nextTokenLoss(logits, ids, V, lossFrom);
    out["loss_positions"] = {{"from", lossFrom}, {"count", T - 1 - lossFrom}};
  }
  describeInput(out, input);
  if (!whatIfs.empty()) out["what_ifs"] = formatWhatIfs(whatIfs);
  if (!shuffleOrder.empty()) out["shuffle_order"] = shuffleOrder;
  if (source) {
    out["source_ids"] = source->ids;
    out["source_tokens"] = tokensJson(model, source->ids);
    out["source_dropped_tokens"] = source->dropped;
  }
  if (!backendNote.empty()) out["backend_note"] = backendNote;
  if (dump) {
    std::string missing;
    const size_t files = writeForwardDump(args.str("dump"), model, trace, logits, ids, transformer, missing, variant ? &*variant : nullptr,
                                          source ? &encoderTrace : nullptr);
    out["dump"] = {{"dir", args.str("dump")}, {"files", files}};
    if (!missing.empty()) {
      out["dump"]["missing"] = missing;
      std::fprintf(stderr, "tscope-cli: forward --dump: %s\n", oneLine(missing).c_str());
    }
  }
  out["forward_ms"] = forwardMs;  // the forward (with the dump's capture), not the writing of the files
  if (c.isMoe() && dump) out["moe_aux_loss"] = trace.moeAuxLoss;
  print(out);
  return 0;
}

}  // namespace tscope::cli

// tscope-cli compare-forward: two forwards side by side, as the Compare panel shows them: a left and
// a right side, each a model, a text and what-ifs; the KL divergence of their next-token
// distributions, each side's top tokens, logit lens (top token per layer at the last position) and
// per-head attention entropy and distances to the previous- and first-token patterns, and per
// layer and head the largest difference of the two maps (aligned by character spans when two
// tokenizers cut one text differently). --dump DIR writes the maps, their difference and the
// next-token logits as .npy.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "model/core/error.h"
#include "model/io/npy.h"
#include "model/nn/compare_views.h"
#include "model/nn/transformer.h"
#include "model/nn/what_if.h"
#include "model/theory/architecture_rows.h"

using nlohmann::json;

namespace tscope::cli {
namespace {

struct Side {
  std::string name;  // "left" or "right"
  LoadedModel model;
  Input input;
  WhatIfs whatIfs;
  std::vector<int> shuffleOrder;
  Trace trace;
  AttentionRows maps;
  std::vector<float> logits;  // (V) the last position's
  std::vector<TokenSpan> spans;
  double forwardMs = 0;  // the forward with its trace (maps of every layer, the lens at the last position)
};

// --SIDE-text, or the shared --text.
Side readSide(const Args& args, const std::string& name) {
  Side side;
  side.name = name;
  side.model = loadModel(args.str(name));
  const std::string own = name + "-text";
  const bool shared = args.has("text") || args.has("text-file") || args.has("ids"), ownText = args.has(own) || args.has(own + "-file");
  if (shared == ownText)
    throw UsageError("give --text S, --text-file PATH or --ids 1,2,3 (both sides) or --left-text S and --right-text S (each side its own)");
  side.input = inputIds(args, side.model, ownText ? own : "text");
  side.whatIfs = parseWhatIfs(args.str(name + "-what-if", ""), side.model.weights.config());
  if (side.whatIfs.has(WhatIfKind::Shuffle)) side.input.ids = applyShuffle(side.whatIfs, side.input.ids, &side.shuffleOrder);
  if (side.model.weights.config().isEncoderDecoder())
    throw Error(name + " model: compare-forward runs decoder-only and encoder-only models (an encoder-decoder needs a source)");
  return side;
}

void run(Side& side, Backend& backend) {
  Transformer model(side.model.weights, backend);
  model.setWhatIfs(side.whatIfs);
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 1;
  options.logitLensLastOnly = true;
  const auto started = std::chrono::steady_clock::now();
  const std::vector<float> logits = model.logitsFor(side.input.ids, &side.trace, options);
  side.forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const int V = side.model.weights.config().vocab_size;
  side.logits.assign(logits.end() - V, logits.end());
  side.maps.append(side.trace);
  if (const Tokenizer* tokenizer = side.model.tokenizer.get()) side.spans = spansOf(tokenizer->decodeEach(side.input.ids));
}

json sideJson(const Side& side) {
  json out = {{"model", side.model.path}, {"ids", side.input.ids}, {"tokens", tokensJson(side.model, side.input.ids)}};
  if (!side.whatIfs.empty()) out["what_ifs"] = formatWhatIfs(side.whatIfs);
  if (!side.shuffleOrder.empty()) out["shuffle_order"] = side.shuffleOrder;
  const int V = static_cast<int>(side.logits.size());
  out["next"] = topTokens(side.model, side.logits.data(), V, 5);
  json lens = json::array(), heads = json::array();
  const Trace& t = side.trace;
  for (int l = 0; l < t.L && t.lensK > 0; ++l) {
    const int id = t.lensIds[(size_t)l * t.lensK];
    lens.push_back({{"layer", l}, {"id", id}, {"token", tokenString(side.model, id)}, {"prob", t.lensProbs[(size_t)l * t.lensK]}});
  }
  for (int li = 0; li < side.maps.layers(); ++li) {
    json layer = json::array();
    for (const HeadPattern& p : layerPatterns(side.maps, li))
      layer.push_back({{"entropy", p.entropy}, {"previous_token", p.previousToken}, {"first_token", p.firstToken}});
    heads.push_back({{"layer", t.layers[li]}, {"heads", layer}});
  }
  out["lens"] = lens;
  out["heads"] = heads;
  describeInput(out, side.input);
  out["forward_ms"] = side.forwardMs;
  out["weight_bytes"] = side.model.weights.heldBytes();  // 16-bit matrices as halves (mapped in place), the rest float32
  return out;
}

}  // namespace

int runCompareForward(const Argv& argv) {
  Args args("compare-forward", argv,
            {"left", "right", "text", "text-file", "ids", "left-text", "left-text-file", "right-text", "right-text-file", "left-what-if",
             "right-what-if", "dump", "backend", "threads"},
            {});
  const bool dump = args.has("dump");
  if (dump) {
    requireWritableOutput(args.str("dump"), true);
    std::filesystem::create_directories(args.str("dump"));
  }
  Side left = readSide(args, "left"), right = readSide(args, "right");
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  run(left, *backend);
  run(right, *backend);
  json out = {{"left", sideJson(left)}, {"right", sideJson(right)}};
  describeBackend(out, *backend, backendNote);
  if (left.logits.size() == right.logits.size()) out["kl"] = klDivergence(left.logits, right.logits);
  else
    out["kl_missing"] = "the two models have different vocabularies (" + std::to_string(left.logits.size()) + " and " +
                        std::to_string(right.logits.size()) + " tokens): their next-token distributions cannot be compared token by token";
  const bool sameTokens = left.input.ids == right.input.ids;
  out["same_tokens"] = sameTokens;
  const int Tl = left.maps.rows(), Tr = right.maps.rows();
  const int layers = std::min(left.maps.layers(), right.maps.layers()), heads = std::min(left.maps.heads(), right.maps.heads());
  json attention = json::array();
  std::string note;
  for (int l = 0; l < layers; ++l) {
    json perHead = json::array();
    std::vector<float> differences;
    for (int h = 0; h < heads; ++h) {
      const MapDifference d = mapDifference(left.maps.map(l, h, false), Tl, right.maps.map(l, h, false), Tr, sameTokens, left.spans, right.spans);
      note = d.note;
      if (d.difference.empty()) break;
      perHead.push_back(d.maxAbs);
      differences.insert(differences.end(), d.difference.begin(), d.difference.end());
    }
    if (!perHead.empty()) attention.push_back({{"layer", left.trace.layers[l]}, {"max_abs_difference", perHead}});
    if (dump && !differences.empty())
      writeNpy((std::filesystem::path(args.str("dump")) / ("diff_attn_" + std::to_string(left.trace.layers[l]) + ".npy")).string(),
               differences.data(), {heads, Tl, Tl});
  }
  out["attention"] = attention;
  json architecture = json::array();
  for (const ArchitectureRow& row :
       architectureRows(left.model.weights.config(), right.model.weights.config(), (int)left.input.ids.size(), (int)right.input.ids.size()))
    architecture.push_back({{"name", row.name}, {"left", row.left}, {"right", row.right}, {"differs", row.differs}});
  out["architecture"] = architecture;
  out["attention_note"] = note;
  if (dump) {
    const std::filesystem::path dir = args.str("dump");
    for (const Side* side : {&left, &right}) {
      const int T = side->maps.rows(), H = side->maps.heads();
      for (int l = 0; l < side->maps.layers(); ++l) {
        std::vector<float> all;
        for (int h = 0; h < H; ++h) {
          const std::vector<float> m = side->maps.map(l, h, false);
          all.insert(all.end(), m.begin(), m.end());
        }
        writeNpy((dir / (side->name + "_attn_" + std::to_string(side->trace.layers[l]) + ".npy")).string(), all.data(), {H, T, T});
      }
      writeNpy((dir / (side->name + "_logits.npy")).string(), side->logits.data(), {(int64_t)side->logits.size()});
    }
    out["dump"] = dir.string();
  }
  print(out);
  return 0;
}

}  // namespace tscope::cli

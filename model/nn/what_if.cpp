// What-ifs (what_if.h): the names and their command-line syntax, the checks against a model, the
// words the status bar shows, and the shuffle's permutation.
#include "model/nn/what_if.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "model/core/error.h"
#include "model/core/list_text.h"
#include "model/core/rng.h"

namespace tscope {

const char* whatIfName(WhatIfKind kind) {
  switch (kind) {
    case WhatIfKind::NoCausalMask: return "no-causal-mask";
    case WhatIfKind::NoPositions: return "no-positions";
    case WhatIfKind::NoScale: return "no-scale";
    case WhatIfKind::UniformAttention: return "uniform-attention";
    case WhatIfKind::SkipResidual: return "skip-residual";
    case WhatIfKind::SkipMlp: return "skip-mlp";
    case WhatIfKind::SkipFinalNorm: return "skip-final-norm";
    case WhatIfKind::Shuffle: return "shuffle";
  }
  return "?";
}

bool whatIfTakesLayer(WhatIfKind kind) {
  return kind == WhatIfKind::UniformAttention || kind == WhatIfKind::SkipResidual || kind == WhatIfKind::SkipMlp;
}

bool whatIfTakesSeed(WhatIfKind kind) { return kind == WhatIfKind::Shuffle; }

bool WhatIfs::has(WhatIfKind kind) const {
  return std::any_of(items.begin(), items.end(), [kind](const WhatIf& w) { return w.kind == kind; });
}

bool WhatIfs::atLayer(WhatIfKind kind, int layer) const {
  return std::any_of(items.begin(), items.end(), [&](const WhatIf& w) { return w.kind == kind && w.arg == layer; });
}

bool WhatIfs::changeForward() const {
  return std::any_of(items.begin(), items.end(), [](const WhatIf& w) { return w.kind != WhatIfKind::Shuffle; });
}

std::string whatIfProblem(const WhatIf& w, const ModelConfig& config) {
  const std::string name = formatWhatIfs(WhatIfs{{w}});
  if (whatIfTakesLayer(w.kind) && (w.arg < 0 || w.arg >= config.n_layer))
    return name + ": layer " + std::to_string(w.arg) + " is outside the model's " + std::to_string(config.n_layer) + " layers (0.." +
           std::to_string(config.n_layer - 1) + ")";
  if (whatIfTakesSeed(w.kind) && w.arg < 0) return name + ": the seed must be 0 or more";
  switch (w.kind) {
    case WhatIfKind::NoCausalMask:
      if (!config.causal) return name + ": this model has no causal mask to remove (its attention already sees every token)";
      break;
    case WhatIfKind::NoPositions:
      if (config.position_encoding == PositionEncoding::None) return name + ": this model has no positional encoding to remove";
      break;
    case WhatIfKind::SkipResidual:
      if (!config.residual) return name + ": this model has no residual connections to skip";
      break;
    case WhatIfKind::SkipMlp:
      if (!config.hasFeedForward()) return name + ": this model is attention-only: its layers have no MLP";
      break;
    case WhatIfKind::SkipFinalNorm:
      if (!config.hasNorm()) return name + ": this model has no norms (norm: none)";
      if (!config.hasFinalNorm()) return name + ": this model is post-norm: it has no final norm (each layer ends with its own)";
      break;
    default: break;
  }
  return "";
}

namespace {

std::string namesList() {
  std::string out;
  for (WhatIfKind kind : kWhatIfKinds) {
    if (!out.empty()) out += ", ";
    out += whatIfName(kind);
    if (whatIfTakesLayer(kind)) out += ":LAYER";
    if (whatIfTakesSeed(kind)) out += ":SEED";
  }
  return out;
}

WhatIf parseOne(std::string_view item) {
  const size_t colon = item.find(':');
  const std::string_view name = item.substr(0, colon);
  const auto kind = std::find_if(std::begin(kWhatIfKinds), std::end(kWhatIfKinds), [&](WhatIfKind k) { return name == whatIfName(k); });
  if (kind == std::end(kWhatIfKinds)) throw Error("what-if '" + std::string(item) + "': not one of " + namesList());
  WhatIf w{*kind, 0};
  const bool takesArg = whatIfTakesLayer(w.kind) || whatIfTakesSeed(w.kind);
  const char* argName = whatIfTakesSeed(w.kind) ? "SEED" : "LAYER";
  if (!takesArg) {
    if (colon != std::string_view::npos) throw Error("what-if '" + std::string(item) + "': " + std::string(name) + " takes no argument");
    return w;
  }
  if (colon == std::string_view::npos)
    throw Error("what-if '" + std::string(item) + "': expected " + std::string(name) + ":" + argName + ", e.g. " + std::string(name) + ":0");
  const std::string_view arg = item.substr(colon + 1);
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), w.arg);
  if (arg.empty() || ec != std::errc() || end != arg.data() + arg.size() || w.arg < 0)
    throw Error("what-if '" + std::string(item) + "': " + argName + " must be a whole number 0 or more");
  return w;
}

}  // namespace

WhatIfs parseWhatIfNames(std::string_view text) {
  WhatIfs out;
  for (const std::string_view item : splitList(text)) {
    if (item.empty()) throw Error("what-if list '" + std::string(text) + "': an empty item between commas");
    const WhatIf w = parseOne(item);
    if (w.kind == WhatIfKind::Shuffle && out.has(WhatIfKind::Shuffle) && !out.atLayer(WhatIfKind::Shuffle, (int)w.arg))
      throw Error("what-if '" + std::string(item) + "': one shuffle at a time");
    if (std::find(out.items.begin(), out.items.end(), w) == out.items.end()) out.items.push_back(w);
  }
  return out;
}

WhatIfs parseWhatIfs(std::string_view text, const ModelConfig& config) {
  WhatIfs out = parseWhatIfNames(text);
  for (const WhatIf& w : out.items)
    if (std::string problem = whatIfProblem(w, config); !problem.empty()) throw Error("what-if " + problem);
  return out;
}

std::string keepFittingWhatIfs(WhatIfs& whatIfs, const ModelConfig& config) {
  std::string dropped;
  std::erase_if(whatIfs.items, [&](const WhatIf& w) {
    const std::string problem = whatIfProblem(w, config);
    if (!problem.empty() && dropped.empty()) dropped = "left out a what-if: " + problem;
    return !problem.empty();
  });
  return dropped;
}

std::string formatWhatIfs(const WhatIfs& whatIfs) {
  std::string out;
  for (const WhatIf& w : whatIfs.items) {
    if (!out.empty()) out += ',';
    out += whatIfName(w.kind);
    if (whatIfTakesLayer(w.kind) || whatIfTakesSeed(w.kind)) out += ":" + std::to_string(w.arg);
  }
  return out;
}

std::string describeWhatIf(const WhatIf& w) {
  const std::string layer = std::to_string(w.arg);
  switch (w.kind) {
    case WhatIfKind::NoCausalMask: return "no causal mask";
    case WhatIfKind::NoPositions: return "no positions";
    case WhatIfKind::NoScale: return "no 1/sqrt(d) scaling";
    case WhatIfKind::UniformAttention: return "uniform attention in layer " + layer;
    case WhatIfKind::SkipResidual: return "no residual in layer " + layer;
    case WhatIfKind::SkipMlp: return "no MLP in layer " + layer;
    case WhatIfKind::SkipFinalNorm: return "no final norm";
    case WhatIfKind::Shuffle: return "tokens shuffled (seed " + layer + ")";
  }
  return "?";
}

std::string describeWhatIfs(const WhatIfs& whatIfs) {
  std::string out;
  for (const WhatIf& w : whatIfs.items) out += (out.empty() ? "" : ", ") + describeWhatIf(w);
  return out;
}

ModelConfig configAsRun(ModelConfig config, const WhatIfs& whatIfs) {
  if (whatIfs.has(WhatIfKind::NoCausalMask)) config.causal = false;
  return config;
}

std::vector<int> shuffleOrder(int n, uint64_t seed) {
  std::vector<int> order(std::max(n, 0));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.next() % (uint64_t)(i + 1)]);
  return order;
}

std::vector<int> applyShuffle(const WhatIfs& whatIfs, std::span<const int> ids, std::vector<int>* order) {
  const int n = static_cast<int>(ids.size());
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  for (const WhatIf& w : whatIfs.items)
    if (w.kind == WhatIfKind::Shuffle) o = shuffleOrder(n, static_cast<uint64_t>(w.arg));
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = ids[o[i]];
  if (order) *order = std::move(o);
  return out;
}

}  // namespace tscope

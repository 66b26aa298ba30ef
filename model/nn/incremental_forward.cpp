// Prefix reuse for live prompt edits. Exact for causal models because a token's keys, values,
// residuals, logit lens and (per-token) MoE routing depend only on the tokens up to it; the rows
// of the kept prefix are copied (small per-row data) or shared (attention maps, AttentionRows).
// Routing that depends on the whole sequence (expert choice; token choice under a capacity limit,
// whose capacity grows with T and whose drops follow earlier tokens' loads) is recomputed.
#include "model/nn/incremental_forward.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>

#include "model/core/error.h"

namespace tscope {

namespace {

// The options of the whole-sequence capture (maps, residuals, lens). The per-row capture
// (components, internals, their rows) may differ: rows the kept trace holds under other per-row
// options run again on their own (rowAgain), so the Inside panel's layer, its query row and the
// switch to or from it never rerun the whole prompt.
// The focus layer is not among them: it orders the plan of a new prompt, and moving it keeps the
// layers captured (a layer left out is then computed alone: Transformer::layerMaps).
bool sameSequenceOptions(const TraceOptions& a, const TraceOptions& b) {
  return a.attention == b.attention && a.residuals == b.residuals && a.logitLensTopK == b.logitLensTopK &&
         a.logitLensLastOnly == b.logitLensLastOnly && a.layers == b.layers && a.memoryCapBytes == b.memoryCapBytes && a.inputLayers == b.inputLayers;
}

// Whether rows kept under `a` hold what `b` asks of a row (not which rows: any row can be had).
bool sameRowOptions(const TraceOptions& a, const TraceOptions& b) { return a.components == b.components && a.internalLayers == b.internalLayers; }

// The positions whose per-row data a prompt of n tokens keeps under `options` (ascending).
std::vector<int> wantedRows(const TraceOptions& options, int n) {
  std::vector<int> rows;
  if (!options.components && options.internalLayers.empty()) return rows;
  if (options.componentRows.empty()) {
    rows.resize(n);
    std::iota(rows.begin(), rows.end(), 0);
    return rows;
  }
  for (int position : options.componentRows)
    if (position >= 0 && position < n) rows.push_back(position);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// out's per-row arrays (rowArrays) at `positions`, each row from the first of `sources` holding it
// (an array is kept when a source with rows has it).
void gatherRows(Trace& out, const std::vector<int>& positions, const std::vector<const Trace*>& sources) {
  out.rowPositions = positions;
  const size_t R = positions.size();
  for (const RowArray& a : rowArrays(out)) {
    std::vector<float>& dst = out.*a.member;
    dst.clear();
    const bool present = std::any_of(sources.begin(), sources.end(), [&](const Trace* s) { return s->R() > 0 && !(s->*a.member).empty(); });
    if (!present) continue;
    dst.resize(a.blocks * R * a.width);
    for (size_t i = 0; i < R; ++i) {
      const Trace* from = nullptr;
      int r = -1;
      for (const Trace* s : sources)
        if ((r = s->rowIndex(positions[i])) >= 0 && !(s->*a.member).empty()) {
          from = s;
          break;
        }
      if (!from) throw Error("incremental forward: no rows for position " + std::to_string(positions[i]));
      const std::vector<float>& src = from->*a.member;
      const size_t sourceRows = from->R();
      if (src.size() != a.blocks * sourceRows * a.width) throw Error("incremental forward: trace rows of an unexpected size");
      for (size_t b = 0; b < a.blocks; ++b) std::copy_n(src.begin() + (b * sourceRows + r) * a.width, a.width, dst.begin() + (b * R + i) * a.width);
    }
  }
}

// The capture plan of a forward over the whole prompt of `tokens` tokens.
Trace planFor(int tokens, const TraceOptions& options, const ModelConfig& config) {
  Trace plan;
  plan.T = plan.Tk = tokens;
  plan.H = config.n_head;
  plan.C = config.n_embd;
  plan.A = config.attnDim();
  planCapture(plan, options, config);
  return plan;
}

// `blocks` blocks of rows of `width` floats: the first `keep` rows of each block of `kept` (which
// has keptRows rows per block), then every row of the same block of `added` (addedRows per block).
template <typename Value>
std::vector<Value> mergeRows(const std::vector<Value>& kept, int keptRows, const std::vector<Value>& added, int addedRows, int keep, size_t blocks,
                             size_t width) {
  if (kept.size() != blocks * keptRows * width || added.size() != blocks * addedRows * width)
    throw Error("incremental forward: trace rows of an unexpected size");
  const size_t rows = keep + addedRows;
  std::vector<Value> out(blocks * rows * width);
  for (size_t b = 0; b < blocks; ++b) {
    auto to = out.begin() + b * rows * width;
    to = std::copy_n(kept.begin() + b * keptRows * width, keep * width, to);
    std::copy_n(added.begin() + b * addedRows * width, addedRows * width, to);
  }
  return out;
}

}  // namespace

IncrementalForward::IncrementalForward(Transformer& model) : model_(model), cache_(model.backend(), model.config()) {}

void IncrementalForward::reset() {
  ids_.clear();
  kept_ = Trace{};
  attention_.clear();
}

// Why the next run cannot reuse a prefix whatever the tokens ("" when it can).
std::string IncrementalForward::reuseBlocker(const TraceOptions& options, int tokens) const {
  const ModelConfig& config = model_.config();
  if (!config.causal) return "bidirectional attention: every token sees the edit";
  if (config.isEncoderDecoder()) return "an encoder-decoder's cross-attention maps are captured for the whole target";
  if (config.isMoe()) {
    const MoeRoutingParams& routing = model_.moeRouting();
    if (routing.expertChoice) return "expert-choice routing ranks the tokens of the whole sequence";
    if (routing.capacityFactor > 0) return "a capacity limit grows with the sequence and drops depend on earlier tokens' loads";
    if (routing != moe_) return "the routing knobs changed";
  }
  if (model_.hasAttentionVariant()) return "an attention variant runs over the whole sequence";
  if (config.attention_variant.variant == AttentionVariant::Lsh) return "LSH attention's chunks depend on every key of the sequence";
  if (!sameSequenceOptions(options, options_)) return "the trace options changed";
  if (!(model_.interventions() == interventions_)) return "the interventions changed";
  if (model_.whatIfs().has(WhatIfKind::NoCausalMask)) return "no causal mask: every token sees the edit";
  if (!(model_.whatIfs() == whatIfs_)) return "the what-ifs changed";
  TraceOptions keptFocus = options;
  keptFocus.focusLayer = options_.focusLayer;
  const Trace plan = planFor(tokens, keptFocus, config);
  if (plan.layers != kept_.layers || plan.inputLayers != kept_.inputLayers) return "the memory cap captures other layers at this length";
  return "";
}

int IncrementalForward::reusableTokens(std::span<const int> ids, const TraceOptions& options, std::string* whyNot) const {
  if (ids_.empty() || ids.empty()) return 0;
  if (std::string blocker = reuseBlocker(options, static_cast<int>(ids.size())); !blocker.empty()) {
    if (whyNot) *whyNot = std::move(blocker);
    return 0;
  }
  const auto firstDifference = std::mismatch(ids.begin(), ids.end(), ids_.begin(), ids_.end()).first;
  // At least the last token runs: its logits are the result.
  const int keep = std::min(static_cast<int>(firstDifference - ids.begin()), static_cast<int>(ids.size()) - 1);
  // Rows run again one token at a time cost a forward each: past a few, the whole prompt is cheaper.
  if (const size_t again = rowsToRunAgain(options, static_cast<int>(ids.size()), keep).size(); again > kMaxRowsRunAgain) {
    if (whyNot) *whyNot = std::to_string(again) + " rows before the reused prefix would have to run again one by one";
    return 0;
  }
  return keep;
}

// The wanted rows before `keep` that the kept trace cannot give: it lacks them, or it was
// captured with other per-row options.
std::vector<int> IncrementalForward::rowsToRunAgain(const TraceOptions& options, int tokens, int keep) const {
  const bool keptRowsFit = sameRowOptions(options, options_);
  std::vector<int> again;
  for (int position : wantedRows(options, tokens))
    if (position < keep && (!keptRowsFit || kept_.rowIndex(position) < 0)) again.push_back(position);
  return again;
}

PromptForward IncrementalForward::run(std::span<const int> ids, const TraceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  if (ids.empty()) throw Error("forward: no tokens");
  const int keep = reusableTokens(ids, options);
  TraceOptions suffixOptions = options;
  if (keep > 0) {
    // The layers the whole prompt captures (checked equal to the kept ones), uncapped for the rows.
    suffixOptions.layers = kept_.layers.empty() ? std::vector<int>{-1} : kept_.layers;
    suffixOptions.inputLayers = kept_.inputLayers;
    suffixOptions.memoryCapBytes = SIZE_MAX;
  }
  // From here on only the shared prefix is trusted, whatever happens below.
  cache_.truncate(std::min(keep, cache_.length()));
  ids_.resize(keep);
  Trace suffix;
  std::vector<float> logits;
  model_.forward(ids.subspan(keep), cache_, logits, false, &suffix, suffixOptions);

  PromptForward result;
  if (keep > 0) {
    result = merge(ids, keep, suffix);
    if (!attention_.empty()) attention_.keepRows(keep);  // no maps when the options capture none
    // Per-row data: the new rows from the suffix, older rows from the kept trace when it was
    // captured with the same per-row options, and a row asked for now that neither holds (the
    // Inside panel's query moved back, its layer changed, the panel was just opened) run again on
    // its own.
    std::vector<Trace> again;
    for (int position : rowsToRunAgain(options, static_cast<int>(ids.size()), keep)) again.push_back(rowAgain(ids, position, options));
    std::vector<const Trace*> sources{&suffix};
    for (const Trace& t : again) sources.push_back(&t);
    if (sameRowOptions(options, options_)) sources.push_back(&kept_);
    const std::vector<int> rows = wantedRows(options, static_cast<int>(ids.size()));
    gatherRows(result.trace, rows, sources);
  } else {
    attention_.clear();
  }
  if (!suffix.attn.empty()) attention_.append(suffix);  // moves the new rows' maps
  if (keep == 0) result.trace = std::move(suffix);
  result.attention = attention_;
  result.logits = std::move(logits);
  result.reusedTokens = keep;
  result.trace.forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  kept_ = result.trace;
  ids_.assign(ids.begin(), ids.end());
  const int planFocus = options_.focusLayer;  // what the kept plan was made around
  options_ = options;
  if (keep > 0) options_.focusLayer = planFocus;
  if (model_.config().isMoe()) moe_ = model_.moeRouting();
  interventions_ = model_.interventions();
  whatIfs_ = model_.whatIfs();
  return result;
}

PromptForward IncrementalForward::runImage(std::span<const float> pixels, const TraceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  cache_.truncate(0);
  ids_.clear();  // nothing of this run is reused: the next one runs whole
  kept_ = Trace{};
  attention_.clear();
  PromptForward result;
  model_.forwardImage(pixels, cache_, result.logits, &result.trace, options);
  result.logits.resize(model_.config().vocab_size);  // [CLS]'s row: the classes
  if (!result.trace.attn.empty()) attention_.append(result.trace);
  result.attention = attention_;
  result.trace.forwardMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  options_ = options;
  interventions_ = model_.interventions();
  whatIfs_ = model_.whatIfs();
  return result;
}

// The per-row data (components, internals) of the cached row `position`: the token run again as a
// one-token step over the cache rows before it. Its key and value rows are put back as they were,
// so the cache stays bit-identical to a forward over the whole prompt (the rerun's rows may differ
// from the batched ones in the last bits: a one-row matmul sums in another order).
Trace IncrementalForward::rowAgain(std::span<const int> ids, int position, const TraceOptions& options) {
  Backend& backend = model_.backend();
  const int L = model_.config().n_layer, width = model_.config().kvHeads() * model_.config().headDim(), length = cache_.length();
  std::vector<float> saved((size_t)2 * L * width);
  for (int l = 0; l < L; ++l) {
    backend.download(saved.data() + (size_t)2 * l * width, cache_.keys(l) + (size_t)position * width, width);
    backend.download(saved.data() + (size_t)(2 * l + 1) * width, cache_.values(l) + (size_t)position * width, width);
  }
  auto restore = [&] {
    for (int l = 0; l < L; ++l) {
      backend.upload(cache_.keys(l) + (size_t)position * width, saved.data() + (size_t)2 * l * width, width);
      backend.upload(cache_.values(l) + (size_t)position * width, saved.data() + (size_t)(2 * l + 1) * width, width);
    }
    cache_.advance(length - cache_.length());
  };
  TraceOptions rowOptions = TraceOptions::nothing();
  rowOptions.components = options.components;
  rowOptions.internalLayers = options.internalLayers;
  rowOptions.componentRows = {position};
  Trace row;
  std::vector<float> logits;
  cache_.truncate(position);
  try {
    model_.forward(ids.subspan(position, 1), cache_, logits, false, &row, rowOptions);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return row;
}

// The whole prompt's trace from the kept rows [0, keep) and the suffix forward's rows.
PromptForward IncrementalForward::merge(std::span<const int> ids, int keep, Trace& suffix) const {
  const ModelConfig& config = model_.config();
  const Trace& old = kept_;
  const int n = static_cast<int>(ids.size()), added = suffix.T, L = config.n_layer;
  PromptForward result;
  Trace& t = result.trace;
  const Trace plan = planFor(n, options_, config);
  t.T = t.Tk = n;
  t.pos0 = 0;
  t.L = suffix.L;
  t.H = suffix.H;
  t.C = suffix.C;
  t.A = suffix.A;
  t.V = suffix.V;
  t.tokens.assign(ids.begin(), ids.end());
  t.layers = plan.layers;
  t.inputLayers = plan.inputLayers;
  t.truncated = plan.truncated;
  t.note = plan.note;
  const size_t Lc = t.layers.size();
  t.QKV = suffix.QKV;
  if (!t.inputLayers.empty()) t.attnInputs = mergeRows(old.attnInputs, old.T, suffix.attnInputs, added, keep, t.inputLayers.size(), (size_t)t.QKV);
  if (!suffix.residAfterAttn.empty()) {
    t.residAfterAttn = mergeRows(old.residAfterAttn, old.T, suffix.residAfterAttn, added, keep, Lc, t.C);
    t.residAfterMlp = mergeRows(old.residAfterMlp, old.T, suffix.residAfterMlp, added, keep, Lc, t.C);
  }
  t.residNorm = mergeRows(old.residNorm, old.T, suffix.residNorm, added, keep, L + 1, 1);
  t.lensK = suffix.lensK;
  if (t.lensK > 0 && options_.logitLensLastOnly) {
    t.lensPositions = {n - 1};
    t.lensIds = suffix.lensIds;
    t.lensProbs = suffix.lensProbs;
  } else if (t.lensK > 0) {
    t.lensPositions.resize(n);
    std::iota(t.lensPositions.begin(), t.lensPositions.end(), 0);
    t.lensIds = mergeRows(old.lensIds, old.T, suffix.lensIds, added, keep, L, t.lensK);
    t.lensProbs = mergeRows(old.lensProbs, old.T, suffix.lensProbs, added, keep, L, t.lensK);
  }
  t.logits = suffix.logits;
  // Components and internals: the per-row arrays are gathered by run(); k and v cover every key already.
  t.D = suffix.D;
  t.Hkv = suffix.Hkv;
  t.F = suffix.F;
  t.internalLayers = suffix.internalLayers;
  t.k = std::move(suffix.k);
  t.v = std::move(suffix.v);
  // Token-choice routing without a capacity limit is per token: routing the merged router logits
  // gives the kept tokens' assignments again and the whole-sequence load, f_i, P_i and aux loss.
  t.moe.resize(L);
  for (int l = 0; l < L; ++l) {
    const MoeRouting& addedRouting = suffix.moe[l];
    if (addedRouting.tokens == 0) continue;  // a dense layer
    const int E = addedRouting.experts;
    std::vector<float> routerLogits(old.moe[l].routerLogits.begin(), old.moe[l].routerLogits.begin() + (size_t)keep * E);
    routerLogits.insert(routerLogits.end(), addedRouting.routerLogits.begin(), addedRouting.routerLogits.end());
    t.moe[l] = routeTokens(routerLogits, n, model_.moeRouting());
    if (!addedRouting.sharedExpertGates.empty() && old.moe[l].sharedExpertGates.size() >= (size_t)keep) {
      // The shared expert's gates: the kept rows', then the new ones.
      t.moe[l].sharedExpertGates.assign(old.moe[l].sharedExpertGates.begin(), old.moe[l].sharedExpertGates.begin() + keep);
      t.moe[l].sharedExpertGates.insert(t.moe[l].sharedExpertGates.end(), addedRouting.sharedExpertGates.begin(),
                                        addedRouting.sharedExpertGates.end());
    }
    t.moeAuxLoss += t.moe[l].auxLoss;
  }
  return result;
}

}  // namespace tscope

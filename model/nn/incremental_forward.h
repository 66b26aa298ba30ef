// The forward of an edited prompt that reuses the work of its unchanged token prefix: it keeps the
// KV cache and the trace rows of the longest prefix the new token ids share with the last computed
// ones, runs only the rest, and merges the rows, so the result is what a forward over the whole
// prompt gives (tests/test_prefix_reuse.cpp). It recomputes from scratch where reuse would not be
// exact: bidirectional attention, MoE routing that depends on the whole sequence, other capture
// options for the whole sequence (maps, residuals, lens). Other per-row options (components,
// internals, their rows: the Inside panel) reuse the prefix and run the rows they need again.
#pragma once
#include <span>
#include <vector>

#include "model/nn/kv_cache.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"

namespace tscope {

struct PromptForward {
  Trace trace;                // the whole prompt: T = Tk = tokens, pos0 = 0; attn and scores empty (see attention)
  AttentionRows attention;    // attention maps of trace.layers (empty unless options.attention), shared with earlier results
  std::vector<float> logits;  // (V) at the last position
  int reusedTokens = 0;       // prefix taken from the previous run (0 = computed from scratch)
};

class IncrementalForward {
 public:
  // Keeps a reference to `model`, which must outlive this object; one KV cache of the whole context.
  explicit IncrementalForward(Transformer& model);

  // Runs the whole prompt `ids` with `options`, reusing what the last run computed where exact.
  // Throws Cancelled (from the model's layer callback) or tscope::Error; either way it keeps a
  // consistent state: the prefix both the old and the new prompt share stays reusable.
  PromptForward run(std::span<const int> ids, const TraceOptions& options);
  // Image models: the whole image (Transformer::forwardImage; an image shares no prefix with the last
  // one). logits are the classes' at [CLS] (V); the next run() or runImage() reuses nothing.
  PromptForward runImage(std::span<const float> pixels, const TraceOptions& options);

  // Tokens run() would reuse for `ids` (0 = from scratch), and why not more when it is 0 by rule.
  int reusableTokens(std::span<const int> ids, const TraceOptions& options, std::string* whyNot = nullptr) const;
  void reset();  // forget everything (the next run computes from scratch)

 private:
  std::string reuseBlocker(const TraceOptions& options, int tokens) const;
  std::vector<int> rowsToRunAgain(const TraceOptions& options, int tokens, int keep) const;
  static constexpr size_t kMaxRowsRunAgain = 8;  // more rows to run again alone: run the whole prompt
  PromptForward merge(std::span<const int> ids, int keep, Trace& suffix) const;
  Trace rowAgain(std::span<const int> ids, int position, const TraceOptions& options);

  Transformer& model_;
  KVCache cache_;                // rows [0, ids_.size()) hold ids_ (rows past may be stale)
  std::vector<int> ids_;         // the tokens whose cache rows and trace rows are valid
  TraceOptions options_;         // what the kept trace was captured with
  MoeRoutingParams moe_;         // the routing it was computed with (MoE models)
  Interventions interventions_;  // the interventions it was computed with
  WhatIfs whatIfs_;              // the what-ifs it was computed with
  Trace kept_;                   // the last result (rows from ids_.size() on are stale); attn, scores empty
  AttentionRows attention_;      // its attention maps
};

}  // namespace tscope

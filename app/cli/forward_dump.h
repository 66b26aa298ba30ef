// tscope-cli forward --dump DIR: the trace of one forward as NumPy .npy arrays and JSON files.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/io/model_io.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"

namespace tscope::cli {

// What the trace must capture for writeForwardDump: attention, residuals, the components and
// every layer's internals; no logit lens.
TraceOptions dumpTraceOptions(const ModelConfig& config);

// Writes into `dir` (created if needed; every file atomically) and returns how many files:
//   logits.npy (T, V), ids.npy (T) int32; per captured layer l: attn_<l>.npy (H, T, T),
//   resid_<l>.npy (T, C); per internal layer l: q_<l>.npy (H, T, D), k_<l>.npy and v_<l>.npy
//   (Hkv, T, D), head_out_<l>.npy (H, T, D), attn_out_<l>.npy (T, C), mlp_act_<l>.npy (T, F)
//   (dense MLPs only); moe_<l>.json per mixture-of-experts layer; dla.json, the direct logit
//   attribution at the last position toward its top token ({"error": ...} on a post-norm model).
// `logits` (T, V) are the forward's for every position. With `variant` (forward --attention-variant),
// per internal layer l also approx_attn_<l>.npy (H, T, T), the variant's effective map
// (attentionVariantReference on head h's q and its kv head h / (H / Hkv)'s k and v, causal = the
// model's config.causal), and approx_error_<l>.npy (H, T), each row's L1 distance from exact
// softmax(q k^T / sqrt D) (compareWithExact; the model's own maps when it has no sliding window),
// and attention_variant.json: the variant, its knobs, and per layer and head the mean row error
// and the output's relative error.
// A layer whose maps the memory cap left out of the trace gets its attn_<l>.npy from
// `transformer`'s layerMaps (the trace keeps its attention inputs) and no resid_<l>.npy; `missing`
// gets one line naming the layers written without their residuals or maps ("" when none).
size_t writeForwardDump(const std::string& dir, const LoadedModel& model, const Trace& trace, const std::vector<float>& logits,
                        const std::vector<int>& ids, Transformer& transformer, std::string& missing, const AttentionVariantParams* variant = nullptr,
                        const EncoderTrace* encoder = nullptr);

}  // namespace tscope::cli

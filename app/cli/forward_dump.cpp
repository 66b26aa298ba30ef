// forward --dump: every array the trace holds written as .npy, MoE routing and the direct logit
// attribution as JSON. head_out is Trace::headMix (T, H D) regrouped per head into (H, T, D). With an
// attention variant, its effective maps and their distance from exact attention, per layer.
#include "app/cli/forward_dump.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/variant_flags.h"
#include "model/core/error.h"
#include "model/io/npy.h"
#include "model/nn/trace_views.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope::cli {
namespace {

// Counts the files it writes into one folder.
class DumpWriter {
 public:
  explicit DumpWriter(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error(dir_.string() + ": cannot create directory (" + ec.message() + ")");
  }
  template <typename Scalar>
  void array(const std::string& name, const Scalar* data, const std::vector<int64_t>& shape) {
    writeNpy((dir_ / name).string(), data, shape);
    ++files_;
  }
  void object(const std::string& name, const json& content) {
    writeFileAtomically((dir_ / name).string(), content.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    ++files_;
  }
  size_t files() const { return files_; }

 private:
  fs::path dir_;
  size_t files_ = 0;
};

// (H, T, D) head h's columns h D .. h D + D - 1 of rows (T, C).
std::vector<float> perHead(const float* rows, int T, int H, int D) {
  std::vector<float> out(static_cast<size_t>(H) * T * D);
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t) std::copy_n(rows + (static_cast<size_t>(t) * H + h) * D, D, out.data() + (static_cast<size_t>(h) * T + t) * D);
  return out;
}

json moeJson(int layer, const MoeRouting& routing) {
  json assignments = json::array();
  for (const auto& a : routing.assignments)
    assignments.push_back({{"token", a.token}, {"expert", a.expert}, {"gate", a.gate}, {"rank", a.rank}, {"dropped", a.dropped}});
  json out = {{"layer", layer},
              {"tokens", routing.tokens},
              {"experts", routing.experts},
              {"top_k", routing.topK},
              {"capacity", routing.capacity},
              {"router_logits", routing.routerLogits},
              {"router_probs", routing.routerProbs},
              {"assignments", assignments},
              {"dropped_tokens", routing.droppedTokens},
              {"load", routing.load},
              {"fraction", routing.fraction},
              {"mean_prob", routing.meanProb},
              {"aux_loss", routing.auxLoss}};
  if (!routing.sharedExpertGates.empty()) out["shared_expert_gates"] = routing.sharedExpertGates;  // (T) Qwen2-MoE-style models
  return out;
}

// The attribution at the last position toward its top token; on a post-norm model (no frozen
// final norm to attribute through) or one with an MLM head (not linear) {"error": why}.
json dlaJson(const LoadedModel& model, const Trace& trace, const std::vector<float>& logits) {
  const ModelConfig& c = model.weights.config();
  const int position = trace.T - 1, V = c.vocab_size;
  const std::vector<float> last(logits.end() - V, logits.end());
  const int token = topTokenIds(last, 1).front();
  LogitAttribution parts;
  try {
    parts = directLogitAttribution(trace, model.weights, position, token);
  } catch (const Error& e) {
    if (logitAttributionProblem(c).empty()) throw;
    return {{"error", e.what()}};
  }
  auto perLayer = [&](const std::vector<float>& all) {  // (L, H) as L lists of H
    json rows = json::array();
    for (int l = 0; l < c.n_layer; ++l) rows.push_back(std::vector<float>(all.begin() + l * c.n_head, all.begin() + (l + 1) * c.n_head));
    return rows;
  };
  json out = {{"position", position},
              {"token", token},
              {"token_text", tokenString(model, token)},
              {"logit", parts.logit},
              {"embedding", parts.embedding},
              {"heads", perLayer(parts.heads)},
              {"attn_bias", parts.attnBias},
              {"mlp", parts.mlp},
              {"norm_bias", parts.normBias},
              {"output_bias", parts.outputBias},
              {"sum", parts.sum()}};
  if (c.isEncoderDecoder()) {  // the decoder's cross-attention heads and bias
    out["cross_heads"] = perLayer(parts.crossHeads);
    out["cross_bias"] = parts.crossBias;
  }
  return out;
}

// The variant on every internal layer's heads: approx_attn_<l>.npy (H, T, T) and
// approx_error_<l>.npy (H, T) into `out`; returns attention_variant.json's content.
json variantDump(DumpWriter& out, const ModelConfig& c, const Trace& trace, const AttentionVariantParams& params) {
  const int T = trace.T, H = trace.H, Hkv = trace.Hkv, D = trace.D, Tk = trace.Tk;
  if (Tk != T || trace.q.size() != trace.internalLayers.size() * H * T * D)
    throw Error("the attention-variant dump needs every query row over T = Tk keys (got T " + std::to_string(T) + ", Tk " + std::to_string(Tk) + ")");
  json layers = json::array();
  std::vector<float> maps(static_cast<size_t>(H) * T * T), errors(static_cast<size_t>(H) * T);  // (H, T, T) (H, T)
  for (size_t li = 0; li < trace.internalLayers.size(); ++li) {
    const std::string l = std::to_string(trace.internalLayers[li]);
    json heads = json::array();
    for (int h = 0; h < H; ++h) {
      const size_t kv = (li * Hkv + h / (H / Hkv)) * static_cast<size_t>(T) * D;
      const HeadQkv head{trace.q.data() + (li * H + h) * static_cast<size_t>(T) * D, trace.k.data() + kv, trace.v.data() + kv, T, D, c.causal};
      const VariantResult result = attentionVariantReference(head, params);
      const VariantError error = compareWithExact(head, result);
      std::copy(result.map.begin(), result.map.end(), maps.begin() + static_cast<ptrdiff_t>(h) * T * T);
      std::copy(error.rowError.begin(), error.rowError.end(), errors.begin() + static_cast<ptrdiff_t>(h) * T);
      heads.push_back({{"head", h}, {"mean_row_error", error.meanRowError}, {"out_rel_error", error.outRelError}});
    }
    out.array("approx_attn_" + l + ".npy", maps.data(), {H, T, T});
    out.array("approx_error_" + l + ".npy", errors.data(), {H, T});
    layers.push_back({{"layer", trace.internalLayers[li]}, {"heads", heads}});
  }
  return {{"variant", attentionVariantName(params.variant)},
          {"knobs", attentionVariantKnobsJson(params)},
          {"causal", c.causal},
          {"tokens", T},
          {"exact", "softmax(q k^T / sqrt D) over the keys the causal flag allows (no sliding window)"},
          {"layers", layers}};
}

}  // namespace

TraceOptions dumpTraceOptions(const ModelConfig& config) {
  TraceOptions options;
  options.logitLensTopK = 0;
  options.memoryCapBytes = size_t(8) << 30;
  options.components = true;
  for (int l = 0; l < config.n_layer; ++l) options.internalLayers.push_back(l);
  return options;
}

size_t writeForwardDump(const std::string& dir, const LoadedModel& model, const Trace& trace, const std::vector<float>& logits,
                        const std::vector<int>& ids, Transformer& transformer, std::string& missing, const AttentionVariantParams* variant,
                        const EncoderTrace* encoder) {
  const ModelConfig& c = model.weights.config();
  const int T = static_cast<int>(ids.size()), V = c.vocab_size, H = c.n_head, C = c.n_embd;
  DumpWriter out(dir);
  out.array("logits.npy", logits.data(), {T, V});
  const std::vector<int32_t> ids32(ids.begin(), ids.end());
  out.array("ids.npy", ids32.data(), {T});
  for (size_t li = 0; li < trace.layers.size(); ++li) {
    const std::string l = std::to_string(trace.layers[li]);
    out.array("attn_" + l + ".npy", trace.attnMap(static_cast<int>(li), 0), {H, T, T});
    out.array("resid_" + l + ".npy", trace.residAfterMlp.data() + li * T * C, {T, C});
    if (!trace.cross.empty()) out.array("cross_" + l + ".npy", trace.crossMap(static_cast<int>(li), 0), {H, T, trace.S});
  }
  // Layers past the memory cap: their maps one layer at a time from the kept attention inputs.
  std::vector<int> noMaps, noResiduals;
  for (int layer = 0; layer < c.n_layer; ++layer) {
    if (trace.capturedIndex(layer)) continue;
    noResiduals.push_back(layer);
    if (!trace.inputIndex(layer)) {
      noMaps.push_back(layer);
      continue;
    }
    std::vector<float> probs, scores;
    transformer.layerMaps(trace, layer, probs, scores);
    out.array("attn_" + std::to_string(layer) + ".npy", probs.data(), {H, T, T});
  }
  auto list = [](const std::vector<int>& layers) {
    std::string text;
    for (int l : layers) text += (text.empty() ? "" : ",") + std::to_string(l);
    return text;
  };
  missing.clear();
  if (!noResiduals.empty()) missing = "memory cap (" + trace.note + "): no resid_<l>.npy for layers " + list(noResiduals);
  if (!noMaps.empty()) missing += "; no attn_<l>.npy for layers " + list(noMaps) + " (one layer's maps exceed the cap)";
  if (encoder) {
    const int S = encoder->S;
    const std::vector<int32_t> source32(encoder->tokens.begin(), encoder->tokens.end());
    out.array("source_ids.npy", source32.data(), {S});
    for (int l = 0; l < encoder->L; ++l) out.array("enc_attn_" + std::to_string(l) + ".npy", encoder->attnMap(l, 0), {H, S, S});
  }
  const int D = trace.D, Hkv = trace.Hkv, Tk = trace.Tk, F = trace.F;
  for (size_t li = 0; li < trace.internalLayers.size(); ++li) {
    const int layer = trace.internalLayers[li];
    const std::string l = std::to_string(layer);
    const size_t kvSize = static_cast<size_t>(Hkv) * Tk * D;
    out.array("q_" + l + ".npy", trace.q.data() + li * H * T * D, {H, T, D});
    out.array("k_" + l + ".npy", trace.k.data() + li * kvSize, {Hkv, Tk, D});
    out.array("v_" + l + ".npy", trace.v.data() + li * kvSize, {Hkv, Tk, D});
    if (!trace.headMix.empty())
      out.array("head_out_" + l + ".npy", perHead(trace.headMix.data() + static_cast<size_t>(layer) * T * H * D, T, H, D).data(), {H, T, D});
    out.array("attn_out_" + l + ".npy", trace.attnOut.data() + li * T * C, {T, C});
    if (!trace.mlpPost.empty()) out.array("mlp_act_" + l + ".npy", trace.mlpPost.data() + li * T * F, {T, F});
  }
  for (int l = 0; l < static_cast<int>(trace.moe.size()); ++l)
    if (trace.moe[l].experts > 0) out.object("moe_" + std::to_string(l) + ".json", moeJson(l, trace.moe[l]));
  // (The attribution has no cross-attention parts yet: encoder-decoder models get none.)
  if (!trace.embedded.empty()) out.object("dla.json", dlaJson(model, trace, logits));
  if (variant != nullptr) out.object("attention_variant.json", variantDump(out, c, trace, *variant));
  return out.files();
}

}  // namespace tscope::cli

// The two-architecture table (architecture_rows.h).
#include "model/theory/architecture_rows.h"

#include <nlohmann/json.hpp>

#include "model/core/units.h"
#include "model/theory/cost.h"

namespace tscope {

namespace {

// 124439808 -> "124,439,808" (exact: the table is for telling two counts apart)
std::string grouped(double value) {
  std::string digits = std::to_string(static_cast<long long>(value + 0.5));
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

std::string family(const ModelConfig& c) {
  if (c.isEncoderDecoder()) return "encoder-decoder (T5)";
  if (c.masked_lm || !c.causal) return "encoder-only (BERT)";
  return "decoder-only (GPT)";
}

std::string attention(const ModelConfig& c) {
  const int kv = c.kvHeads();
  const std::string heads = std::to_string(c.n_head) + " heads of " + std::to_string(c.headDim());
  if (kv == c.n_head) return "MHA, " + heads;
  if (kv == 1) return "MQA, " + heads + " over 1 KV head";
  return "GQA, " + heads + " over " + std::to_string(kv) + " KV heads";
}

std::string feedForward(const ModelConfig& c, const nlohmann::json& j) {
  if (!c.hasFeedForward()) return "none (attention only)";
  const std::string activation = j.value("activation_function", std::string("?"));
  if (c.isMoe()) return std::to_string(c.n_experts) + " experts, top " + std::to_string(c.moe_top_k) + " (" + activation + ")";
  return "dense, d_ff " + std::to_string(c.dFF()) + " (" + activation + ")";
}

}  // namespace

std::vector<ArchitectureRow> architectureRows(const ModelConfig& left, const ModelConfig& right, int leftTokens, int rightTokens) {
  const nlohmann::json jl = configToJson(left), jr = configToJson(right);
  std::vector<ArchitectureRow> rows;
  auto add = [&rows](std::string name, std::string l, std::string r) {
    const bool differs = l != r;
    rows.push_back({std::move(name), std::move(l), std::move(r), differs});
  };
  add("family", family(left), family(right));
  add("layers x width", std::to_string(left.n_layer) + " x " + std::to_string(left.n_embd),
      std::to_string(right.n_layer) + " x " + std::to_string(right.n_embd));
  add("norm", std::string(left.pre_norm ? "pre-" : "post-") + jl.value("norm", std::string("?")),
      std::string(right.pre_norm ? "pre-" : "post-") + jr.value("norm", std::string("?")));
  add("positions", jl.value("position_encoding", std::string("?")), jr.value("position_encoding", std::string("?")));
  add("attention", attention(left), attention(right));
  add("feed-forward", feedForward(left, jl), feedForward(right, jr));
  add("embeddings", left.tie_word_embeddings ? "tied" : "untied", right.tie_word_embeddings ? "tied" : "untied");
  add("vocabulary", grouped(left.vocab_size), grouped(right.vocab_size));
  const ParamCounts pl = countParameters(left), pr = countParameters(right);
  add("parameters", grouped((double)pl.total), grouped((double)pr.total));
  add("active per token", grouped((double)pl.active), grouped((double)pr.active));
  add("forward FLOPs / token at the prompt's length", grouped(flopsPerToken(left, leftTokens).forward),
      grouped(flopsPerToken(right, rightTokens).forward));
  add("KV cache at the prompt's length", formatBytes((double)kvCacheBytesPerToken(left) * leftTokens),
      formatBytes((double)kvCacheBytesPerToken(right) * rightTokens));
  return rows;
}

}  // namespace tscope

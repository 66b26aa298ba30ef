// Parameter layout and the weight arena: one allocation, named views into it.
#include "model/weights.h"

#include <cmath>
#include <random>

#include "model/error.h"
#include "model/sampling.h"

namespace tscope {

size_t ParamSpec::numel() const {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::vector<ParamSpec> parameterLayout(const ModelConfig& c) {
  const int64_t C = c.n_embd, F = c.dFF(), V = c.vocab_size, P = c.n_positions, QKV = c.qkvDim(), E = c.n_experts;
  std::vector<ParamSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape) { specs.push_back({std::move(name), std::move(shape), 0}); };
  auto addNorm = [&](const std::string& name) {
    add(name + ".weight", {C});
    if (c.hasNormBias()) add(name + ".bias", {C});
  };
  auto addFeedForward = [&](const std::string& prefix) {
    add(prefix + "c_fc.weight", {C, F});
    add(prefix + "c_fc.bias", {F});
    if (c.activation == Activation::SwiGlu) {
      add(prefix + "c_gate.weight", {C, F});
      add(prefix + "c_gate.bias", {F});
    }
    add(prefix + "c_proj.weight", {F, C});
    add(prefix + "c_proj.bias", {C});
  };
  add("wte.weight", {V, C});
  if (c.hasLearnedPositions()) add("wpe.weight", {P, C});
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    addNorm(p + "ln_1");
    add(p + "attn.c_attn.weight", {C, QKV});
    add(p + "attn.c_attn.bias", {QKV});
    add(p + "attn.c_proj.weight", {C, C});
    add(p + "attn.c_proj.bias", {C});
    if (!c.hasFeedForward()) continue;
    addNorm(p + "ln_2");
    if (c.isMoe()) {
      add(p + "mlp.router.weight", {C, E});
      for (int e = 0; e < E; ++e) addFeedForward(p + "mlp.experts." + std::to_string(e) + ".");
    } else {
      addFeedForward(p + "mlp.");
    }
  }
  if (c.hasFinalNorm()) addNorm("ln_f");
  if (!c.tie_word_embeddings) add("lm_head.weight", {V, C});
  size_t offset = 0;
  for (auto& s : specs) {
    s.offset = offset;
    // Keep every tensor 64-byte aligned inside the arena for vector loads.
    offset += (s.numel() + 15) / 16 * 16;
  }
  return specs;
}

Weights::Weights(const ModelConfig& config) : config_(config), layout_(parameterLayout(config)) {
  if (auto msg = validateConfig(config); !msg.empty()) throw Error("invalid config: " + msg);
  const auto& last = layout_.back();
  arena_.assign(last.offset + (last.numel() + 15) / 16 * 16, 0.0f);
  for (size_t i = 0; i < layout_.size(); ++i) index_[layout_[i].name] = i;
  bindPointers();
}

float* Weights::param(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("unknown parameter '" + name + "'");
  return arena_.data() + layout_[it->second].offset;
}

const float* Weights::param(const std::string& name) const { return const_cast<Weights*>(this)->param(name); }

void Weights::bindPointers() {
  auto optional = [this](const std::string& name) { return has(name) ? param(name) : nullptr; };
  auto bindFeedForward = [&](const std::string& prefix) {
    FeedForwardWeights f;
    f.fcWeight = param(prefix + "c_fc.weight");
    f.fcBias = param(prefix + "c_fc.bias");
    f.gateWeight = optional(prefix + "c_gate.weight");
    f.gateBias = optional(prefix + "c_gate.bias");
    f.projWeight = param(prefix + "c_proj.weight");
    f.projBias = param(prefix + "c_proj.bias");
    return f;
  };
  wte = param("wte.weight");
  wpe = optional("wpe.weight");
  layers.assign(config_.n_layer, LayerWeights{});
  for (int l = 0; l < config_.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    auto& w = layers[l];
    w.ln1Weight = param(p + "ln_1.weight");
    w.ln1Bias = optional(p + "ln_1.bias");
    w.qkvWeight = param(p + "attn.c_attn.weight");
    w.qkvBias = param(p + "attn.c_attn.bias");
    w.attnProjWeight = param(p + "attn.c_proj.weight");
    w.attnProjBias = param(p + "attn.c_proj.bias");
    if (!config_.hasFeedForward()) continue;
    w.ln2Weight = param(p + "ln_2.weight");
    w.ln2Bias = optional(p + "ln_2.bias");
    if (config_.isMoe()) {
      w.routerWeight = param(p + "mlp.router.weight");
      for (int e = 0; e < config_.n_experts; ++e) w.experts.push_back(bindFeedForward(p + "mlp.experts." + std::to_string(e) + "."));
    } else {
      w.mlp = bindFeedForward(p + "mlp.");
    }
  }
  lnfWeight = optional("ln_f.weight");
  lnfBias = optional("ln_f.bias");
  lmHead = optional("lm_head.weight");
}

void Weights::initRandom(uint64_t seed, double std) {
  Rng rng(seed);
  // Box-Muller on our own PRNG so the weights are identical on every platform.
  auto normal = [&rng]() {
    double u1 = rng.uniform(), u2 = rng.uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  };
  const double projStd = std / std::sqrt(2.0 * config_.n_layer);
  for (const auto& s : layout_) {
    float* p = arena_.data() + s.offset;
    const bool isNormWeight = s.name.find("ln_") != std::string::npos && s.name.ends_with(".weight");
    const bool isBias = s.name.ends_with(".bias");
    const bool isProj = s.name.ends_with("c_proj.weight");
    for (size_t i = 0; i < s.numel(); ++i) {
      if (isNormWeight) p[i] = 1.0f;
      else if (isBias) p[i] = 0.0f;
      else p[i] = static_cast<float>(normal() * (isProj ? projStd : std));
    }
  }
}

}  // namespace tscope

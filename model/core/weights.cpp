// Parameter layout and the weight storage: an owned arena, or parameters read in place from a
// mapped file plus an arena for the converted ones; named read-only views into either.
#include "model/core/weights.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "model/core/error.h"
#include "model/core/rng.h"

namespace tscope {

size_t ParamSpec::numel() const {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::vector<ParamSpec> parameterLayout(const ModelConfig& c) {
  const int64_t C = c.n_embd, A = c.attnDim(), F = c.dFF(), V = c.vocab_size, P = c.n_positions, QKV = c.qkvDim(), E = c.n_experts;
  std::vector<ParamSpec> specs;
  auto add = [&](std::string name, std::vector<int64_t> shape) { specs.push_back({std::move(name), std::move(shape), 0}); };
  auto addNorm = [&](const std::string& name) {
    if (!c.hasNorm()) return;
    add(name + ".weight", {C});
    if (c.hasNormBias()) add(name + ".bias", {C});
  };
  auto addFeedForward = [&](const std::string& prefix, int64_t F) {
    add(prefix + "c_fc.weight", {C, F});
    add(prefix + "c_fc.bias", {F});
    if (c.activation == Activation::SwiGlu) {
      add(prefix + "c_gate.weight", {C, F});
      add(prefix + "c_gate.bias", {F});
    }
    add(prefix + "c_proj.weight", {F, C});
    add(prefix + "c_proj.bias", {C});
  };
  // One block under `p` ("h.3." or "enc.h.3."); a decoder layer of an encoder-decoder model also
  // has the cross-attention sublayer.
  auto addLayer = [&](const std::string& p, bool cross) {
    addNorm(p + "ln_1");
    add(p + "attn.c_attn.weight", {C, QKV});
    add(p + "attn.c_attn.bias", {QKV});
    if (c.qk_norm) {
      add(p + "attn.q_norm.weight", {c.headDim()});
      add(p + "attn.k_norm.weight", {c.headDim()});
    }
    add(p + "attn.c_proj.weight", {A, C});
    add(p + "attn.c_proj.bias", {C});
    if (cross) {
      const int64_t KV2 = 2 * (int64_t)c.kvDim();
      addNorm(p + "ln_x");
      add(p + "crossattn.c_q.weight", {C, A});
      add(p + "crossattn.c_q.bias", {A});
      add(p + "crossattn.c_kv.weight", {C, KV2});
      add(p + "crossattn.c_kv.bias", {KV2});
      add(p + "crossattn.c_proj.weight", {A, C});
      add(p + "crossattn.c_proj.bias", {C});
    }
    if (!c.hasFeedForward()) return;
    addNorm(p + "ln_2");
    if (c.isMoe()) {
      add(p + "mlp.router.weight", {C, E});
      for (int e = 0; e < E; ++e) addFeedForward(p + "mlp.experts." + std::to_string(e) + ".", F);
      if (c.hasSharedExpert()) {
        addFeedForward(p + "mlp.shared_expert.", c.moe_shared_expert_d_ff);
        add(p + "mlp.shared_expert_gate.weight", {C});
      }
    } else {
      addFeedForward(p + "mlp.", F);
    }
  };
  // An image model's token table is (2, C): [CLS] and the patch projection's bias (config.h).
  add("wte.weight", {c.isImage() ? 2 : V, C});
  if (c.isImage()) add("patch.weight", {c.patchDim(), C});
  if (c.hasLearnedPositions()) add("wpe.weight", {P, C});
  if (c.hasTokenTypes()) add("wtt.weight", {c.type_vocab_size, C});
  if (c.embedding_norm) addNorm("ln_emb");
  if (c.isEncoderDecoder()) {
    if (c.hasLearnedPositions()) add("enc.wpe.weight", {P, C});
    for (int l = 0; l < c.n_encoder_layer; ++l) addLayer("enc.h." + std::to_string(l) + ".", false);
    if (c.hasFinalNorm()) addNorm("enc.ln_f");
  }
  for (int l = 0; l < c.n_layer; ++l) addLayer("h." + std::to_string(l) + ".", c.isEncoderDecoder());
  if (c.hasFinalNorm()) addNorm("ln_f");
  if (c.mlm_head) {
    add("mlm.dense.weight", {C, C});
    add("mlm.dense.bias", {C});
    addNorm("mlm.ln_head");
    add("mlm.bias", {V});
  }
  if (!c.tie_word_embeddings) add("lm_head.weight", {V, C});
  if (c.isImage()) add("lm_head.bias", {V});  // the classifier's bias
  size_t offset = 0;
  for (auto& s : specs) {
    s.offset = offset;
    // Keep every tensor 64-byte aligned inside the arena for vector loads.
    offset += (s.numel() + 15) / 16 * 16;
  }
  return specs;
}

const float* floatLayout(const float* weight, const PackedMatrix& half, std::vector<float>& scratch) {
  if (!half) return weight;
  scratch.resize((size_t)half.rows * (size_t)half.cols);
  half.toLayout(scratch.data());
  return scratch.data();
}

namespace {
constexpr size_t kInPlace = static_cast<size_t>(-1);
size_t roundedToCacheLine(size_t floats) { return (floats + 15) / 16 * 16; }
}  // namespace

void Weights::indexLayout(const ModelConfig& config) {
  if (auto msg = validateConfig(config); !msg.empty()) throw Error("invalid config: " + msg);
  config_ = config;
  layout_ = parameterLayout(config);
  for (size_t i = 0; i < layout_.size(); ++i) index_[layout_[i].name] = i;
}

Weights::Weights(const ModelConfig& config) {
  indexLayout(config);
  arena_.assign(totalFloats(), 0.0f);
  for (const auto& spec : layout_) arenaOffsets_.push_back(spec.offset);
  bindPointers();
}

Weights::Weights(const ModelConfig& config, std::shared_ptr<const MappedFile> mapping, const std::vector<const float*>& inPlace)
    : mapping_(std::move(mapping)) {
  indexLayout(config);
  if (inPlace.size() != layout_.size()) throw Error("loaded weights: one in-place pointer per parameter expected");
  // The converted parameters are packed in layout order with the layout's 64-byte rounding, so
  // when none is read in place the arena is exactly the contiguous image.
  size_t owned = 0;
  for (size_t i = 0; i < layout_.size(); ++i) {
    arenaOffsets_.push_back(inPlace[i] ? kInPlace : owned);
    if (!inPlace[i]) owned += roundedToCacheLine(layout_[i].numel());
  }
  arena_.assign(owned, 0.0f);
  if (std::count(arenaOffsets_.begin(), arenaOffsets_.end(), kInPlace) == 0) mapping_.reset();
  tensors_ = inPlace;
  bindPointers();
}

Weights::Weights(const ModelConfig& config, const std::vector<PackedMatrix>& packed, std::shared_ptr<const void> packedStorage)
    : packed_(packed), packedStorage_(std::move(packedStorage)) {
  indexLayout(config);
  if (packed_.size() != layout_.size()) throw Error("loaded weights: one packed matrix (or none) per parameter expected");
  size_t owned = 0;
  for (size_t i = 0; i < layout_.size(); ++i) {
    const PackedMatrix& h = packed_[i];
    if (h && (size_t)h.rows * (size_t)h.cols != layout_[i].numel())
      throw Error("loaded weights: the packed matrix of '" + layout_[i].name + "' does not have the parameter's size");
    arenaOffsets_.push_back(h ? kInPlace : owned);
    if (!h) owned += roundedToCacheLine(layout_[i].numel());
  }
  arena_.assign(owned, 0.0f);
  if (std::none_of(packed_.begin(), packed_.end(), [](const PackedMatrix& h) { return bool(h); })) packedStorage_.reset();
  tensors_.assign(layout_.size(), nullptr);
  bindPointers();
}

void Weights::copyAsFloat(size_t i, float* out) const {
  if (i >= layout_.size()) throw Error("copyAsFloat: parameter index out of range");
  if (const PackedMatrix h = packed(i)) h.toLayout(out);
  else std::copy(tensors_[i], tensors_[i] + layout_[i].numel(), out);
}

size_t Weights::packedBytes() const {
  size_t bytes = 0;
  for (const PackedMatrix& h : packed_) bytes += h ? h.bytes() : 0;
  return bytes;
}

size_t Weights::heldBytes() const {
  size_t bytes = 0;
  for (size_t i = 0; i < layout_.size(); ++i) bytes += packed(i) ? packed(i).bytes() : layout_[i].numel() * sizeof(float);
  return bytes;
}

size_t Weights::totalFloats() const {
  if (layout_.empty()) return 0;
  return layout_.back().offset + roundedToCacheLine(layout_.back().numel());
}

size_t Weights::indexOf(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("unknown parameter '" + name + "'");
  return it->second;
}

const float* Weights::param(const std::string& name) const { return tensors_[indexOf(name)]; }

float* Weights::param(const std::string& name) {
  const size_t i = indexOf(name);
  makeWritable();
  return arena_.data() + arenaOffsets_[i];
}

float* Weights::convertedParam(const std::string& name) {
  const size_t i = indexOf(name);
  if (arenaOffsets_[i] == kInPlace) throw Error("parameter '" + name + "' is read in place from the mapped file");
  return arena_.data() + arenaOffsets_[i];
}

bool Weights::readsInPlace(const std::string& name) const { return arenaOffsets_[indexOf(name)] == kInPlace; }

float* Weights::arena() {
  makeWritable();
  return arena_.data();
}

const float* Weights::arena() const {
  if (mapping_) throw Error("these weights are read in place from a mapped file and have no single arena");
  if (packedStorage_) throw Error("these weights are held as 16-bit halves and have no single float32 arena");
  return arena_.data();
}

void Weights::makeWritable() {
  if (!mapping_ && !packedStorage_) return;
  AlignedFloats image(totalFloats(), 0.0f);
  for (size_t i = 0; i < layout_.size(); ++i) copyAsFloat(i, image.data() + layout_[i].offset);
  arena_ = std::move(image);
  for (size_t i = 0; i < layout_.size(); ++i) arenaOffsets_[i] = layout_[i].offset;
  mapping_.reset();
  packed_.clear();
  packedStorage_.reset();
  bindPointers();
}

// Points every parameter held in the owned arena at its place there (tensors_ already holds the
// in-place ones), then the named pointers at tensors_.
void Weights::bindPointers() {
  tensors_.resize(layout_.size(), nullptr);
  for (size_t i = 0; i < layout_.size(); ++i)
    if (arenaOffsets_[i] != kInPlace) tensors_[i] = arena_.data() + arenaOffsets_[i];
  *static_cast<ModelParams<const float>*>(this) = bindParams<const float>(config_, [this](const std::string& name) -> const float* {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : tensors_[it->second];
  });
  if (!packedStorage_) return;
  auto halfOf = [this](const std::string& name) {
    auto it = index_.find(name);
    return it == index_.end() ? PackedMatrix{} : packed_[it->second];
  };
  auto bindFeedForward = [&](FeedForwardParams<const float>& f, const std::string& prefix) {
    f.fcPacked = halfOf(prefix + "c_fc.weight");
    f.gatePacked = halfOf(prefix + "c_gate.weight");
    f.projPacked = halfOf(prefix + "c_proj.weight");
  };
  wtePacked = halfOf("wte.weight");
  lmHeadPacked = halfOf("lm_head.weight");
  for (int l = 0; l < config_.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    auto& w = layers[l];
    w.qkvPacked = halfOf(p + "attn.c_attn.weight");
    w.attnProjPacked = halfOf(p + "attn.c_proj.weight");
    w.routerPacked = halfOf(p + "mlp.router.weight");
    bindFeedForward(w.mlp, p + "mlp.");
    for (size_t e = 0; e < w.experts.size(); ++e) bindFeedForward(w.experts[e], p + "mlp.experts." + std::to_string(e) + ".");
    bindFeedForward(w.sharedExpert, p + "mlp.shared_expert.");
  }
}

void Weights::initRandom(uint64_t seed, double std) {
  Rng rng(seed);  // Rng::normal: the same weights on every platform
  const double projStd = std / std::sqrt(2.0 * config_.n_layer);
  float* arena = this->arena();
  for (const auto& s : layout_) {
    float* p = arena + s.offset;
    const bool isNormWeight = s.name.ends_with(".weight") && (s.name.find("ln_") != std::string::npos || s.name.ends_with("_norm.weight"));
    const bool isBias = s.name.ends_with(".bias");
    const bool isProj = s.name.ends_with("c_proj.weight");
    for (size_t i = 0; i < s.numel(); ++i) {
      if (isNormWeight) p[i] = 1.0f;
      else if (isBias) p[i] = 0.0f;
      else p[i] = static_cast<float>(rng.normal() * (isProj ? projStd : std));
    }
  }
}

}  // namespace tscope

// The parameters of a GPT-2-style model (and every architecture-lab variant). A Weights either
// owns one writable float32 arena (training, init) or was loaded from a file: then F32 tensors are
// read where they lie in the read-only memory map (kept alive by shared ownership) and only the
// tensors that needed conversion live in an owned arena. Asking a loaded Weights for a writable
// pointer first copies everything into an owned arena (copy-on-write). Parameters a variant does
// not use are absent (null pointers). tscope never rewrites a model file in place (saving writes a
// new file and renames it), so a mapping keeps the contents it was loaded with; another program
// truncating the file in place while it is loaded would fault the reader (as in any mmap loader).
// Matrices are stored (in, out), as HuggingFace GPT-2's Conv1D keeps them, so a linear layer is
// y = x W + b with x (T, in) row-major. Parameter names follow the HF checkpoint (no prefix).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/core/aligned.h"
#include "model/core/config.h"
#include "model/core/packed_matrix.h"

namespace tscope {

class MappedFile;

// One feed-forward network: the dense MLP of a block, or one expert of a mixture.
// T is float (writable memory) or const float (weights read in place, or only read).
template <class T>
struct FeedForwardParams {
  T* fcWeight = nullptr;    // (C, F)
  T* fcBias = nullptr;      // (F)
  T* gateWeight = nullptr;  // (C, F) SwiGLU only: hidden = silu(x Wgate + bgate) * (x Wfc + bfc)
  T* gateBias = nullptr;    // (F)   SwiGLU only
  T* projWeight = nullptr;  // (F, C)
  T* projBias = nullptr;    // (C)
  // Loaded packed checkpoints (16-bit, GGUF): the same matrices in the file's type (the float pointers are then null).
  PackedMatrix fcPacked, gatePacked, projPacked;  // (F, C), (F, C), (C, F): HF's (out, in)
};

template <class T>
struct LayerParams {
  T* ln1Weight = nullptr;                     // (C)
  T* ln1Bias = nullptr;                       // (C) LayerNorm only (null for RMSNorm)
  T* qkvWeight = nullptr;                     // (C, A + 2 Hkv D)  columns: Q | K | V, each head a D-wide slice (A = H D)
  T* qkvBias = nullptr;                       // (A + 2 Hkv D)
  T* qNormWeight = nullptr;                   // (D) qk_norm only: RMSNorm weight of every query head (after the projection, before RoPE)
  T* kNormWeight = nullptr;                   // (D) qk_norm only: the same for every key head
  T* attnProjWeight = nullptr;                // (A, C)
  T* attnProjBias = nullptr;                  // (C)
  T* ln2Weight = nullptr;                     // (C)
  T* ln2Bias = nullptr;                       // (C) LayerNorm only
  FeedForwardParams<T> mlp;                   // dense models
  T* routerWeight = nullptr;                  // (C, E) mixture of experts: router logits h = x Wg
  std::vector<FeedForwardParams<T>> experts;  // (E)
  // Loaded packed checkpoints (16-bit, GGUF): these matrices in the file's type, (out, in) (the float pointers are null).
  PackedMatrix qkvPacked, attnProjPacked, routerPacked;  // (A + 2 Hkv D, C), (C, A), (E, C)
  // moe_shared_expert_d_ff > 0: the shared expert (F = moe_shared_expert_d_ff wide) every row runs,
  // its output scaled by sigmoid(x . sharedExpertGate) (its packed matrices, if any, in sharedExpert).
  FeedForwardParams<T> sharedExpert;
  T* sharedExpertGate = nullptr;  // (C)
  // Decoder layers of an encoder-decoder model: the cross-attention sublayer (docs/ENCODER_DECODER.md),
  // between the self-attention and the feed-forward.
  T* lnxWeight = nullptr;        // (C) its norm
  T* lnxBias = nullptr;          // (C) LayerNorm only
  T* crossQWeight = nullptr;     // (C, A) queries from the decoder
  T* crossQBias = nullptr;       // (A)
  T* crossKvWeight = nullptr;    // (C, 2 Hkv D) keys | values from the encoder's output
  T* crossKvBias = nullptr;      // (2 Hkv D)
  T* crossProjWeight = nullptr;  // (A, C)
  T* crossProjBias = nullptr;    // (C)
  bool hasCross() const { return crossQWeight != nullptr; }
};

using FeedForwardWeights = FeedForwardParams<float>;
using LayerWeights = LayerParams<float>;
using ConstFeedForwardWeights = FeedForwardParams<const float>;
using ConstLayerWeights = LayerParams<const float>;

// A pointer to every parameter of a model, by role.
template <class T>
struct ModelParams {
  T* wte = nullptr;                    // (V, C) token embedding, also the unembedding when tied; image models (2, C): [CLS], patch bias
  T* patchWeight = nullptr;            // (K, C) image models only: a patch's K pixels projected to C
  T* lmHeadBias = nullptr;             // (V) image models only: the classifier's bias
  T* wpe = nullptr;                    // (n_positions, C) learned positions only
  T* wtt = nullptr;                    // (type_vocab_size, C) token types (BERT's segments) only
  std::vector<LayerParams<T>> layers;  // (L)
  T* lnfWeight = nullptr;              // (C) pre-norm models only
  T* lnfBias = nullptr;                // (C) pre-norm LayerNorm models only
  T* lmHead = nullptr;                 // (V, C) untied unembedding; null when tied to wte
  T* lnEmbWeight = nullptr;            // (C) embedding_norm only: the norm of the embeddings (ln_emb)
  T* lnEmbBias = nullptr;              // (C) embedding_norm LayerNorm only
  // mlm_head only: BERT's prediction head, logits = LN(act(x Wd + bd)) . unembedding^T + bias.
  T* mlmDenseWeight = nullptr;           // (C, C) (in, out)
  T* mlmDenseBias = nullptr;             // (C)
  T* mlmLnWeight = nullptr;              // (C)
  T* mlmLnBias = nullptr;                // (C) LayerNorm only
  T* mlmBias = nullptr;                  // (V) the output bias
  PackedMatrix wtePacked, lmHeadPacked;  // (V, C) each, when kept packed (wte / lmHead are then null)
  // Encoder-decoder models only: the encoder stack (its blocks read the same token embedding).
  T* encWpe = nullptr;                        // (n_positions, C) learned positions only
  std::vector<LayerParams<T>> encoderLayers;  // (n_encoder_layer)
  T* encLnfWeight = nullptr;                  // (C) pre-norm only
  T* encLnfBias = nullptr;                    // (C) pre-norm LayerNorm only
  bool untied() const { return lmHead || lmHeadPacked; }
  // The unembedding (V, C): as floats, or (when the pointer is null) packed.
  T* unembedding() const { return untied() ? lmHead : wte; }
  PackedMatrix unembeddingPacked() const { return untied() ? lmHeadPacked : wtePacked; }
};

struct ParamSpec {
  std::string name;            // HF name, e.g. "h.3.mlp.c_fc.weight"
  std::vector<int64_t> shape;  // as stored in the checkpoint
  size_t offset = 0;           // in floats, into the arena
  size_t numel() const;
};

// Every parameter of the config, in a fixed order, with its arena offset (each tensor starts on a
// 64-byte boundary).
std::vector<ParamSpec> parameterLayout(const ModelConfig& config);

// Binds every parameter of `config` by role: address(name) gives its pointer, null when the
// layout has no such parameter.
template <class T, class Address>
ModelParams<T> bindParams(const ModelConfig& config, const Address& address) {
  auto bindFeedForward = [&](const std::string& prefix) {
    FeedForwardParams<T> f;
    f.fcWeight = address(prefix + "c_fc.weight");
    f.fcBias = address(prefix + "c_fc.bias");
    f.gateWeight = address(prefix + "c_gate.weight");
    f.gateBias = address(prefix + "c_gate.bias");
    f.projWeight = address(prefix + "c_proj.weight");
    f.projBias = address(prefix + "c_proj.bias");
    return f;
  };
  ModelParams<T> params;
  params.wte = address("wte.weight");
  params.wpe = address("wpe.weight");
  params.wtt = address("wtt.weight");
  params.patchWeight = address("patch.weight");
  params.lmHeadBias = address("lm_head.bias");
  auto bindLayer = [&](const std::string& p) {
    LayerParams<T> w;
    w.ln1Weight = address(p + "ln_1.weight");
    w.ln1Bias = address(p + "ln_1.bias");
    w.qkvWeight = address(p + "attn.c_attn.weight");
    w.qkvBias = address(p + "attn.c_attn.bias");
    w.qNormWeight = address(p + "attn.q_norm.weight");
    w.kNormWeight = address(p + "attn.k_norm.weight");
    w.attnProjWeight = address(p + "attn.c_proj.weight");
    w.attnProjBias = address(p + "attn.c_proj.bias");
    w.lnxWeight = address(p + "ln_x.weight");
    w.lnxBias = address(p + "ln_x.bias");
    w.crossQWeight = address(p + "crossattn.c_q.weight");
    w.crossQBias = address(p + "crossattn.c_q.bias");
    w.crossKvWeight = address(p + "crossattn.c_kv.weight");
    w.crossKvBias = address(p + "crossattn.c_kv.bias");
    w.crossProjWeight = address(p + "crossattn.c_proj.weight");
    w.crossProjBias = address(p + "crossattn.c_proj.bias");
    if (!config.hasFeedForward()) return w;
    w.ln2Weight = address(p + "ln_2.weight");
    w.ln2Bias = address(p + "ln_2.bias");
    if (config.isMoe()) {
      w.routerWeight = address(p + "mlp.router.weight");
      for (int e = 0; e < config.n_experts; ++e) w.experts.push_back(bindFeedForward(p + "mlp.experts." + std::to_string(e) + "."));
      if (config.hasSharedExpert()) {
        w.sharedExpert = bindFeedForward(p + "mlp.shared_expert.");
        w.sharedExpertGate = address(p + "mlp.shared_expert_gate.weight");
      }
    } else {
      w.mlp = bindFeedForward(p + "mlp.");
    }
    return w;
  };
  for (int l = 0; l < config.n_layer; ++l) params.layers.push_back(bindLayer("h." + std::to_string(l) + "."));
  if (config.isEncoderDecoder()) {
    params.encWpe = address("enc.wpe.weight");
    for (int l = 0; l < config.n_encoder_layer; ++l) params.encoderLayers.push_back(bindLayer("enc.h." + std::to_string(l) + "."));
    params.encLnfWeight = address("enc.ln_f.weight");
    params.encLnfBias = address("enc.ln_f.bias");
  }
  params.lnfWeight = address("ln_f.weight");
  params.lnfBias = address("ln_f.bias");
  params.lmHead = address("lm_head.weight");
  params.lnEmbWeight = address("ln_emb.weight");
  params.lnEmbBias = address("ln_emb.bias");
  params.mlmDenseWeight = address("mlm.dense.weight");
  params.mlmDenseBias = address("mlm.dense.bias");
  params.mlmLnWeight = address("mlm.ln_head.weight");
  params.mlmLnBias = address("mlm.ln_head.bias");
  params.mlmBias = address("mlm.bias");
  return params;
}

// A parameter in tscope's float32 layout however it is held: `weight` itself, or (when `half` is
// set) the packed matrix converted into `scratch` (a linear layer (in, out), an embedding (V, C)).
const float* floatLayout(const float* weight, const PackedMatrix& half, std::vector<float>& scratch);

// The named pointers (wte, layers, ...) are read-only: write through param() or arena().
class Weights : public ModelParams<const float> {
 public:
  Weights() = default;
  explicit Weights(const ModelConfig& config);  // an owned arena, zero-filled
  // Loaded weights: inPlace[i] (one per parameterLayout entry) points to parameter i's float32
  // data inside `mapping`, or is null: that parameter gets zero-filled room in the owned arena,
  // which the loader fills through convertedParam().
  Weights(const ModelConfig& config, std::shared_ptr<const MappedFile> mapping, const std::vector<const float*>& inPlace);
  // Loaded packed weights (16-bit, GGUF): packed[i] (one per layout entry) set means parameter i is
  // held as that matrix, with no float32 copy (its float pointer is null); `packedStorage` keeps
  // their memory alive (the mapped files, owned buffers). The others get zero-filled room in the owned arena.
  Weights(const ModelConfig& config, const std::vector<PackedMatrix>& packed, std::shared_ptr<const void> packedStorage);
  Weights(Weights&&) noexcept = default;
  Weights& operator=(Weights&&) noexcept = default;
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamSpec>& layout() const { return layout_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // These throw tscope::Error for an unknown name. The read-only form is null for a parameter
  // held packed (copyAsFloat gives its values).
  const float* param(const std::string& name) const;
  // Writable: copies in-place weights into the arena first, which moves every parameter (pointers
  // taken before, and a Transformer reading these weights on the host, must be made again).
  float* param(const std::string& name);
  // Parameter i as float32 (layout()[i].numel()); null when it is held packed (see packed()).
  const float* tensor(size_t layoutIndex) const { return tensors_[layoutIndex]; }
  // Parameter i as held in the file's type (empty unless the checkpoint's matrix is kept packed: 16-bit or GGUF).
  PackedMatrix packed(size_t layoutIndex) const { return packed_.empty() ? PackedMatrix{} : packed_[layoutIndex]; }
  // out (layout()[i].numel()) = parameter i in the float32 layout, however it is held.
  void copyAsFloat(size_t layoutIndex, float* out) const;
  // Bytes held packed (in the mapped files or owned), and whether any parameter is.
  size_t packedBytes() const;
  // The parameters' bytes as held: a packed matrix's bytes (2 per value for halves), 4 per float32 value.
  size_t heldBytes() const;
  bool hasPacked() const { return packedStorage_ != nullptr; }
  // For the loader: a parameter that lives in the owned arena, writable without copy-on-write.
  // Throws tscope::Error when it is read in place.
  float* convertedParam(const std::string& name);

  // Floats in the contiguous image of the layout (every parameter at its offset).
  size_t totalFloats() const;
  // The contiguous arena. The writable form copies in-place weights (and packed matrices, as float32) into
  // it first; the read-only form throws tscope::Error when some parameters are read in place or
  // held packed (there is no one arena).
  float* arena();
  const float* arena() const;

  // Whether parameter `name` points into the mapped file (no copy), and the mapping (null when
  // nothing is read in place).
  bool readsInPlace(const std::string& name) const;
  const std::shared_ptr<const MappedFile>& mapping() const { return mapping_; }
  size_t ownedFloats() const { return arena_.size(); }

  // The same layout placed at `base` (totalFloats() floats, e.g. device memory; nothing packed).
  template <class T>
  ModelParams<T> placedAt(T* base) const {
    return bindParams<T>(config_, [&](const std::string& name) -> T* {
      auto it = index_.find(name);
      return it == index_.end() ? nullptr : base + layout_[it->second].offset;
    });
  }

  // Fills every parameter with GPT-2's initialisation (N(0, 0.02), output projections scaled by
  // 1/sqrt(2L), norm weights 1 (ln_*, q_norm, k_norm), biases 0) from a seed.
  // `std` replaces 0.02 (larger values give peaked attention in untrained demo models).
  void initRandom(uint64_t seed, double std = 0.02);

 private:
  void indexLayout(const ModelConfig& config);
  void makeWritable();  // copy-on-write: every parameter (packed ones as float32) into one owned arena at its layout offset
  void bindPointers();
  size_t indexOf(const std::string& name) const;
  ModelConfig config_;
  std::vector<ParamSpec> layout_;
  std::map<std::string, size_t> index_;
  std::vector<const float*> tensors_;          // (layout size) where each parameter's data lies
  std::vector<size_t> arenaOffsets_;           // (layout size) floats into arena_, or npos when in place
  AlignedFloats arena_;                        // 64-byte aligned (see aligned.h)
  std::shared_ptr<const MappedFile> mapping_;  // keeps the in-place parameters' memory alive
  std::vector<PackedMatrix> packed_;           // (layout size) parameters held packed; empty when none is
  std::shared_ptr<const void> packedStorage_;  // keeps the packed matrices' memory alive; null when there are none
};

}  // namespace tscope

// THE transformer block forward, written once against Backend and called by inference
// (Transformer: KV cache, trace) and by training (TrainModel: every activation for the backward).
// What to keep is an argument, as in llm.c's ActivationTensors: LayerTensors says where each
// intermediate goes (shared scratch reused by every layer, or the layer's own kept storage).
#pragma once
#include <optional>
#include <vector>

#include "model/core/aligned.h"
#include "model/core/config.h"
#include "model/core/weights.h"
#include "model/nn/backend.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/intervention.h"
#include "model/nn/moe.h"
#include "model/nn/what_if.h"

namespace tscope {

// Activation storage in a backend's memory: a host array on the CPU backends or a device Buffer
// that only grows.
class Floats {
 public:
  float* data() { return onHost_ ? host_.data() : device_.data(); }
  const float* data() const { return onHost_ ? host_.data() : device_.data(); }
  size_t size() const { return size_; }
  void resize(Backend& backend, size_t n);
  // this = src (n floats of the same backend's memory)
  void copyFrom(Backend& backend, const float* src, size_t n);
  void copyFrom(Backend& backend, const Floats& other) { copyFrom(backend, other.data(), other.size()); }
  // resize(n) and point at it: the storage one forward writes into
  float* sized(Backend& backend, size_t n) {
    resize(backend, n);
    return data();
  }

 private:
  bool onHost_ = true;
  AlignedFloats host_;
  Buffer device_;
  size_t size_ = 0;
};

// One expert's share of a MoE layer: the rows it computed (n of the R rows) and its activations.
struct ExpertActivations {
  std::vector<int> rows;        // (n) global rows (b*T + t) of the kept assignments
  std::vector<float> gates;     // (n) (host: scatterAddRows takes host gates)
  std::vector<int> sequence;    // (n) which sequence's routing each row came from
  std::vector<int> assignment;  // (n) index into that routing's assignments (for the gate gradient)
  Floats in;                    // (n, C) gathered inputs
  Floats hidden;                // (n, F) pre-activation (x Wfc + bfc); activated in place when act is not kept
  Floats gate;                  // (n, F) SwiGLU gate pre-activation
  Floats act;                   // (n, F) activated hidden (input of c_proj), kept for the backward only
  Floats out;                   // (n, C) expert output before the gate
};

// A MoE layer's routing (host, one per sequence, as a prompt is routed at inference) and dispatch.
struct MoeActivations {
  Floats routerLogits;                     // (R, E)
  std::vector<float> routerLogitsHost;     // (R, E) the same on the host (device backends)
  std::vector<float> sequenceLogits;       // (T, E) one sequence's router logits (routeTokens' input)
  std::vector<MoeRouting> routing;         // (B) one routing per sequence
  std::vector<ExpertActivations> experts;  // (E)
  // moe_shared_expert_d_ff > 0: the shared expert over every row (rows 0..R-1, gates its sigmoid gate).
  ExpertActivations shared;                // in unused (the layer's input is its input); hidden, gate, act (R, F shared)
  Floats sharedGateLogit;                  // (R, 1) x . shared_expert_gate
  std::vector<float> sharedGateLogitHost;  // (R) the same on the host (device backends)
  std::vector<float> sharedGates;          // (R) host: sigmoid of the logit, the weight of the shared expert's output
};

// Where one layer's forward writes, all (R, .) in backend memory. Required: normed1 and normed2
// (pre-norm: the sublayers' inputs; post-norm: norm scratch), qkv, attn, out, hidden (and gate
// for SwiGLU) on dense layers, moe on MoE layers. Null optional members are not kept.
struct LayerTensors {
  float* in = nullptr;             // (R, C) optional: copy of the residual entering the layer
  float* normed1 = nullptr;        // (R, C) ln_1(x) (pre-norm)
  float* qkv = nullptr;            // (R, A + 2 Hkv D) as the attention left it (q/k normed with qk_norm, RoPE rotated)
  float* qkvRaw = nullptr;         // (R, A + 2 Hkv D) optional, qk_norm: copy of the projection before the q/k norm
  float* qkvKept = nullptr;        // (R, A + 2 Hkv D) optional: copy of the attention's input (after the q/k norm, before RoPE)
  float* attn = nullptr;           // (R, A) concatenated heads (A = H * D, config.attnDim())
  float* out = nullptr;            // (R, C) a sublayer's output before the residual add
  float* sum1 = nullptr;           // (R, C) optional, post-norm: x + attention (input of ln_1)
  float* mid = nullptr;            // (R, C) optional: copy of the residual after the attention sublayer
  float* normed2 = nullptr;        // (R, C) ln_2(mid) (pre-norm)
  float* hidden = nullptr;         // (R, F) dense: pre-activation (activated in place when act is null)
  float* gate = nullptr;           // (R, F) dense SwiGLU gate
  float* act = nullptr;            // (R, F) dense, with keepActivated: activated hidden (input of c_proj)
  bool keepActivated = false;      // keep the activated hidden apart from the pre-activation (dense: in act; experts: their own)
  float* sum2 = nullptr;           // (R, C) optional, post-norm: mid + feed-forward (input of ln_2)
  float* attnProjected = nullptr;  // (R, C) optional: copy of the attention sublayer's output after W_O
  MoeActivations* moe = nullptr;
  // Attention maps of sequence 0, (H, T, Tk) each, or null.
  float* probs = nullptr;
  float* scores = nullptr;
  // Inference (B = 1): the edits of layer `layerIndex` replace rows of attn (the concatenated head
  // outputs, before W_O) and of the feed-forward output (before the residual add) at positions
  // shape.pos0 + t. Null = none.
  const Interventions* interventions = nullptr;
  int layerIndex = 0;
  // The efficient-attention lab's variant: computes this layer's attention output from the real
  // q, k, v instead of the model's own attention (on the host: efficient_attention.h); the KV cache
  // and any captured maps stay the model's. Null = the model's own attention (config.attention_variant:
  // a model built with a variant captures that variant's effective maps in probs).
  const AttentionVariantParams* attentionVariant = nullptr;
  // Decoder layers of an encoder-decoder model (docs/ENCODER_DECODER.md): the cross-attention
  // sublayer between the self-attention and the feed-forward. Required there: crossKv, crossQ,
  // crossAttn, normedX (pre-norm: ln_x(x); post-norm: norm scratch).
  const float* crossKv = nullptr;  // (B*S, 2 Hkv D) this layer's keys | values of each sequence's S source rows (crossKeysValues)
  int crossS = 0;                  // S source rows per sequence
  float* normedX = nullptr;        // (R, C) ln_x(x) (pre-norm)
  float* crossQ = nullptr;         // (R, A) queries
  float* crossAttn = nullptr;      // (R, A) concatenated heads
  float* sumX = nullptr;           // (R, C) optional, post-norm: x + cross-attention (input of ln_x)
  float* midX = nullptr;           // (R, C) optional: copy of the residual after the cross-attention sublayer
  float* crossProbs = nullptr;     // (H, T, S) optional: sequence 0's cross-attention probabilities
};

// The norm that follows a layer (the next layer's ln_1, or the final norm of a pre-norm model)
// and where the fused residual add writes it; weight null = none follows.
struct NextNorm {
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;  // (R, C)
};

// BERT's masked-LM prediction head (mlm_head models; every pointer null otherwise): the residual's
// rows become norm(act(x Wd + bd)) before the unembedding, whose logits get `bias` (V) added.
struct OutputHead {
  const float* denseWeight = nullptr;  // (C, C)
  const float* denseBias = nullptr;    // (C)
  const float* normWeight = nullptr;   // (C)
  const float* normBias = nullptr;     // (C) LayerNorm only
  const float* bias = nullptr;         // (V) the MLM head's output bias, or an image model's classifier bias (lm_head.bias)
  template <class T>
  static OutputHead of(const ModelParams<T>& p) {
    return {p.mlmDenseWeight, p.mlmDenseBias, p.mlmLnWeight, p.mlmLnBias, p.mlmBias ? p.mlmBias : p.lmHeadBias};
  }
};

// Training's view of the MLM head (mlm_head): each (rows, C).
struct HeadActivations {
  float* pre = nullptr;  // x Wd + bd
  float* act = nullptr;  // act(pre)
  float* out = nullptr;  // norm(act): the unembedding's input
};

class BlockForward {
 public:
  BlockForward(const ModelConfig& config, Backend& backend);

  // What-ifs (what_if.h) every call from now on applies: the attention shape's mask, positions and
  // scale, and layer()'s uniform attention, skipped residual and skipped MLP. Empty = none.
  void setWhatIfs(WhatIfs whatIfs) { whatIfs_ = std::move(whatIfs); }

  // Routing knobs of the MoE layers (validated by the caller).
  void setMoeRouting(const MoeRoutingParams& params) { moeParams_ = params; }
  const MoeRoutingParams& moeRouting() const { return moeParams_; }

  // The additive position table the embedding uses: the learned `wpe` (from the weights), the
  // sinusoidal table this object keeps in backend memory, or null (RoPE, ALiBi, none).
  const float* positionTable(const float* wpe) const;
  // x (B*T, C) = wte[tokens] + positions[pos0 + t] for each of B sequences of T host tokens; the
  // embedding is wtePacked when that is set (a 16-bit checkpoint), else wte.
  void embed(float* x, const int* hostTokens, const float* wte, const float* wpe, int B, int T, int pos0, const PackedMatrix& wtePacked = {});

  // out (rows, N) = in (rows, K) . W + bias for a linear layer held as float32 W (K, N) or, when
  // `half` is set, as 16-bit halves (N, K) (the float pointer is then null).
  void linear(float* out, const float* in, const float* weight, const PackedMatrix& half, const float* bias, int rows, int K, int N);

  // The model's own attention variant as the layers run it (config.attention_variant), or null
  // when the backend's attention is the model's (exact, window).
  const AttentionVariantParams* ownVariant() const { return ownVariant_ ? &*ownVariant_ : nullptr; }

  // The shape of each sequence's attention: T new rows after pos0 cached ones, cacheRows rows of K/V.
  AttentionShape attentionShape(int T, int pos0, int cacheRows) const;

  // out (rows, C) = the configured norm (LayerNorm or RMSNorm) of in.
  void norm(float* out, const float* in, const float* weight, const float* bias, int rows);

  // x (B*T, C) += wtt[tokenTypes(sequence b)[t]] (BERT's segment embeddings, token types models
  // only), through scratch (B*T, C); each of the B sequences of hostTokens starts at position 0.
  void addTokenTypes(float* x, const int* hostTokens, const float* wtt, float* scratch, int B, int T);
  // x (rows, C) = the configured norm of x (embedding_norm models: BERT's embeddings.LayerNorm after
  // the token + position embeddings), through scratch (rows, C).
  void embeddingNorm(float* x, float* scratch, const float* weight, const float* bias, int rows);

  // x (B*T, C) += patchRows (B*T, K) . patch (K, C) (image models: each sequence's imagePatchRows,
  // host memory; the [CLS] rows are zeros), through scratchIn (B*T, K) and scratchOut (B*T, C).
  void addPatches(float* x, const float* hostPatchRows, const float* patch, float* scratchIn, float* scratchOut, int rows);

  // The unembedding's input for `rows` rows of the residual x (rows, C): x itself when the model has
  // no final norm and no MLM head, else in out: its final norm (weight, bias), already there when
  // `normed` (fused into the last residual add), then (mlm_head models) the head's
  // norm(act(. Wd + bd)) through headScratch (rows, C). out may be x when there is no final norm.
  // Training passes `keep`: the head's dense output before and after the activation are kept
  // there, and its norm goes to keep->out (out keeps the final norm, the head's input).
  const float* unembeddingInput(const float* x, float* out, bool normed, const float* weight, const float* bias, int rows,
                                const OutputHead& head = {}, float* headScratch = nullptr, const HeadActivations* keep = nullptr);
  // The token type of each of hostTokens' B sequences of T (tokenTypes, each from position 0).
  std::vector<int> tokenTypesOf(const int* hostTokens, int B, int T) const;

  // logits (rows, V) = in (rows, C) . unembedding^T (as floats (V, C), or as halves when `half` is
  // set), plus the head's output bias (mlm_head models) on every row: the one unembedding of
  // inference, the logit lens, recorded decode steps and training.
  void logits(float* out, const float* in, const float* unembedding, const PackedMatrix& half, const OutputHead& head, int rows);

  // Encoder-decoder: kv (rows, 2 Hkv D) = a decoder layer's cross-attention keys | values of the
  // encoder's output rows encoderOut (rows, C). Computed once per source.
  void crossKeysValues(const ConstLayerWeights& w, const float* encoderOut, int rows, float* kv);

  // The attention of one sequence of T rows from its q | k | v (T, A + 2 Hkv D) alone, as layer()
  // runs it at pos0 = 0 (the backend's attention, then the model's own variant): out (T, A), probs
  // and scores (H, T, T); keys and values (T, Hkv D) are scratch. qkv is rotated in place (RoPE).
  // `layer`: the layer it stands for (a uniform-attention what-if there applies).
  void attentionOnly(float* out, float* probs, float* scores, float* qkv, float* keys, float* values, int T, int layer = -1);

  // One block over the residual x (R, C) = B sequences of shape.T rows, in place. Each sequence
  // attends with the K/V store keys/values (cacheRows, Hkv D): rows pos0.. are written. `normed`:
  // t.normed1 already holds ln_1(x) (fused into the previous residual add). Returns whether
  // next.out now holds the next norm of x (pre-norm; fused into the last residual add).
  bool layer(const ConstLayerWeights& w, const NextNorm& next, int B, const AttentionShape& shape, float* keys, float* values, float* x, bool normed,
             const LayerTensors& t);

 private:
  // qk_norm: every head's q (H per row) and k (Hkv per row) of qkv (rows, A + 2 Hkv D) RMSNormed in
  // place over its D entries (Backend::headRmsNorm: one launch on CUDA).
  void qkNorm(float* qkv, const ConstLayerWeights& w, int rows);
  bool residualAdd(float* x, const float* y, int R, const NextNorm& next, const float* postWeight, const float* postBias, float* normScratch,
                   float* keepSum);
  // width: the feed-forward's F (0 = config.dFF(); the shared expert's is moe_shared_expert_d_ff).
  void feedForward(const ConstFeedForwardWeights& w, const float* in, int rows, float* hidden, float* gate, float* act, float* out, int width = 0);
  // Applies `edit` to rows (R, width) of backend memory on the host (a download and upload on a device).
  template <typename Edit>
  void editRows(float* rows, int R, int width, Edit&& edit);
  // attn (T, A) of one sequence = the variant's output for its T query rows (positions pos0..) over
  // the cache's keys/values 0 .. pos0+T-1 (the backend's attention call just wrote rows pos0..).
  // probs (H, T, pos0+T) not null: every head's rows get the variant's effective map.
  void variantAttention(float* attn, const float* qkv, const float* keys, const float* values, const AttentionShape& shape,
                        const AttentionVariantParams& params, float* probs);
  // The uniform-attention what-if: attn (T, A) of one sequence = each head's mean of the values
  // (rows 0 .. pos0+T-1 of the K/V store) its query sees; probs (H, T, Tk) that mean's weights and
  // scores 0 where visible (-inf masked), when not null (what_if_block.cpp).
  void uniformAttention(float* attn, float* probs, float* scores, const float* values, const AttentionShape& shape);
  bool whatIfAt(WhatIfKind kind, int layer) const { return whatIfs_.atLayer(kind, layer); }
  void mixtureOfExperts(const ConstLayerWeights& w, const float* in, float* out, int B, int T, bool keepActivated, MoeActivations& m);
  void sharedExpert(const ConstLayerWeights& w, const float* in, float* out, int R, bool keepActivated, MoeActivations& m);

  ModelConfig config_;
  Backend* backend_;  // a pointer, so the owners stay movable
  MoeRoutingParams moeParams_;
  std::vector<float> alibiSlopes_;       // (H) host, ALiBi only
  std::vector<double> ropeFrequencies_;  // (D/2) host, RoPE with Llama 3 scaling only (plain RoPE: the backends' base^(-2i/D))
  Buffer sinusoids_;                     // (n_positions, C) sinusoidal position table, sinusoidal models only
  std::vector<float> editHost_;          // (R, C) rows being edited on the host (device backends)
  // The model's own attention variant (config.attentionVariantAsRun(), when hasVariantAttention()).
  std::optional<AttentionVariantParams> ownVariant_;
  WhatIfs whatIfs_;  // Transformer::setWhatIfs (inference only; training leaves it empty)
};

// The const view of writable parameters (the block reads weights only).
ConstLayerWeights constLayer(const LayerWeights& w);

// `n` floats of backend memory readable on the host: the memory itself on a host backend, else a
// download into `copy`.
const float* hostView(Backend& backend, const float* data, size_t n, std::vector<float>& copy);

}  // namespace tscope

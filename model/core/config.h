// Model configuration: the architecture fields of config.json and the rules they must obey.
// GPT-2's HuggingFace fields plus tscope's architecture-lab fields (positional encoding, norm,
// feed-forward, mixture of experts, attention variants), all with GPT-2's values as defaults.
// Dimension letters used across tscope: B batch, T tokens, C = d_model, H heads, D head dim,
// F = d_ff, V vocab, L layers, E experts.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/core/attention_variant.h"

namespace tscope {

enum class PositionEncoding { Learned, Sinusoidal, Rope, Alibi, None };
// None: no normalisation at all (the identity, no weights): a lab setting for the lecture's claim that
// normalisation makes deep models trainable; a post-norm model then has none on the stream either.
enum class NormKind { LayerNorm, RmsNorm, None };
enum class Activation { GeluTanh, GeluErf, Relu, SwiGlu };
enum class MoeRoutingKind { TokenChoice, ExpertChoice };

struct ModelConfig {
  int n_layer = 12;  // L
  int n_head = 12;   // H (query heads)
  int n_embd = 768;  // C
  // Width of one attention head (config.json "head_dim"); 0 = n_embd / n_head. Set when a model's
  // heads are wider or narrower than that (Qwen3-0.6B: 16 heads of 128 over n_embd 1024): q, k, v
  // and the attention output are then A = n_head * head_dim wide and attn.c_proj maps A to C.
  int head_dim = 0;
  int n_positions = 1024;  // longest context (T max)
  int vocab_size = 50257;  // V
  double layer_norm_epsilon = 1e-5;
  Activation activation = Activation::GeluTanh;  // config.json "activation_function"
  std::string tokenizer = "gpt2-bpe";            // "gpt2-bpe" or "char"

  // Architecture lab (tscope's own models; HF GPT-2 keeps the defaults).
  PositionEncoding position_encoding = PositionEncoding::Learned;
  double position_base = 10000;  // sinusoidal base C in sin(t / C^(2i/d)); RoPE base
  // Llama 3's RoPE scaling (HF rope_scaling with rope_type "llama3"; ropeInverseFrequencies in
  // model/nn/positional.h): pairs whose wavelength 2 pi / base^(-2i/D) is over
  // rope_original_context / rope_low_freq_factor turn rope_scaling_factor times slower, those under
  // rope_original_context / rope_high_freq_factor keep their speed, the ones between blend the two.
  double rope_scaling_factor = 0;  // 0 = no scaling
  double rope_low_freq_factor = 1;
  double rope_high_freq_factor = 4;
  int rope_original_context = 8192;  // the context the unscaled model was trained with
  NormKind norm = NormKind::LayerNorm;
  bool pre_norm = true;  // z = x + f(LN(x)); false: post-norm z = LN(x + f(x))
  // false: no residual connection, each sublayer replaces the stream (pre-norm z = f(LN(x)),
  // post-norm z = LN(f(x))); a lab setting, for the lecture's claim that residuals make deep models trainable.
  bool residual = true;
  int d_ff = 0;        // F; 0 = 4C
  int n_kv_head = 0;   // grouped-query attention; 0 = n_head, 1 = multi-query
  bool causal = true;  // false: bidirectional (an encoder, as in BERT)
  // An encoder-only masked language model (BERT): bidirectional, trained to predict the tokens
  // hidden behind [MASK]; the logits at a position are what fills it, not the next token.
  bool masked_lm = false;
  // BERT's embeddings.LayerNorm: the token + position embeddings go through the configured norm
  // (weights ln_emb) before layer 0.
  bool embedding_norm = false;
  // BERT's masked-LM prediction head before the unembedding: dense C -> C with bias (mlm.dense),
  // the configured activation, the configured norm (mlm.ln_head), then the unembedding plus an
  // output bias of V (mlm.bias). Every place that turns a residual into logits runs it.
  bool mlm_head = false;
  // BERT's token types (segments): type_vocab_size > 0 adds a table wtt (type_vocab_size, C) to the
  // embeddings; token t's row is the number of sep_token_id tokens before it, at most
  // type_vocab_size - 1 (tokenTypes): "[CLS] A [SEP] B [SEP]" is A's segment 0, B's 1, as BERT's
  // tokenizer gives sentence pairs. sep_token_id -1: every token is type 0. Encoder-only models only
  // (a segment depends on the tokens before it, and only they are always run whole).
  int type_vocab_size = 0;
  int sep_token_id = -1;
  int attention_window = 0;  // sliding-window width w (keys within w positions); 0 = full
  bool tie_word_embeddings = true;
  int n_experts = 0;                  // E; 0 = dense feed-forward
  int moe_top_k = 2;                  // k
  double moe_capacity_factor = 1.25;  // <= 0: no capacity limit
  MoeRoutingKind moe_routing = MoeRoutingKind::TokenChoice;
  double moe_aux_loss_alpha = 0.01;
  // Token choice: true = softmax over the k chosen logits (= the full softmax renormalised over the
  // top k, Mixtral); false = the full softmax's top k probabilities kept as they are, not summing to 1
  // (Qwen1.5-MoE's norm_topk_prob false).
  bool moe_normalize_top_k = true;
  // Width of a shared expert every token runs beside the routed ones (0 = none), as in Qwen2-MoE:
  // its output times sigmoid(x . mlp.shared_expert_gate.weight (C)) is added to the mixture's.
  int moe_shared_expert_d_ff = 0;
  bool attention_only = false;  // no feed-forward sublayer (and no ln_2): attention-only models for circuits
  // RMSNorm of every head's q and k (D entries, weights attn.q_norm / attn.k_norm, eps
  // layer_norm_epsilon) after the q/k projection and before RoPE, as in Qwen3 and OLMo 2's heads.
  bool qk_norm = false;
  // The attention every layer computes (config.json "attention_variant" and its knobs in
  // "attention_variant_knobs"): exact softmax by default; "window" is the sliding window of
  // slidingWindow(); the others run the efficient-attention ops (model/nn/efficient_attention.h).
  // Linformer's fixed projection is cut from n_positions columns, so a token's output depends on
  // the tokens up to it only, at any prompt length. Learned Linformer projections are not a config.
  AttentionVariantParams attention_variant;
  // Encoder-decoder (docs/ENCODER_DECODER.md): > 0 adds an encoder of that many bidirectional
  // layers whose output every decoder layer reads by cross-attention; n_layer stays the decoder's
  // depth. Source and target share the vocabulary; the decoder starts from decoder_start_token_id
  // and a target ends with eos_token_id (-1 = none, decoder-only models).
  int n_encoder_layer = 0;
  int decoder_start_token_id = -1;
  int eos_token_id = -1;
  // A Vision Transformer (docs/VISION.md; image_size > 0): the input is an image of num_channels x
  // image_size x image_size cut into patches of patch_size x patch_size, each patch one token after
  // a [CLS] token (n_positions = 1 + patches). A patch's pixels, flattened channel by channel then
  // row by row (as ViT's strided convolution reads them), are projected by patch.weight (K, C); the
  // token table wte is (2, C): row 0 the [CLS] embedding, row 1 the projection's bias, so the tokens
  // are the ids 0, 1, 1, ... (imageTokenIds). Encoder-only (causal false); the unembedding lm_head
  // (V, C) plus lm_head.bias (V) is the classifier over V = vocab_size classes, read on [CLS].
  int image_size = 0;
  int patch_size = 16;
  int num_channels = 3;

  int headDim() const { return head_dim > 0 ? head_dim : n_embd / n_head; }  // D
  int attnDim() const { return n_head * headDim(); }                         // A = H * D (= C unless head_dim is set)
  int kvHeads() const { return n_kv_head > 0 ? n_kv_head : n_head; }         // Hkv
  int kvDim() const { return kvHeads() * headDim(); }                        // Hkv * D
  int qkvDim() const { return attnDim() + 2 * kvDim(); }                     // Q | K | V row width
  int dFF() const { return d_ff > 0 ? d_ff : 4 * n_embd; }                   // F
  bool isMoe() const { return n_experts > 0 && !attention_only; }
  bool hasSharedExpert() const { return isMoe() && moe_shared_expert_d_ff > 0; }
  bool hasFeedForward() const { return !attention_only; }
  bool hasRopeScaling() const { return rope_scaling_factor != 0; }
  bool hasLearnedPositions() const { return position_encoding == PositionEncoding::Learned; }
  bool hasNorm() const { return norm != NormKind::None; }
  bool hasNormBias() const { return norm == NormKind::LayerNorm; }
  bool hasFinalNorm() const { return pre_norm && hasNorm(); }  // post-norm output is already normalised
  bool isEncoderDecoder() const { return n_encoder_layer > 0; }
  bool hasTokenTypes() const { return type_vocab_size > 0; }
  bool isImage() const { return image_size > 0; }
  int patchGrid() const { return isImage() ? image_size / patch_size : 0; }                   // patches per side
  int numPatches() const { return patchGrid() * patchGrid(); }                                // P
  int patchDim() const { return num_channels * patch_size * patch_size; }                     // K: one patch's pixels
  int imageFloats() const { return isImage() ? num_channels * image_size * image_size : 0; }  // (channels, size, size)
  // Keys within w positions (i - w < j <= i); 0 = all: attention_window, or the window variant's knob.
  int slidingWindow() const { return attention_variant.variant == AttentionVariant::Window ? attention_variant.window : attention_window; }
  // The variant runs as the efficient-attention op instead of the backend's softmax attention:
  // every variant but exact and window (which the backends compute themselves).
  bool hasVariantAttention() const {
    return attention_variant.variant != AttentionVariant::Exact && attention_variant.variant != AttentionVariant::Window;
  }
  // attention_variant as the layers run it: Linformer's pool cut from n_positions columns.
  AttentionVariantParams attentionVariantAsRun() const {
    AttentionVariantParams p = attention_variant;
    if (p.variant == AttentionVariant::Linformer && p.linformerProjection == LinformerProjection::Pool) p.linformerColumns = n_positions;
    return p;
  }
};

const char* toString(PositionEncoding value);
const char* toString(NormKind value);
const char* toString(Activation value);
const char* toString(MoeRoutingKind value);

// An encoder-decoder model's encoder stack as a model of its own: the same blocks, n_encoder_layer
// deep, bidirectional (docs/ENCODER_DECODER.md).
ModelConfig encoderStackConfig(const ModelConfig& config);

// The token type (segment) of each of the `count` tokens, a whole sequence from position 0: the number of
// sep_token_id tokens before it, at most type_vocab_size - 1; all 0 when the model has no token
// types or no [SEP] id.
std::vector<int> tokenTypes(const ModelConfig& config, const int* tokens, size_t count);

// An image model's token ids (1 + numPatches()): 0 for [CLS], then 1 for every patch (the rows of wte
// they look up: the [CLS] embedding and the patch projection's bias).
std::vector<int> imageTokenIds(const ModelConfig& config);
// The patch rows of one image (channels, size, size) channel-major: (1 + P, K), row 0 zeros ([CLS]),
// row 1 + gy * grid + gx the patch at grid row gy and column gx, its pixels channel by channel, then
// row by row, as ViT's convolution weight (C, channels, p, p) flattens. Throws tscope::Error when
// `pixels` is not imageFloats() long.
std::vector<float> imagePatchRows(const ModelConfig& config, const float* pixels, size_t count);

// Returns "" when the config is usable, else one line naming the field and the rule it breaks.
std::string validateConfig(const ModelConfig& config);

// Reads the fields above from a HuggingFace-style config.json object (unknown keys ignored).
// Throws tscope::Error on a wrong type, an unknown value or an invalid combination.
ModelConfig configFromJson(const nlohmann::json& json);
// The first key of a model config object that tscope neither reads nor writes ("" when none): a
// misspelt field in a file the user wrote (a training config's "model", init --config) is an error
// there; HuggingFace config.json files carry many keys tscope ignores, so loadModel does not ask.
std::string unknownConfigKey(const nlohmann::json& json);
nlohmann::json configToJson(const ModelConfig& config);

}  // namespace tscope

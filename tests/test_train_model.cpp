// Model-level gradient checks: for every architecture-lab variant, the gradient TrainModel computes
// (reference ops) matches central finite differences of the loss along random directions, one
// direction per parameter tensor (so a wrong gradient in any tensor fails its own check); the Eigen
// path (cpu backend + cpu backward ops) matches the reference gradient; and a few steps of AdamW
// on a fixed batch lower the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/train/backward.h"
#include "model/core/error.h"
#include "model/train/optimizer.h"
#include "model/train/train_model.h"
#include "test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::smallConfig;

namespace {

struct Variant {
  std::string name;
  ModelConfig config;
  double step = 1e-3;  // the finite-difference step of the non-router tensors
  // AdamW's 30 steps on one batch must bring the loss below this fraction of the first. Without
  // residuals the loss falls, but more slowly (the lecture's point, measured on Brown in
  // assets/comparisons/trainability.json), so those variants are held to 0.8.
  double lossRatio = 0.5;
};

// The variants of positions, norms, activations and attention shapes (the first half of variants()).
void addPositionAndAttentionVariants(std::vector<Variant>& v, const ModelConfig& base) {
  v.push_back({"gpt2", base});
  {
    ModelConfig c = base;
    c.position_encoding = PositionEncoding::Sinusoidal;
    c.norm = NormKind::RmsNorm;
    c.pre_norm = false;
    c.activation = Activation::Relu;
    v.push_back({"sinusoidal_rmsnorm_postnorm_relu", c});
  }
  {
    ModelConfig c = smallConfig(2, 4, 16, 11, 8);
    c.position_encoding = PositionEncoding::Rope;
    c.n_kv_head = 2;
    c.attention_window = 3;
    c.activation = Activation::SwiGlu;
    c.d_ff = 12;
    v.push_back({"rope_gqa_window_swiglu", c});
  }
  {
    ModelConfig c = base;
    c.position_encoding = PositionEncoding::Alibi;
    c.n_kv_head = 1;
    c.activation = Activation::GeluErf;
    c.tie_word_embeddings = false;
    c.causal = false;
    v.push_back({"alibi_mqa_geluerf_untied_bidirectional", c});
  }
  {
    ModelConfig c = base;
    c.position_encoding = PositionEncoding::None;
    c.norm = NormKind::RmsNorm;
    v.push_back({"nopos_rmsnorm", c});
  }
  // The trainability lab: no norm (pre- and post-norm), no residual (pre- and post-norm), neither.
  for (bool pre : {true, false}) {
    ModelConfig c = base;
    c.norm = NormKind::None;
    c.pre_norm = pre;
    v.push_back({pre ? "nonorm_prenorm" : "nonorm_postnorm", c});
    c = base;
    c.residual = false;
    c.pre_norm = pre;
    v.push_back({pre ? "noresidual_prenorm" : "noresidual_postnorm", c, 1e-3, 0.8});
  }
  {
    ModelConfig c = base;
    c.norm = NormKind::None;
    c.residual = false;
    v.push_back({"nonorm_noresidual", c, 1e-3, 0.8});
  }
  {
    ModelConfig c = base;
    c.n_experts = 4;
    c.moe_top_k = 2;
    c.moe_capacity_factor = 1.25;
    c.d_ff = 6;
    c.moe_aux_loss_alpha = 0.05;
    v.push_back({"moe_top2_capacity", c});
  }
  {
    ModelConfig c = base;
    c.n_experts = 4;
    c.moe_top_k = 1;
    c.moe_capacity_factor = 0;
    c.activation = Activation::SwiGlu;
    c.d_ff = 6;
    v.push_back({"moe_top1_swiglu", c});
  }
  {
    ModelConfig c = base;
    c.n_experts = 4;
    c.moe_top_k = 2;
    c.moe_routing = MoeRoutingKind::ExpertChoice;
    c.moe_capacity_factor = 1.0;
    c.d_ff = 6;
    v.push_back({"moe_expert_choice", c});
  }
  // Qwen2-MoE's mixture: top-k router probabilities not renormalised, and a shared expert (its own
  // width) weighted by sigmoid(x . gate); with SwiGLU, and with GELU plus a capacity limit. The
  // finite-difference step (1e-3 on every entry of a tensor) must not flip a top-k choice: with
  // these sizes and seeds none flips (a shared width of 10 or 16 here would, as would the plain
  // top-2 SwiGLU mixture without a shared expert).
  {
    ModelConfig c = base;
    c.n_experts = 4;
    c.moe_top_k = 2;
    c.moe_capacity_factor = 0;
    c.moe_normalize_top_k = false;
    c.moe_shared_expert_d_ff = 8;
    c.activation = Activation::SwiGlu;
    c.d_ff = 6;
    c.moe_aux_loss_alpha = 0.05;
    v.push_back({"moe_unnormalized_shared_swiglu", c});
  }
  {
    ModelConfig c = base;
    c.n_experts = 4;
    c.moe_top_k = 2;
    c.moe_capacity_factor = 1.25;
    c.moe_shared_expert_d_ff = 5;
    c.d_ff = 6;
    v.push_back({"moe_shared_gelu_capacity", c});
  }
  {
    ModelConfig c = base;
    c.attention_only = true;
    c.position_encoding = PositionEncoding::Rope;
    v.push_back({"attention_only_rope", c});
  }
  // Llama 3's RoPE scaling (D 8, base 100, original context 40: a kept, a blended and two divided pairs).
  {
    ModelConfig c = smallConfig(2, 2, 16, 11, 8);
    c.position_encoding = PositionEncoding::Rope;
    c.position_base = 100;
    c.rope_scaling_factor = 8;
    c.rope_original_context = 40;
    c.norm = NormKind::RmsNorm;
    v.push_back({"rope_llama3_scaled_rmsnorm", c});
  }
}

// qk_norm, head widths, mixtures of experts and encoder-decoders (the second half of variants()).
void addQkNormExpertAndEncoderVariants(std::vector<Variant>& v, const ModelConfig& base) {
  // qk_norm (Qwen3's per-head RMSNorm of q and k before RoPE): with GQA, and post-norm without RoPE.
  {
    ModelConfig c = smallConfig(2, 4, 16, 11, 8);
    c.position_encoding = PositionEncoding::Rope;
    c.norm = NormKind::RmsNorm;
    c.n_kv_head = 2;
    c.activation = Activation::SwiGlu;
    c.d_ff = 12;
    c.qk_norm = true;
    v.push_back({"qknorm_rope_gqa_swiglu", c});
  }
  {
    ModelConfig c = base;
    c.pre_norm = false;
    c.qk_norm = true;
    v.push_back({"qknorm_postnorm", c});
  }
  // Heads wider than C / H (Qwen3-0.6B's kind: q, k, v and W_O are H D = 32 wide over C = 16) with
  // qk_norm, and narrower ones (H D = 4 over C = 8) post-norm; the wide one is also an encoder-decoder below.
  {
    ModelConfig c = smallConfig(2, 4, 16, 11, 8);
    c.head_dim = 8;
    c.position_encoding = PositionEncoding::Rope;
    c.norm = NormKind::RmsNorm;
    c.n_kv_head = 2;
    c.qk_norm = true;
    v.push_back({"head_dim8_of_c16_qknorm_rope_gqa", c});
  }
  {
    ModelConfig c = base;
    c.head_dim = 2;
    c.pre_norm = false;
    v.push_back({"head_dim2_of_c8_postnorm", c});
  }
  // Models built with an efficient-attention variant: the gradient through attentionVariantBackward.
  {
    ModelConfig c = smallConfig(2, 4, 16, 11, 8);
    c.attention_variant.variant = AttentionVariant::Linear;
    c.position_encoding = PositionEncoding::Rope;
    c.n_kv_head = 2;
    v.push_back({"linear_rope_gqa", c});
  }
  {
    ModelConfig c = base;
    c.attention_variant.variant = AttentionVariant::Linformer;
    c.attention_variant.projected = 3;
    v.push_back({"linformer_pool_k3", c});
  }
  {
    ModelConfig c = base;
    c.causal = false;
    c.attention_variant.variant = AttentionVariant::Performer;
    c.attention_variant.features = 6;
    v.push_back({"performer_m6_bidirectional", c});
  }
  {
    ModelConfig c = base;
    c.attention_variant.variant = AttentionVariant::Flash;
    c.attention_variant.tile = 3;
    v.push_back({"flash_tile3", c});
  }
  // Encoder-decoder models (docs/ENCODER_DECODER.md): the gradient through the cross-attention
  // into the encoder, its layers and its embedding (the batches carry sources of kSourceSteps tokens).
  auto encoderDecoder = [](ModelConfig c, int encoderLayers) {
    c.n_encoder_layer = encoderLayers;
    c.decoder_start_token_id = 1;
    c.eos_token_id = 2;
    return c;
  };
  v.push_back({"encdec_gpt2", encoderDecoder(base, 2)});
  {
    ModelConfig c = encoderDecoder(smallConfig(2, 4, 16, 11, 8), 1);
    c.position_encoding = PositionEncoding::Rope;
    c.n_kv_head = 2;
    c.activation = Activation::SwiGlu;
    c.d_ff = 12;
    c.norm = NormKind::RmsNorm;
    c.pre_norm = false;
    v.push_back({"encdec_rope_gqa_swiglu_rmsnorm_postnorm", c});
  }
  {
    ModelConfig c = encoderDecoder(base, 1);
    c.position_encoding = PositionEncoding::Alibi;
    c.n_experts = 3;
    c.moe_top_k = 2;
    c.moe_capacity_factor = 0;
    c.tie_word_embeddings = false;
    // A step of 1e-3 in wte or a cross-attention bias flips a top-2 choice here (the loss jumps);
    // 1e-4 keeps every routing decision (checked: 1e-4 and 2e-5 agree with the analytic gradient).
    v.push_back({"encdec_alibi_moe_untied", c, 1e-4});
  }
  {
    ModelConfig c = encoderDecoder(smallConfig(2, 2, 8, 11, 8), 1);
    c.head_dim = 6;  // cross-attention's q (C, H D = 12) and W_O (12, C) too
    v.push_back({"encdec_head_dim6_of_c8", c});
  }
  {
    ModelConfig c = encoderDecoder(base, 2);
    c.position_encoding = PositionEncoding::Sinusoidal;
    c.attention_only = true;
    v.push_back({"encdec_sinusoidal_attention_only", c});
  }
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  const ModelConfig base = smallConfig(2, 2, 8, 11, 8);
  addPositionAndAttentionVariants(v, base);
  addQkNormExpertAndEncoderVariants(v, base);
  // BERT's whole shape: bidirectional post-norm, token types counted from [SEP] (token 3), the
  // embeddings normed, the MLM head (dense, GELU, norm, tied unembedding, output bias).
  {
    ModelConfig c = base;
    c.causal = false;
    c.pre_norm = false;
    c.activation = Activation::GeluErf;
    c.type_vocab_size = 2;
    c.sep_token_id = 3;
    c.embedding_norm = true;
    c.mlm_head = true;
    v.push_back({"bert_types_embnorm_mlmhead", c});
    c.pre_norm = true;  // a final norm before the head
    c.norm = NormKind::RmsNorm;
    c.type_vocab_size = 3;
    v.push_back({"bert_prenorm_rmsnorm_three_types", c});
  }
  return v;
}

// Sources of kSourceSteps tokens per sequence go with every batch (only encoder-decoder models read them).
constexpr int kSourceSteps = 5;

struct Batch {
  std::vector<int> inputs, targets, sources;
  std::vector<uint8_t> scored;
  BatchView view(int B, int T) const { return {B, T, inputs.data(), targets.data(), scored.data(), kSourceSteps, sources.data()}; }
};

Batch randomBatch(int B, int T, int V, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  for (int i = 0; i < B * T; ++i) {
    b.inputs.push_back(static_cast<int>(rng.next() % V));
    b.targets.push_back(static_cast<int>(rng.next() % V));
    b.scored.push_back(i % 3 != 1);  // some targets not scored
  }
  for (int i = 0; i < B * kSourceSteps; ++i) b.sources.push_back(static_cast<int>(rng.next() % V));
  return b;
}

// Weights with larger random values so every path (attention patterns, gates) matters.
Weights testWeights(const ModelConfig& c, uint64_t seed) {
  Weights w = randomWeights(c, seed);
  Rng rng(seed + 7);
  for (const auto& spec : w.layout()) {
    float* p = w.param(spec.name);
    for (size_t i = 0; i < spec.numel(); ++i) p[i] += static_cast<float>(0.3 * (rng.uniform() - 0.5));
  }
  return w;
}

double totalLoss(TrainModel& model, const Weights& w, const BatchView& batch) {
  const LossReport r = model.loss(w, batch);
  return r.loss + r.auxLoss;
}

class TrainModelGradient : public ::testing::TestWithParam<Variant> {};

TEST_P(TrainModelGradient, MatchesFiniteDifferencesPerTensor) {
  const ModelConfig& c = GetParam().config;
  auto device = makeReferenceDevice();
  TrainModel model(c, *device);
  Weights w = testWeights(c, 11);
  Weights g(c);
  const int B = 2, T = 6;
  const Batch batch = randomBatch(B, T, c.vocab_size, 5);
  model.lossAndGradients(w, g, batch.view(B, T));
  Rng rng(99);
  int checked = 0;
  for (const auto& spec : w.layout()) {
    // Direction d (unit-free, +-1 entries) over this tensor only.
    std::vector<float> d(spec.numel());
    for (auto& x : d) x = rng.uniform() < 0.5 ? -1.0f : 1.0f;
    float* p = w.param(spec.name);
    const float* gp = g.param(spec.name);
    double analytic = 0;
    for (size_t i = 0; i < d.size(); ++i) analytic += (double)gp[i] * d[i];
    const std::vector<float> saved(p, p + d.size());
    // Routing is piecewise constant in the router weights (top-k choices, capacity drops): a small
    // step keeps every decision, so the loss is smooth across it.
    const bool router = spec.name.find("router") != std::string::npos;
    const double h = router ? 5e-5 : GetParam().step;
    for (size_t i = 0; i < d.size(); ++i) p[i] = static_cast<float>(saved[i] + h * d[i]);
    const double up = totalLoss(model, w, batch.view(B, T));
    for (size_t i = 0; i < d.size(); ++i) p[i] = static_cast<float>(saved[i] - h * d[i]);
    const double down = totalLoss(model, w, batch.view(B, T));
    std::copy(saved.begin(), saved.end(), p);
    const double numeric = (up - down) / (2 * h);
    const double tolerance = (router ? 5e-3 : 2e-3) + 2e-2 * std::fabs(numeric);
    EXPECT_NEAR(analytic, numeric, tolerance) << GetParam().name << ": tensor " << spec.name << " directional derivative";
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(w.layout().size()));
}

TEST_P(TrainModelGradient, EigenPathMatchesReference) {
  const ModelConfig& c = GetParam().config;
  auto referenceDevice = makeReferenceDevice();
  auto cpuDevice = makeCpuDevice(2);
  TrainModel reference(c, *referenceDevice), fast(c, *cpuDevice);
  const Weights w = testWeights(c, 3);
  Weights gRef(c), gFast(c);
  const int B = 3, T = 7;
  const Batch batch = randomBatch(B, T, c.vocab_size, 8);
  const LossReport a = reference.lossAndGradients(w, gRef, batch.view(B, T));
  const LossReport b = fast.lossAndGradients(w, gFast, batch.view(B, T));
  EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(a.loss)) << GetParam().name;
  EXPECT_NEAR(a.auxLoss, b.auxLoss, 1e-5) << GetParam().name;
  for (const auto& spec : w.layout()) {
    const auto d = compare(gFast.param(spec.name), gRef.param(spec.name), spec.numel());
    EXPECT_LT(d.maxAbs, 1e-4 * std::max(1.0, d.maxRef)) << GetParam().name << ": " << spec.name << " " << d.describe();
  }
}

TEST_P(TrainModelGradient, AdamWStepsLowerTheLossOnAFixedBatch) {
  const ModelConfig& c = GetParam().config;
  auto device = makeCpuDevice(1);
  TrainModel model(c, *device);
  Weights w = testWeights(c, 4);
  Weights g(c);
  const int B = 2, T = 8;
  const Batch batch = randomBatch(B, T, c.vocab_size, 9);
  AdamWConfig config;
  config.lr = 1e-2f;
  config.weightDecay = 0;
  AdamW adam(w.totalFloats(), config);
  const double first = model.lossAndGradients(w, g, batch.view(B, T)).loss;
  double last = first;
  for (int step = 0; step < 30; ++step) {
    adam.step(w.arena(), g.arena(), nullptr);
    last = model.lossAndGradients(w, g, batch.view(B, T)).loss;
  }
  EXPECT_LT(last, GetParam().lossRatio * first) << GetParam().name << ": loss " << first << " -> " << last;
}

INSTANTIATE_TEST_SUITE_P(Variants, TrainModelGradient, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) { return info.param.name; });

TEST(TrainModel, RejectsBadBatches) {
  const ModelConfig c = smallConfig(1, 2, 8, 11, 4);
  auto device = makeReferenceDevice();
  TrainModel model(c, *device);
  const Weights w = testWeights(c, 1);
  Batch batch = randomBatch(1, 5, 11, 1);
  EXPECT_THROW(model.loss(w, batch.view(1, 5)), Error);  // longer than n_positions 4
  batch = randomBatch(1, 4, 11, 1);
  batch.inputs[2] = 11;
  EXPECT_THROW(model.loss(w, batch.view(1, 4)), Error);  // id outside the vocabulary
  batch = randomBatch(1, 4, 11, 1);
  std::fill(batch.scored.begin(), batch.scored.end(), 0);
  EXPECT_THROW(model.loss(w, batch.view(1, 4)), Error);  // nothing to score
}

}  // namespace

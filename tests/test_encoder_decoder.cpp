// Encoder-decoder models (docs/ENCODER_DECODER.md) at the engine level: the cross-attention op's
// Eigen path against the plain loop, its backward against finite differences, the Transformer's
// encode + decoder forward (decode token by token = one forward over the target; maps that are
// distributions; the source matters), the training forward pinned to inference, the config rules
// and generation / beam search from the decoder start token.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/nn/backend.h"
#include "model/nn/ops_reference.h"
#include "model/nn/transformer.h"
#include "model/theory/cost.h"
#include "model/train/backward.h"
#include "model/train/backward_reference.h"
#include "model/train/device.h"
#include "model/train/train_model.h"
#include "test_helpers.h"

using namespace tscope;
using tscope::testing::compare;
using tscope::testing::randomWeights;
using tscope::testing::sequence;
using tscope::testing::smallConfig;

namespace {

ModelConfig encoderDecoderConfig(int encoderLayers = 2, int decoderLayers = 2) {
  ModelConfig c = smallConfig(decoderLayers, 4, 32, 23, 20);
  c.n_encoder_layer = encoderLayers;
  c.decoder_start_token_id = 1;
  c.eos_token_id = 2;
  return c;
}

std::vector<float> randomValues(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return v;
}

TEST(CrossAttention, EigenPathMatchesThePlainLoop) {
  auto reference = makeReferenceBackend();
  auto cpu = makeCpuBackend(2);
  for (auto [T, S, H, Hkv, D] : {std::tuple{5, 7, 4, 4, 8}, std::tuple{1, 1, 2, 1, 4}, std::tuple{9, 3, 6, 2, 5}}) {
    const auto q = randomValues((size_t)T * H * D, 1, 2.0), kv = randomValues((size_t)S * 2 * Hkv * D, 2, 2.0);
    std::vector<float> outRef((size_t)T * H * D), outCpu(outRef.size()), probsRef((size_t)H * T * S), probsCpu(probsRef.size());
    reference->crossAttention(outRef.data(), probsRef.data(), q.data(), kv.data(), T, S, H, Hkv, D);
    cpu->crossAttention(outCpu.data(), probsCpu.data(), q.data(), kv.data(), T, S, H, Hkv, D);
    const auto dOut = compare(outCpu, outRef), dProbs = compare(probsCpu, probsRef);
    EXPECT_LT(dOut.maxAbs, 1e-5) << "T " << T << " S " << S << " H " << H << " Hkv " << Hkv << ": " << dOut.describe();
    EXPECT_LT(dProbs.maxAbs, 1e-6) << dProbs.describe();
    for (int row = 0; row < H * T; ++row) {
      double sum = 0;
      for (int j = 0; j < S; ++j) sum += probsRef[(size_t)row * S + j];
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
    }
  }
}

TEST(CrossAttention, BackwardMatchesFiniteDifferences) {
  const int B = 2, T = 3, S = 4, H = 4, Hkv = 2, D = 3, C = H * D, KV2 = 2 * Hkv * D;
  auto q = randomValues((size_t)B * T * C, 3, 1.5), kv = randomValues((size_t)B * S * KV2, 4, 1.5);
  const auto direction = randomValues((size_t)B * T * C, 5);  // loss = sum(out * direction)
  auto loss = [&] {
    double total = 0;
    std::vector<float> out((size_t)T * C);
    for (int b = 0; b < B; ++b) {
      ref::crossAttention(out.data(), nullptr, q.data() + (size_t)b * T * C, kv.data() + (size_t)b * S * KV2, T, S, H, Hkv, D);
      for (size_t i = 0; i < out.size(); ++i) total += (double)out[i] * direction[(size_t)b * T * C + i];
    }
    return total;
  };
  std::vector<float> dq(q.size(), 0.0f), dkv(kv.size(), 0.0f);
  ref::crossAttentionBackward(dq.data(), dkv.data(), direction.data(), q.data(), kv.data(), T, S, H, Hkv, D, B);
  double worst = 0;
  for (auto* which : {&q, &kv}) {
    const std::vector<float>& grad = which == &q ? dq : dkv;
    for (size_t i = 0; i < which->size(); i += 3) {
      const float saved = (*which)[i];
      const double h = 1e-3;
      (*which)[i] = static_cast<float>(saved + h);
      const double up = loss();
      (*which)[i] = static_cast<float>(saved - h);
      const double down = loss();
      (*which)[i] = saved;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::fabs(numeric - grad[i]));
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 1e-2 * std::fabs(numeric)) << (which == &q ? "dq[" : "dkv[") << i << "]";
    }
  }
  EXPECT_GT(std::fabs(dq[0]) + std::fabs(dkv[0]) + std::fabs(dkv[Hkv * D]), 0.0) << "gradients are all zero";
  // The Eigen fast path gives the plain loop's gradients.
  std::vector<float> dqFast(q.size(), 0.0f), dkvFast(kv.size(), 0.0f);
  makeCpuBackwardOps(2)->crossAttention(dqFast.data(), dkvFast.data(), direction.data(), q.data(), kv.data(), T, S, H, Hkv, D, B);
  const auto dQ = compare(dqFast, dq), dKV = compare(dkvFast, dkv);
  EXPECT_LT(dQ.maxAbs, 1e-5 * std::max(1.0, dQ.maxRef)) << "dq " << dQ.describe();
  EXPECT_LT(dKV.maxAbs, 1e-5 * std::max(1.0, dKV.maxRef)) << "dkv " << dKV.describe();
}

TEST(EncoderDecoderConfig, RulesAreOneLineEach) {
  ModelConfig c = encoderDecoderConfig();
  EXPECT_EQ(validateConfig(c), "");
  ModelConfig bad = c;
  bad.decoder_start_token_id = -1;
  EXPECT_NE(validateConfig(bad).find("decoder_start_token_id"), std::string::npos);
  bad = c;
  bad.eos_token_id = c.vocab_size;
  EXPECT_NE(validateConfig(bad).find("eos_token_id"), std::string::npos);
  bad = c;
  bad.causal = false;
  EXPECT_NE(validateConfig(bad).find("causal"), std::string::npos);
  bad = c;
  bad.attention_window = 3;
  EXPECT_NE(validateConfig(bad).find("attention_window"), std::string::npos);
  bad = c;
  bad.n_encoder_layer = -2;
  EXPECT_NE(validateConfig(bad).find("n_encoder_layer"), std::string::npos);
  // The JSON round trip keeps the fields.
  const ModelConfig back = configFromJson(configToJson(c));
  EXPECT_EQ(back.n_encoder_layer, 2);
  EXPECT_EQ(back.decoder_start_token_id, 1);
  EXPECT_EQ(back.eos_token_id, 2);
  // Layout: the encoder stack and each decoder layer's cross-attention exist, decoder-only models have neither.
  const Weights w(c);
  EXPECT_TRUE(w.has("enc.h.1.attn.c_attn.weight"));
  EXPECT_TRUE(w.has("enc.wpe.weight"));
  EXPECT_TRUE(w.has("enc.ln_f.weight"));
  EXPECT_TRUE(w.has("h.1.crossattn.c_kv.weight"));
  EXPECT_TRUE(w.has("h.0.ln_x.bias"));
  EXPECT_FALSE(w.has("enc.h.0.crossattn.c_q.weight"));
  const Weights plain(smallConfig(2, 4, 32, 23, 20));
  EXPECT_FALSE(plain.has("h.0.crossattn.c_q.weight"));
  EXPECT_FALSE(plain.has("enc.h.0.ln_1.weight"));
}

TEST(EncoderDecoderConfig, ParameterCountsMatchTheLayout) {
  for (const std::string name : {"gpt2", "rope_gqa_swiglu", "postnorm_sinusoidal_moe"}) {
    ModelConfig c = encoderDecoderConfig(3, 2);
    if (name == "rope_gqa_swiglu") {
      c.position_encoding = PositionEncoding::Rope;
      c.n_kv_head = 2;
      c.activation = Activation::SwiGlu;
      c.norm = NormKind::RmsNorm;
      c.tie_word_embeddings = false;
    } else if (name == "postnorm_sinusoidal_moe") {
      c.pre_norm = false;
      c.position_encoding = PositionEncoding::Sinusoidal;
      c.n_experts = 3;
      c.moe_top_k = 2;
    }
    int64_t layout = 0, encoder = 0, cross = 0;
    for (const ParamSpec& spec : parameterLayout(c)) {
      layout += (int64_t)spec.numel();
      if (spec.name.starts_with("enc.")) encoder += (int64_t)spec.numel();
      if (spec.name.find("crossattn.") != std::string::npos || spec.name.find(".ln_x.") != std::string::npos) cross += (int64_t)spec.numel();
    }
    const ParamCounts p = countParameters(c);
    EXPECT_EQ(p.total, layout) << name;
    EXPECT_EQ(p.encoder, encoder) << name;
    EXPECT_EQ(p.crossAttention, cross) << name;
  }
}

class EncoderDecoderForward : public ::testing::TestWithParam<std::string> {};

ModelConfig namedConfig(const std::string& name) {
  ModelConfig c = encoderDecoderConfig();
  if (name == "rope_gqa_swiglu") {
    c.position_encoding = PositionEncoding::Rope;
    c.n_kv_head = 2;
    c.activation = Activation::SwiGlu;
    c.norm = NormKind::RmsNorm;
  } else if (name == "postnorm_sinusoidal_moe") {
    c.pre_norm = false;
    c.position_encoding = PositionEncoding::Sinusoidal;
    c.n_experts = 3;
    c.moe_top_k = 2;
    c.moe_capacity_factor = 0;
  }
  return c;
}

// Decoding token by token with the KV cache (the encoder's keys and values computed once) gives
// the logits of one forward over the whole target, on both host backends.
TEST_P(EncoderDecoderForward, DecodeStepsMatchOneForwardOverTheTarget) {
  const ModelConfig c = namedConfig(GetParam());
  const Weights w = randomWeights(c, 7);
  const std::vector<int> source = sequence(9, c.vocab_size, 1), target = sequence(6, c.vocab_size, 2);
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(makeReferenceBackend());
  backends.push_back(makeCpuBackend(2));
  for (const auto& backend : backends) {
    Transformer model(w, *backend);
    model.encode(source);
    EXPECT_EQ(model.encodedLength(), 9);
    Trace trace;
    const std::vector<float> whole = model.logitsFor(target, &trace);
    ASSERT_EQ(trace.S, 9);
    ASSERT_EQ(trace.cross.size(), (size_t)c.n_layer * c.n_head * 6 * 9);
    for (size_t row = 0; row < trace.cross.size() / 9; ++row) {
      double sum = 0;
      for (int j = 0; j < 9; ++j) sum += trace.cross[row * 9 + j];
      ASSERT_NEAR(sum, 1.0, 1e-4) << "cross-attention row " << row;
    }
    KVCache cache(*backend, c, 6);
    std::vector<float> stepLogits, last;
    for (int t = 0; t < 6; ++t) {
      model.forward(std::span<const int>(target).subspan(t, 1), cache, last, false);
      stepLogits.insert(stepLogits.end(), last.begin(), last.end());
    }
    const auto d = compare(stepLogits, whole);
    EXPECT_LT(d.maxAbs, 1e-4 * std::max(1.0, d.maxRef)) << GetParam() << " on " << backend->name() << ": " << d.describe();
    // Another source gives other logits (the decoder reads it).
    model.encode(sequence(5, c.vocab_size, 9));
    const std::vector<float> other = model.logitsFor(target);
    EXPECT_GT(compare(other, whole).maxAbs, 1e-5) << "the source did not change the logits";  // float noise is ~1e-7
  }
}

TEST_P(EncoderDecoderForward, EncoderMapsAreBidirectionalDistributions) {
  const ModelConfig c = namedConfig(GetParam());
  const Weights w = randomWeights(c, 8);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  EncoderTrace trace;
  model.encode(sequence(7, c.vocab_size, 3), &trace);
  ASSERT_EQ(trace.attn.size(), (size_t)c.n_encoder_layer * c.n_head * 7 * 7);
  double aboveDiagonal = 0;
  for (int l = 0; l < trace.L; ++l)
    for (int h = 0; h < trace.H; ++h) {
      const float* map = trace.attnMap(l, h);
      for (int i = 0; i < 7; ++i) {
        double sum = 0;
        for (int j = 0; j < 7; ++j) {
          sum += map[i * 7 + j];
          if (j > i) aboveDiagonal += map[i * 7 + j];
        }
        EXPECT_NEAR(sum, 1.0, 1e-4);
      }
    }
  EXPECT_GT(aboveDiagonal, 1.0) << "the encoder attends only backwards: it should see the whole source";
}

INSTANTIATE_TEST_SUITE_P(Variants, EncoderDecoderForward, ::testing::Values("gpt2", "rope_gqa_swiglu", "postnorm_sinusoidal_moe"));

TEST(EncoderDecoder, BadSourcesAndMissingEncodeAreClearErrors) {
  const ModelConfig c = encoderDecoderConfig();
  const Weights w = randomWeights(c, 9);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  EXPECT_THROW(model.logitsFor(sequence(3, c.vocab_size, 1)), Error);  // nothing encoded yet
  EXPECT_THROW(model.encode({}), Error);
  EXPECT_THROW(model.encode(std::vector<int>(c.n_positions + 1, 3)), Error);
  EXPECT_THROW(model.encode(std::vector<int>{3, c.vocab_size}), Error);
  model.encode(std::vector<int>(c.n_positions, 3));  // exactly the context is fine
  EXPECT_EQ(model.encodedLength(), c.n_positions);
  model.encode(std::vector<int>{4});  // one token is fine
  EXPECT_EQ(model.logitsFor(std::vector<int>{1}).size(), (size_t)c.vocab_size);
  const ModelConfig plain = smallConfig(1, 2, 8, 11, 8);
  const Weights pw = randomWeights(plain, 1);
  Transformer decoderOnly(pw, *backend);
  EXPECT_THROW(decoderOnly.encode(std::vector<int>{1, 2}), Error);
}

// Training's forward (the same blocks over B sequences) gives the loss inference's logits give.
TEST(EncoderDecoder, TrainingLossMatchesInferenceLogits) {
  const ModelConfig c = namedConfig("rope_gqa_swiglu");
  const Weights w = randomWeights(c, 10);
  const int B = 2, T = 5, S = 6;
  std::vector<int> sources, inputs, targets;
  for (int b = 0; b < B; ++b) {
    const auto s = sequence(S, c.vocab_size, 20 + b), x = sequence(T + 1, c.vocab_size, 30 + b);
    sources.insert(sources.end(), s.begin(), s.end());
    inputs.insert(inputs.end(), x.begin(), x.end() - 1);
    targets.insert(targets.end(), x.begin() + 1, x.end());
  }
  auto device = makeCpuDevice(1);
  TrainModel trainer(c, *device);
  const BatchView batch{B, T, inputs.data(), targets.data(), nullptr, S, sources.data()};
  const double trained = trainer.loss(w, batch).loss;
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  double total = 0;
  for (int b = 0; b < B; ++b) {
    model.encode(std::span<const int>(sources).subspan((size_t)b * S, S));
    const std::vector<float> logits = model.logitsFor(std::span<const int>(inputs).subspan((size_t)b * T, T));
    for (int t = 0; t < T; ++t) {
      const float* row = logits.data() + (size_t)t * c.vocab_size;
      double top = row[0], sum = 0;
      for (int v = 0; v < c.vocab_size; ++v) top = std::max<double>(top, row[v]);
      for (int v = 0; v < c.vocab_size; ++v) sum += std::exp(row[v] - top);
      total += top + std::log(sum) - row[targets[(size_t)b * T + t]];
    }
  }
  EXPECT_NEAR(trained, total / (B * T), 1e-5 * std::fabs(trained));
  // A batch without sources is refused.
  const BatchView noSource{B, T, inputs.data(), targets.data(), nullptr};
  EXPECT_THROW(trainer.loss(w, noSource), Error);
}

TEST(EncoderDecoder, GenerationAndBeamSearchStartFromTheDecoderStartToken) {
  const ModelConfig c = encoderDecoderConfig(1, 1);
  const Weights w = randomWeights(c, 11);
  auto backend = makeCpuBackend(1);
  Transformer model(w, *backend);
  model.encode(sequence(6, c.vocab_size, 4));
  SamplingParams greedy;
  greedy.greedy = true;
  const std::vector<int> start{c.decoder_start_token_id};
  const GenerationResult result = generate(model, start, 8, greedy, c.eos_token_id);
  ASSERT_FALSE(result.ids.empty());
  // Greedy = argmax of one forward over start + the tokens made before.
  std::vector<int> prefix = start;
  for (int id : result.ids) {
    const std::vector<float> logits = model.logitsFor(prefix);
    const float* last = logits.data() + logits.size() - c.vocab_size;
    EXPECT_EQ(id, (int)(std::max_element(last, last + c.vocab_size) - last));
    prefix.push_back(id);
  }
  TransformerBeamModel beamModel(model, 4, 9);
  const BeamResult beam = beamSearch(beamModel, start, 2, 8, c.eos_token_id);
  ASSERT_FALSE(beam.bestTokens.empty());
  EXPECT_LE(beam.bestLogProb, 0.0);
}

}  // namespace

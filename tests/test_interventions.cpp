// The block's internals in the trace, the direct logit attribution and the interventions, each
// checked against an independent computation: the internals against the maps and weights they
// must reproduce, the attribution against the logit, a zero ablation against the same model with
// the ablated weights zeroed, and the classic demo on induction-2l (ablating the layer-1 induction
// heads destroys the copy; ablating a layer-0 head that does not feed them barely matters).
#include <gtest/gtest.h>

#include <cmath>

#include "model/io/model_io.h"
#include "model/nn/inside_views.h"
#include "model/nn/intervention.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

namespace tscope {
namespace {

using testing::compare;

// rows (T, K) . w (K, N) + b
std::vector<float> affine(const float* rows, int T, int K, const float* w, const float* b, int N) {
  std::vector<float> out((size_t)T * N);
  for (int t = 0; t < T; ++t)
    for (int n = 0; n < N; ++n) {
      double s = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) s += (double)rows[(size_t)t * K + k] * w[(size_t)k * N + n];
      out[(size_t)t * N + n] = static_cast<float>(s);
    }
  return out;
}

TEST(Internals, ReproduceTheMapsTheHeadOutputsAndTheProjectionsInEveryVariant) {
  auto backend = makeReferenceBackend();
  for (const auto& variant : testing::architectureVariants()) {
    const ModelConfig c = testing::variantConfig(variant);
    const Weights weights = testing::randomWeights(c, 11);
    Transformer model(weights, *backend);
    const std::vector<int> ids = testing::sequence(9, c.vocab_size, 4);
    const int layer = 1, T = 9, H = c.n_head, D = c.headDim(), C = c.n_embd, A = c.attnDim(), Hkv = c.kvHeads();
    Trace trace;
    model.logitsFor(ids, &trace, testing::componentsAndInternals(layer));
    ASSERT_EQ(trace.internalLayers, std::vector<int>{layer}) << variant.name;
    ASSERT_EQ(trace.q.size(), (size_t)H * T * D) << variant.name;
    ASSERT_EQ(trace.k.size(), (size_t)Hkv * T * D) << variant.name;
    ASSERT_TRUE(trace.capturedIndex(layer)) << variant.name;
    const int li = *trace.capturedIndex(layer);
    const float* mix = trace.headMix.data() + (size_t)layer * T * A;
    for (int h = 0; h < H; ++h) {
      const int kv = h / (H / Hkv);
      const float* map = trace.attnMap(li, h);
      for (int t = 0; t < T; ++t) {
        double weightSum = 0;
        for (int j = 0; j < T; ++j) {
          weightSum += map[t * T + j];
          // The scores are q . k_j / sqrt(D) (ALiBi adds its distance bias on top).
          const float score = trace.scoreMap(li, h)[t * T + j];
          if (c.position_encoding == PositionEncoding::Alibi || std::isinf(score)) continue;
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += (double)trace.q[((size_t)h * T + t) * D + d] * trace.k[((size_t)kv * T + j) * D + d];
          EXPECT_NEAR(dot / std::sqrt((double)D), score, 1e-4) << variant.name << " h" << h << " t" << t << " j" << j;
        }
        EXPECT_NEAR(weightSum, 1.0, 1e-5) << variant.name;
        // The head's output is the attention-weighted sum of the values.
        for (int d = 0; d < D; ++d) {
          double sum = 0;
          for (int j = 0; j < T; ++j) sum += (double)map[t * T + j] * trace.v[((size_t)kv * T + j) * D + d];
          EXPECT_NEAR(sum, mix[(size_t)t * A + h * D + d], 1e-5) << variant.name << " h" << h << " t" << t;
        }
      }
    }
    const ConstLayerWeights& w = weights.layers[layer];
    const auto attnOut = affine(mix, T, A, w.attnProjWeight, w.attnProjBias, C);
    EXPECT_LE(compare(trace.attnOut, attnOut).relative(), 1e-5) << variant.name;
    if (!trace.mlpPost.empty()) {  // dense MLP: c_proj of the activation is the MLP's output
      const auto mlpOut = affine(trace.mlpPost.data(), T, c.dFF(), w.mlp.projWeight, w.mlp.projBias, C);
      EXPECT_LE(compare(mlpOut.data(), trace.mlpOut.data() + (size_t)layer * T * C, (size_t)T * C).relative(), 1e-5) << variant.name;
      EXPECT_EQ(trace.mlpGate.empty(), c.activation != Activation::SwiGlu) << variant.name;
    }
    EXPECT_EQ(trace.mlpPre.empty(), !c.hasFeedForward() || c.isMoe()) << variant.name;
    for (float r : trace.normRstd) EXPECT_GE(r, 0.0f) << variant.name;
    // Pre-norm with residuals: the residual is the sum of its components.
    if (c.pre_norm && c.residual) {
      std::vector<float> sum = trace.embedded;
      for (int l = 0; l < c.n_layer; ++l) {
        const auto projected =
            affine(trace.headMix.data() + (size_t)l * T * A, T, A, weights.layers[l].attnProjWeight, weights.layers[l].attnProjBias, C);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += projected[i] + trace.mlpOut[(size_t)l * T * C + i];
      }
      EXPECT_LE(compare(sum, trace.finalResid).relative(), 1e-5) << variant.name;
    }
  }
}

TEST(LogitAttribution, PartsSumToTheLogitInEveryPreNormVariant) {
  auto backend = makeReferenceBackend();
  for (const auto& variant : testing::architectureVariants()) {
    const ModelConfig c = testing::variantConfig(variant);
    const Weights weights = testing::randomWeights(c, 12);
    Transformer model(weights, *backend);
    const std::vector<int> ids = testing::sequence(7, c.vocab_size, 6);
    Trace trace;
    const std::vector<float> logits = model.logitsFor(ids, &trace, testing::componentsAndInternals(0));
    if (!logitAttributionProblem(c).empty()) {  // post-norm, no residual, or a nonlinear head after the residual
      EXPECT_THROW(directLogitAttribution(trace, weights, 6, 0), Error) << variant.name;
      continue;
    }
    for (int position : {0, 3, 6}) {
      const int token = (position * 7 + 3) % c.vocab_size;
      const LogitAttribution a = directLogitAttribution(trace, weights, position, token);
      const float logit = logits[(size_t)position * c.vocab_size + token];
      EXPECT_EQ(a.logit, logit) << variant.name;
      EXPECT_NEAR(a.sum(), logit, 1e-4 * std::max(1.0f, std::fabs(logit))) << variant.name << " position " << position;
      EXPECT_EQ(a.heads.size(), (size_t)c.n_layer * c.n_head);
    }
  }
  const ModelConfig c = testing::variantConfig(testing::architectureVariants()[0]);
  const Weights weights = testing::randomWeights(c, 12);
  Transformer model(weights, *backend);
  Trace plain;
  model.logitsFor(testing::sequence(5, c.vocab_size, 1), &plain);
  EXPECT_THROW(directLogitAttribution(plain, weights, 0, 0), Error);  // no components captured
}

// A zero ablation equals the model whose ablated weights are zero: head h's rows of W_O, or the
// MLP's c_proj weight and bias.
TEST(Interventions, ZeroAblationEqualsZeroedWeights) {
  auto backend = makeReferenceBackend();
  const auto variants = testing::architectureVariants();
  for (const char* name : {"gpt2", "rope", "swiglu_dff48", "gqa2_rope", "head_dim16_qknorm_gqa2_rope_swiglu"}) {
    const ModelConfig c = testing::variantConfig(*std::find_if(variants.begin(), variants.end(), [&](const auto& v) { return v.name == name; }));
    const Weights weights = testing::randomWeights(c, 13);
    Weights zeroed = testing::randomWeights(c, 13);
    const int C = c.n_embd, D = c.headDim();
    std::fill_n(zeroed.param("h.0.attn.c_proj.weight") + (size_t)2 * D * C, (size_t)D * C, 0.0f);
    const std::string proj = "h.1.mlp.c_proj.";
    std::fill_n(zeroed.param(proj + "weight"), (size_t)c.dFF() * C, 0.0f);
    std::fill_n(zeroed.param(proj + "bias"), C, 0.0f);
    const std::vector<int> ids = testing::sequence(10, c.vocab_size, 8);
    Transformer ablated(weights, *backend);
    ablated.setInterventions(resolveInterventions(ablated, parseInterventions("0.2,1.mlp", AblationKind::Zero, c), {}, {}));
    Transformer reference(zeroed, *backend);
    const auto got = ablated.logitsFor(ids), want = reference.logitsFor(ids);
    EXPECT_LE(compare(got, want).relative(), 1e-6) << name;
    Transformer clean(weights, *backend);
    EXPECT_GT(compare(clean.logitsFor(ids), want).maxAbs, 1e-4) << name << ": the ablation must change something";
  }
}

TEST(Interventions, PatchFromTheSamePromptChangesNothingAndMeanIsThePromptMean) {
  auto backend = makeReferenceBackend();
  const ModelConfig c = testing::variantConfig(testing::architectureVariants()[0]);
  const Weights weights = testing::randomWeights(c, 14);
  Transformer model(weights, *backend);
  const std::vector<int> ids = testing::sequence(8, c.vocab_size, 2);
  Trace clean;
  const auto cleanLogits = model.logitsFor(ids, &clean, testing::componentsAndInternals(1));
  model.setInterventions(resolveInterventions(model, parseInterventions("1.1,0.mlp", AblationKind::Patch, c), ids, ids));
  EXPECT_EQ(model.logitsFor(ids), cleanLogits);  // bit-exact: the same rows go back in
  const Interventions mean = resolveInterventions(model, parseInterventions("1.3", AblationKind::Mean, c), ids, {});
  ASSERT_EQ(mean.edits.size(), 1u);
  const int C = c.n_embd, D = c.headDim();
  for (int d = 0; d < D; ++d) {
    double sum = 0;
    for (int t = 0; t < 8; ++t) sum += clean.headMix[((size_t)1 * 8 + t) * C + 3 * D + d];
    EXPECT_NEAR(mean.edits[0].values[d], sum / 8, 1e-6);
  }
  model.setInterventions(mean);
  Trace ablated;
  model.logitsFor(ids, &ablated, testing::componentsAndInternals(1));
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ablated.headMix[((size_t)1 * 8 + t) * C + 3 * D], mean.edits[0].values[0]);
  // Patch positions past the source's length are left as they are.
  model.setInterventions(resolveInterventions(model, parseInterventions("1.0", AblationKind::Patch, c), {}, testing::sequence(3, c.vocab_size, 9)));
  Trace patched;
  model.logitsFor(ids, &patched, testing::componentsAndInternals(1));
  EXPECT_NE(patched.headMix[(size_t)(8 + 2) * C], clean.headMix[(size_t)(8 + 2) * C]);
  EXPECT_EQ(patched.headMix[(size_t)(8 + 5) * C], clean.headMix[(size_t)(8 + 5) * C]);
}

TEST(Interventions, SpecsParseAndBadOnesSayWhy) {
  const ModelConfig c = testing::variantConfig(testing::architectureVariants()[0]);
  const auto specs = parseInterventions(" 1.0, 1.3,0.mlp,1.0", AblationKind::Mean, c);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(formatInterventions(specs), "1.0,1.3,0.mlp");
  EXPECT_EQ(specs[2].head, -1);
  EXPECT_EQ(specs[0].kind, AblationKind::Mean);
  EXPECT_TRUE(parseInterventions("", AblationKind::Zero, c).empty());
  for (const char* bad : {"2.0", "0.4", "x", "1", "1.", ".1", "1.0,", "-1.0", "1.mlpx", "0.0.0"}) {
    try {
      parseInterventions(bad, AblationKind::Zero, c);
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << bad;
      EXPECT_NE(std::string(e.what()).find("intervention"), std::string::npos) << e.what();
    }
  }
  ModelConfig attentionOnly = c;
  attentionOnly.attention_only = true;
  EXPECT_THROW(parseInterventions("0.mlp", AblationKind::Zero, attentionOnly), Error);
  // L.xH: a cross-attention head, only on an encoder-decoder model.
  try {
    parseInterventions("1.x2", AblationKind::Zero, c);
    ADD_FAILURE() << "a cross-attention head parsed on a decoder-only model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no cross-attention"), std::string::npos) << e.what();
  }
  ModelConfig encdec = c;
  encdec.n_encoder_layer = 1;
  encdec.decoder_start_token_id = 1;
  encdec.eos_token_id = 2;
  const auto cross = parseInterventions("1.x2,1.2,1.x2,0.x0", AblationKind::Zero, encdec);
  ASSERT_EQ(cross.size(), 3u);
  EXPECT_TRUE(cross[0].cross && cross[0].head == 2);
  EXPECT_TRUE(!cross[1].cross && cross[1].head == 2);
  EXPECT_EQ(formatInterventions(cross), "1.x2,1.2,0.x0");
  for (const char* bad : {"1.x", "1.x4", "1.xmlp", "1.x-1"}) EXPECT_THROW(parseInterventions(bad, AblationKind::Zero, encdec), Error) << bad;
  auto backend = makeReferenceBackend();
  const Weights weights = testing::randomWeights(c, 1);
  Transformer model(weights, *backend);
  EXPECT_THROW(resolveInterventions(model, parseInterventions("0.1", AblationKind::Patch, c), {}, {}), Error);  // no source
}

// Mean next-token loss over the repeated half of `ids` (the second copy, after its first token).
double repeatLoss(Transformer& model, const std::vector<int>& ids, int half) {
  const std::vector<float> logits = model.logitsFor(ids);
  const int V = model.config().vocab_size;
  double loss = 0;
  int count = 0;
  for (int t = half; t + 1 < (int)ids.size(); ++t) {
    const float* row = logits.data() + (size_t)t * V;
    const float top = *std::max_element(row, row + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp((double)row[v] - top);
    loss += std::log(sum) + top - row[ids[t + 1]];
    ++count;
  }
  return loss / count;
}

TEST(Interventions, AblatingTheInductionHeadsDestroysTheCopy) {
  LoadedModel m = loadModel(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l");
  auto backend = makeCpuBackend(1);
  Transformer model(m.weights, *backend);
  const ModelConfig& c = model.config();
  // A random prefix, then 12 random letters twice.
  std::vector<int> ids = testing::sequence(3, 52, 21), block = testing::sequence(12, 52, 22);
  ids.insert(ids.end(), block.begin(), block.end());
  const int half = static_cast<int>(ids.size());
  ids.insert(ids.end(), block.begin(), block.end());
  const double clean = repeatLoss(model, ids, half);
  model.setInterventions(resolveInterventions(model, parseInterventions("1.0,1.1,1.2,1.3", AblationKind::Zero, c), ids, {}));
  const double inductionGone = repeatLoss(model, ids, half);
  model.setInterventions(resolveInterventions(model, parseInterventions("0.1", AblationKind::Zero, c), ids, {}));
  const double otherGone = repeatLoss(model, ids, half);
  model.setInterventions(resolveInterventions(model, parseInterventions("1.0,1.1,1.2,1.3", AblationKind::Mean, c), ids, {}));
  const double inductionMean = repeatLoss(model, ids, half);
  std::printf("loss on the repeat: clean %.4f, layer-1 heads zeroed %.3f, mean-ablated %.3f, head 0.1 zeroed %.4f nats\n", clean, inductionGone,
              inductionMean, otherGone);
  EXPECT_LT(clean, 0.1);
  EXPECT_GT(inductionGone - clean, 2.0);  // several nats: the copy is gone
  EXPECT_GT(inductionMean - clean, 2.0);
  EXPECT_LT(otherGone - clean, 0.5);
}

}  // namespace
}  // namespace tscope

namespace tscope {
namespace {

// Encoder-decoder models: the cross-attention's heads are parts of the decoder's residual stream.
// The attribution's parts (self-attention heads, cross-attention heads, both biases, MLPs) sum to
// the logit, and the Inside panel's stages rebuild the final residual from the components.
// A cross-attention head's zero ablation equals the model whose rows of the cross-attention's W_O
// for that head are zero; its mean ablation puts the head's mean over the prompt in every row.
TEST(Interventions, CrossAttentionHeadAblations) {
  auto backend = makeReferenceBackend();
  ModelConfig c = testing::smallConfig(2, 4, 32, 41, 24);
  c.n_encoder_layer = 2;
  c.decoder_start_token_id = 1;
  c.eos_token_id = 2;
  c.head_dim = 6;
  const Weights weights = testing::randomWeights(c, 17);
  Weights zeroed = testing::randomWeights(c, 17);
  const int C = c.n_embd, D = c.headDim(), A = c.attnDim();
  std::fill_n(zeroed.param("h.1.crossattn.c_proj.weight") + (size_t)3 * D * C, (size_t)D * C, 0.0f);
  const std::vector<int> source = testing::sequence(7, c.vocab_size, 3), ids = testing::sequence(8, c.vocab_size, 4);
  Transformer ablated(weights, *backend), reference(zeroed, *backend), clean(weights, *backend);
  for (Transformer* m : {&ablated, &reference, &clean}) m->encode(source);
  ablated.setInterventions(resolveInterventions(ablated, parseInterventions("1.x3", AblationKind::Zero, c), {}, {}));
  EXPECT_LT(compare(ablated.logitsFor(ids), reference.logitsFor(ids)).relative(), 1e-5);
  EXPECT_GT(compare(clean.logitsFor(ids), reference.logitsFor(ids)).relative(), 1e-4) << "the head mattered";
  // Mean: every row of the head takes its clean mean; the self-attention head 3 is left alone.
  TraceOptions options;
  options.components = true;
  Trace before, after;
  clean.logitsFor(ids, &before, options);
  clean.setInterventions(resolveInterventions(clean, parseInterventions("1.x3", AblationKind::Mean, c), ids, {}));
  clean.logitsFor(ids, &after, options);
  for (int d = 0; d < D; ++d) {
    double mean = 0;
    for (int t = 0; t < 8; ++t) mean += before.crossMix[((size_t)1 * 8 + t) * A + 3 * D + d] / 8.0;
    for (int t = 0; t < 8; ++t) EXPECT_NEAR(after.crossMix[((size_t)1 * 8 + t) * A + 3 * D + d], mean, 1e-5);
  }
  EXPECT_EQ(after.headMix[(size_t)(8 + 2) * A + 3 * D], before.headMix[(size_t)(8 + 2) * A + 3 * D]);
}

TEST(Internals, EncoderDecoderAttributionCountsTheCrossAttention) {
  auto backend = makeReferenceBackend();
  struct Case {
    const char* name;
    void (*apply)(ModelConfig&);
  };
  const Case cases[] = {
      {"gpt2", [](ModelConfig&) {}},
      {"rope_swiglu_rmsnorm_gqa2_head_dim12",
       [](ModelConfig& c) {
         c.position_encoding = PositionEncoding::Rope;
         c.activation = Activation::SwiGlu;
         c.norm = NormKind::RmsNorm;
         c.n_kv_head = 2;
         c.head_dim = 12;
       }},
      {"moe3_top2",
       [](ModelConfig& c) {
         c.n_experts = 3;
         c.moe_top_k = 2;
         c.moe_capacity_factor = 0;
       }},
      {"attention_only", [](ModelConfig& c) { c.attention_only = true; }},
  };
  for (const Case& k : cases) {
    ModelConfig c = testing::smallConfig(2, 4, 32, 41, 24);
    c.n_encoder_layer = 2;
    c.decoder_start_token_id = 1;
    c.eos_token_id = 2;
    k.apply(c);
    ASSERT_EQ(validateConfig(c), "") << k.name;
    const Weights weights = testing::randomWeights(c, 21);
    Transformer model(weights, *backend);
    model.encode(testing::sequence(9, c.vocab_size, 5));
    std::vector<int> ids = testing::sequence(6, c.vocab_size, 2);
    ids[0] = c.decoder_start_token_id;
    Trace trace;
    const std::vector<float> logits = model.logitsFor(ids, &trace, testing::componentsAndInternals(1));
    ASSERT_EQ(trace.crossMix.size(), (size_t)c.n_layer * 6 * c.attnDim()) << k.name;
    double crossShare = 0;
    for (int position : {0, 5}) {
      const int token = (position * 5 + 4) % c.vocab_size;
      const LogitAttribution a = directLogitAttribution(trace, weights, position, token);
      const float logit = logits[(size_t)position * c.vocab_size + token];
      EXPECT_NEAR(a.sum(), logit, 1e-4 * std::max(1.0f, std::fabs(logit))) << k.name << " position " << position;
      ASSERT_EQ(a.crossHeads.size(), (size_t)c.n_layer * c.n_head) << k.name;
      ASSERT_EQ(a.crossBias.size(), (size_t)c.n_layer) << k.name;
      for (float v : a.crossHeads) crossShare += std::fabs(v);
    }
    EXPECT_GT(crossShare, 1e-3) << k.name << ": the cross-attention heads add nothing";
    for (int position : {0, 5}) {
      const BlockRows rows = blockRows(trace, weights, 1, position);
      ASSERT_EQ(rows.crossOut.size(), (size_t)c.n_embd) << k.name;
      const float* final = trace.finalResid.data() + (size_t)trace.rowOf(position) * c.n_embd;
      for (int i = 0; i < c.n_embd; ++i) EXPECT_NEAR(rows.residOut[i], final[i], 1e-4) << k.name << " position " << position << " " << i;
    }
  }
}

}  // namespace
}  // namespace tscope

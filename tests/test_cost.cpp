// Parameter and FLOP counts against closed forms and the published GPT-2 sizes.
#include <gtest/gtest.h>

#include "model/theory/cost.h"
#include "model/core/weights.h"
#include "tests/test_helpers.h"

using namespace tscope;

TEST(Cost, ParameterCountsMatchTheClosedForm) {
  for (auto [L, H, C, V, P] : {std::tuple{12, 12, 768, 50257, 1024}, std::tuple{3, 4, 64, 500, 128}, std::tuple{24, 16, 1024, 50257, 1024}}) {
    const ModelConfig c = tscope::testing::smallConfig(L, H, C, V, P);
    const ParamCounts p = countParameters(c);
    // 12 L C^2 + V C, plus the exact small terms: biases and LayerNorms (13 C per layer + 2 C
    // for ln_f) and the position embedding P C.
    const int64_t closedForm = 12LL * L * C * C + (int64_t)V * C + 13LL * L * C + 2LL * C + (int64_t)P * C;
    EXPECT_EQ(p.total, closedForm) << "L=" << L << " C=" << C;
    EXPECT_EQ(p.embedding + p.nonEmbedding, p.total);
    EXPECT_EQ(p.attention + p.mlp + p.layerNorm, p.nonEmbedding);
    // The weight arena holds exactly these parameters (no more, no fewer).
    size_t fromLayout = 0;
    for (const auto& s : parameterLayout(c)) fromLayout += s.numel();
    EXPECT_EQ((int64_t)fromLayout, p.total);
  }
}

TEST(Cost, Gpt2SmallHas124MParameters) {
  ModelConfig c;  // defaults are GPT-2 small
  const ParamCounts p = countParameters(c);
  EXPECT_EQ(p.total, 124439808);        // published size of GPT-2 124M (tied unembedding)
  EXPECT_EQ(p.nonEmbedding, 85056000);  // Kaplan's N for this shape
  const FlopCounts f = flopsPerToken(c, 1024);
  EXPECT_DOUBLE_EQ(f.matmulForward, 2.0 * 85056000);
  EXPECT_DOUBLE_EQ(f.attentionForward, 2.0 * 12 * 1024 * 768);
  EXPECT_DOUBLE_EQ(f.training, 3 * f.forward);
  EXPECT_DOUBLE_EQ(f.trainingCheckpointed, 4 * f.forward);
  EXPECT_EQ(kvCacheBytesPerToken(c, 2), 2 * 12 * 768 * 2);  // 36,864 bytes in 16-bit
}

// bert-base-uncased as BertForMaskedLM: 109,514,298 parameters by the published architecture (BertModel's
// 109,482,240 less the pooler's 590,592, plus the MLM head's dense 590,592, its LayerNorm 1,536 and
// output bias 30,522). tscope folds the token type table (2 x 768) into the positions, so 1,536 fewer.
TEST(Cost, BertBaseMaskedLmCountsTheHeadAndTheEmbeddingNorm) {
  ModelConfig c;
  c.vocab_size = 30522;
  c.n_positions = 512;
  c.causal = false;
  c.masked_lm = true;
  c.pre_norm = false;
  c.activation = Activation::GeluErf;
  c.embedding_norm = true;
  c.mlm_head = true;
  const ParamCounts p = countParameters(c);
  EXPECT_EQ(p.total, 109514298 - 2 * 768);
  EXPECT_EQ(p.outputHead, 768 * 768 + 768 + 2 * 768 + 30522);
  EXPECT_EQ(p.attention + p.mlp + p.layerNorm + p.outputHead, p.nonEmbedding);
  size_t fromLayout = 0;
  for (const auto& s : parameterLayout(c)) fromLayout += s.numel();
  EXPECT_EQ((int64_t)fromLayout, p.total);
}

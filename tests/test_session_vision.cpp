// The session (the app's worker, no GL) on the shipped image model digits-vit: the picture's patches
// are the snapshot's tokens, the class probabilities the sampling stages' and the trace's row 0 (as
// `Transformer::classLogits`), masked patches and a zeroed head keep the whole picture's classes as
// the "before", and what an image model cannot do (no picture, a picture of the wrong size, mean
// ablations, the shuffle, generating) is one line each.
#include <gtest/gtest.h>

#include <algorithm>

#include "app/session/session.h"
#include "app/session/vision_input.h"
#include "model/io/model_io.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "model/nn/vision_views.h"
#include "model/select/backend_select.h"
#include "tests/test_session_helpers.h"

using namespace tscope;
using namespace tscope::session;

namespace {

std::shared_ptr<const Snapshot> compute(Session& session, const Request& request) { return tscope::testing::computeSnapshot(session, request); }

const std::string kVit = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/digits-vit";

}  // namespace

TEST(SessionVision, PatchesAreTheTokensAndTheClassesAreTheForwards) {
  Session session(loadModel(kVit), "cpu");
  Request request;
  DigitCanvas canvas;
  canvas.brush(3.5f, 1.5f, false);
  canvas.brush(3.5f, 3.5f, false);
  canvas.brush(3.5f, 5.5f, false);
  request.image = canvas.ink;
  request.sampling.greedy = true;
  auto s = compute(session, request);
  ASSERT_TRUE(s && s->error.empty()) << (s ? s->error : "no snapshot");
  const ModelConfig& c = session.config();
  EXPECT_EQ(s->ids, imageTokenIds(c));
  EXPECT_EQ(s->tokenText, imageTokenLabels(c));
  EXPECT_EQ(s->tokenText[1], "(0,0)");
  EXPECT_TRUE(s->cleanLogits.empty());
  // Row 0 of the trace's logits is what classLogits gives; the sampling stages rank the classes.
  auto backend = makeBackend("cpu", 1);
  Transformer model(session.weights(), *backend);
  const std::vector<float> classes = model.classLogits(request.image);
  ASSERT_GE(s->trace.logits.size(), classes.size());
  for (size_t v = 0; v < classes.size(); ++v) EXPECT_NEAR(s->trace.logits[v], classes[v], 1e-4);
  ASSERT_EQ(s->stages.raw.size(), classes.size());
  const int top = static_cast<int>(std::max_element(classes.begin(), classes.end()) - classes.begin());
  EXPECT_EQ(static_cast<int>(std::max_element(s->stages.raw.begin(), s->stages.raw.end()) - s->stages.raw.begin()), top);
  EXPECT_TRUE(s->maps(0).has_value());
  // The direct logit attribution at [CLS] adds up to the class logit, the classifier's bias a part of it.
  Request parts = request;
  parts.components = true;
  auto withParts = compute(session, parts);
  ASSERT_TRUE(withParts && withParts->error.empty());
  const LogitAttribution dla = directLogitAttribution(withParts->trace, session.weights(), 0, top);
  EXPECT_NEAR(dla.logit, classes[top], 1e-4);
  EXPECT_NEAR(dla.sum(), dla.logit, 1e-3);
  EXPECT_EQ(dla.outputBias, session.weights().lmHeadBias[top]);

  // Masked patches and a zeroed MLP: the forward sees the blanked picture, the "before" the whole one.
  Request masked = request;
  masked.maskedPatches = {1, 5, 9, 13};
  masked.interventions = parseInterventions("3.mlp", AblationKind::Zero, c);
  auto m = compute(session, masked);
  ASSERT_TRUE(m && m->error.empty()) << (m ? m->error : "");
  ASSERT_EQ(m->cleanLogits.size(), classes.size());
  for (size_t v = 0; v < classes.size(); ++v) EXPECT_NEAR(m->cleanLogits[v], classes[v], 1e-4);
  EXPECT_NE(std::vector<float>(m->trace.logits.begin(), m->trace.logits.begin() + c.vocab_size), std::vector<float>(classes.begin(), classes.end()));
}

TEST(SessionVision, WhatAnImageModelCannotDoIsOneLine) {
  Session session(loadModel(kVit), "cpu");
  auto refused = [&](const Request& request) {
    auto s = compute(session, request);
    EXPECT_TRUE(s != nullptr);
    if (s) {
      EXPECT_EQ(s->error.find('\n'), std::string::npos) << s->error;
    }
    return s ? s->error : std::string("no snapshot");
  };
  Request request;
  EXPECT_NE(refused(request).find("draw a digit"), std::string::npos);
  request.image.assign(10, 0.5f);
  EXPECT_NE(refused(request).find("1 x 8 x 8"), std::string::npos);
  request.image.assign(64, 0.0f);
  Request mean = request;
  mean.interventions = parseInterventions("1.0", AblationKind::Mean, session.config());
  EXPECT_NE(refused(mean).find("zero ablations"), std::string::npos);
  Request shuffled = request;
  shuffled.whatIfs = parseWhatIfNames("shuffle:1");
  EXPECT_NE(refused(shuffled).find("shuffle"), std::string::npos);
  Request outside = request;
  outside.maskedPatches = {16};
  EXPECT_NE(refused(outside).find("patch 16"), std::string::npos);
  Request generate = request;
  generate.generateTokens = 3;
  EXPECT_NE(refused(generate).find("generates no tokens"), std::string::npos);
  // After all that, a good request still runs.
  auto s = compute(session, request);
  ASSERT_TRUE(s && s->error.empty()) << (s ? s->error : "");
}

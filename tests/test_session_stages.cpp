// The session's staged compute (session_stages.cpp): a request that differs from the last one only
// in what is read after the forward (the sampling knobs, beam search, the KV-cache timing) runs no
// forward, and its snapshot equals, number for number, what a fresh session computes for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "app/session/session.h"
#include "model/core/attention_variant.h"
#include "model/io/model_io.h"
#include "tests/test_session_helpers.h"

using namespace tscope;
using namespace tscope::session;

namespace {

std::shared_ptr<const Snapshot> compute(Session& session, const Request& request) { return tscope::testing::computeSnapshot(session, request); }

const std::string kModel = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/brown-small";

Request baseRequest() {
  Request request;
  request.prompt = "The jury said it did find that many of the people were";
  request.focusLayer = 0;
  return request;
}

}  // namespace

TEST(SessionStages, ASamplingKnobRunsNoForwardAndGivesTheFreshSessionsNumbers) {
  Session session(loadModel(kModel), "cpu");
  const auto first = compute(session, baseRequest());
  ASSERT_TRUE(first && first->error.empty()) << (first ? first->error : "no snapshot");
  EXPECT_GT(first->forwardMs, 0);
  Request knob = baseRequest();
  knob.sampling.temperature = 0.7f;
  knob.sampling.topK = 20;
  knob.sampling.topP = 0.8f;
  const auto after = compute(session, knob);
  ASSERT_TRUE(after && after->error.empty()) << (after ? after->error : "no snapshot");
  EXPECT_GT(after->id, first->id);
  EXPECT_EQ(after->forwardMs, 0) << "a knob change ran the forward";
  EXPECT_EQ(after->reusedTokens, static_cast<int>(after->ids.size()));
  EXPECT_EQ(after->request, knob);
  EXPECT_NE(after->stages.afterTopP, first->stages.afterTopP);  // the knobs took effect
  EXPECT_EQ(after->trace.logits, first->trace.logits);
  EXPECT_EQ(after->attention.map(0, 0, false), first->attention.map(0, 0, false));

  Session fresh(loadModel(kModel), "cpu");
  const auto expected = compute(fresh, knob);
  ASSERT_TRUE(expected && expected->error.empty());
  EXPECT_GT(expected->forwardMs, 0);
  EXPECT_EQ(after->ids, expected->ids);
  EXPECT_EQ(after->stages.raw, expected->stages.raw);
  EXPECT_EQ(after->stages.afterTemperature, expected->stages.afterTemperature);
  EXPECT_EQ(after->stages.afterTopK, expected->stages.afterTopK);
  EXPECT_EQ(after->stages.afterTopP, expected->stages.afterTopP);
}

TEST(SessionStages, BeamAndKvTimingRunAloneAndAnInvalidKnobIsOneLineThenRecovers) {
  Session session(loadModel(kModel), "cpu");
  ASSERT_TRUE(compute(session, baseRequest())->error.empty());
  Request beam = baseRequest();
  beam.beamWidth = 3;
  beam.beamSteps = 3;
  const auto withBeam = compute(session, beam);
  ASSERT_TRUE(withBeam->error.empty()) << withBeam->error;
  EXPECT_EQ(withBeam->forwardMs, 0);
  ASSERT_TRUE(withBeam->beam);
  Session fresh(loadModel(kModel), "cpu");
  const auto expected = compute(fresh, beam);
  ASSERT_TRUE(expected->beam);
  EXPECT_EQ(withBeam->beam->bestTokens, expected->beam->bestTokens);
  EXPECT_EQ(withBeam->beam->bestLogProb, expected->beam->bestLogProb);
  EXPECT_EQ(withBeam->beam->finalBeams, expected->beam->finalBeams);
  EXPECT_EQ(withBeam->beam->finalLogProbs, expected->beam->finalLogProbs);
  EXPECT_EQ(withBeam->beam->nodes.size(), expected->beam->nodes.size());
  Request timed = beam;
  timed.measureKvCache = true;
  timed.withoutCacheBudgetMs = 1;
  const auto withTiming = compute(session, timed);
  ASSERT_TRUE(withTiming->kvTiming);
  EXPECT_GT(withTiming->kvTiming->tokens, 0);
  ASSERT_TRUE(withTiming->beam);  // kept: its inputs did not change
  EXPECT_EQ(withTiming->beam->bestTokens, withBeam->beam->bestTokens);
  Request off = timed;
  off.beamWidth = 0;
  off.measureKvCache = false;
  const auto cleared = compute(session, off);
  EXPECT_FALSE(cleared->beam);
  EXPECT_FALSE(cleared->kvTiming);

  Request bad = off;
  bad.sampling.temperature = -1;
  const auto refused = compute(session, bad);
  EXPECT_NE(refused->error.find("temperature"), std::string::npos) << refused->error;
  EXPECT_EQ(refused->error.find('\n'), std::string::npos);
  const auto recovered = compute(session, off);  // after an error the forward runs again
  EXPECT_TRUE(recovered->error.empty()) << recovered->error;
  EXPECT_GT(recovered->forwardMs, 0);
  // The rerun computes the last token again on the cached prefix (IncrementalForward): the same
  // distribution to float rounding, not bit for bit, as the first forward over the whole prompt.
  ASSERT_EQ(recovered->stages.afterTopP.size(), cleared->stages.afterTopP.size());
  float largest = 0;
  for (size_t i = 0; i < cleared->stages.afterTopP.size(); ++i)
    largest = std::max(largest, std::abs(recovered->stages.afterTopP[i] - cleared->stages.afterTopP[i]));
  EXPECT_LT(largest, 1e-6f);
}

// sameForward: only the knobs read after the forward may differ; every other field, including
// each knob of an efficient-attention variant, asks for another forward.
TEST(SessionStages, EveryOtherFieldIsAnInputOfTheForward) {
  const Request a = baseRequest();
  Request b = a;
  b.sampling.seed = 9;
  b.sampling.greedy = true;
  b.beamWidth = 4;
  b.beamSteps = 7;
  b.measureKvCache = true;
  b.withoutCacheBudgetMs = 5;
  b.generateTokens = 2;
  EXPECT_TRUE(sameForward(a, b));
  auto differs = [&](auto change) {
    Request c = a;
    change(c);
    return !sameForward(a, c) && !sameForward(c, a);
  };
  EXPECT_TRUE(differs([](Request& r) { r.prompt += " x"; }));
  EXPECT_TRUE(differs([](Request& r) { r.focusLayer = 1; }));
  EXPECT_TRUE(differs([](Request& r) { r.mapMemoryBytes /= 2; }));
  EXPECT_TRUE(differs([](Request& r) { r.source = "s"; }));
  EXPECT_TRUE(differs([](Request& r) { r.moeTopK = 2; }));
  EXPECT_TRUE(differs([](Request& r) { r.moeCapacityFactor = 1.5; }));
  EXPECT_TRUE(differs([](Request& r) { r.moeExpertChoice = true; }));
  EXPECT_TRUE(differs([](Request& r) { r.inspectLayer = 1; }));
  EXPECT_TRUE(differs([](Request& r) { r.variantLayer = 2; }));
  EXPECT_TRUE(differs([](Request& r) { r.generatedIds = {1}; }));
  EXPECT_TRUE(differs([](Request& r) { r.components = true; }));
  EXPECT_TRUE(differs([](Request& r) { r.inspectRow = 3; }));
  EXPECT_TRUE(differs([](Request& r) { r.interventions.push_back(InterventionSpec{}); }));
  EXPECT_TRUE(differs([](Request& r) { r.patchSource = "p"; }));
  EXPECT_TRUE(differs([](Request& r) { r.attentionVariant = AttentionVariantParams{}; }));
  Request variant = a;
  variant.attentionVariant = AttentionVariantParams{};
  for (const AttentionKnob& knob : attentionKnobs()) {
    Request c = variant;
    (*c.attentionVariant).*knob.member += 1;
    EXPECT_FALSE(sameForward(variant, c)) << knob.name;
  }
  Request seeded = variant;
  seeded.attentionVariant->seed += 1;
  EXPECT_FALSE(sameForward(variant, seeded));
  Request projection = variant;
  projection.attentionVariant->linformerProjection = LinformerProjection::Gaussian;
  EXPECT_FALSE(sameForward(variant, projection));
}

// A snapshot keeps no capacity of the attention inputs it hands back to the session (a cleared
// vector keeps its memory: 64 MiB per snapshot on GPT-2 at 1000 tokens, freed on the UI thread).
TEST(SessionStages, ASnapshotHoldsNoMemoryOfTheKeptAttentionInputs) {
  Session session(loadModel(kModel), "cpu");
  const auto whole = compute(session, baseRequest());
  ASSERT_TRUE(whole->error.empty()) << whole->error;
  Request capped = baseRequest();
  capped.mapMemoryBytes = layerMapBytes(whole->trace.H, whole->trace.T, whole->trace.Tk);  // one layer's maps: the others keep their inputs
  const auto snapshot = compute(session, capped);
  ASSERT_TRUE(snapshot->error.empty()) << snapshot->error;
  EXPECT_FALSE(snapshot->trace.inputLayers.empty()) << "the cap left no layer out: the test checks nothing";
  EXPECT_EQ(snapshot->trace.attnInputs.capacity(), 0u);
}

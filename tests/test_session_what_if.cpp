// What-ifs in the session (the toolbar's What-if menu): the snapshot is the changed forward (no
// causal mask: the maps see the future; the shuffle: the model reads a permutation of the prompt's
// tokens, with the order in the snapshot), a what-if that does not fit the model is one line and the
// next request without it works, generation refuses a shuffle, and session files keep the list.
#include <gtest/gtest.h>

#include <algorithm>

#include "app/session/session.h"
#include "app/session/session_file.h"
#include "model/core/error.h"
#include "model/io/model_io.h"
#include "tests/test_session_helpers.h"

using namespace tscope;
using namespace tscope::session;

namespace {

std::shared_ptr<const Snapshot> compute(Session& session, const Request& request) { return tscope::testing::computeSnapshot(session, request); }

class SessionWhatIf : public ::testing::Test {
 protected:
  void SetUp() override {
    session = std::make_unique<Session>(loadModel(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l"), "cpu");
    base.prompt = "ZXqwertyuiopqwert";
    base.sampling.greedy = true;
  }
  std::unique_ptr<Session> session;
  Request base;
};

TEST_F(SessionWhatIf, NoCausalMaskLetsTheMapsSeeTheFuture) {
  auto clean = compute(*session, base);
  ASSERT_TRUE(clean && clean->error.empty()) << (clean ? clean->error : "");
  const auto maps = clean->maps(0);
  ASSERT_TRUE(maps);
  EXPECT_EQ(maps->rows->map(maps->index, 0, false)[1], 0.0f);  // row 0 cannot see key 1
  Request unmasked = base;
  unmasked.whatIfs = parseWhatIfs("no-causal-mask", session->config());
  auto changed = compute(*session, unmasked);
  ASSERT_TRUE(changed && changed->error.empty()) << (changed ? changed->error : "");
  const auto seen = changed->maps(0);
  ASSERT_TRUE(seen);
  EXPECT_GT(seen->rows->map(seen->index, 0, false)[1], 0.0f);
  EXPECT_NE(changed->trace.logits, clean->trace.logits);
  EXPECT_EQ(changed->reusedTokens, 0);
  // Back to the model as trained: the first snapshot's numbers again.
  auto back = compute(*session, base);
  ASSERT_TRUE(back && back->error.empty());
  EXPECT_EQ(back->trace.logits, clean->trace.logits);
}

TEST_F(SessionWhatIf, TheShuffleReordersTheTokensTheModelReads) {
  auto clean = compute(*session, base);
  ASSERT_TRUE(clean && clean->error.empty());
  Request shuffled = base;
  shuffled.whatIfs = parseWhatIfs("shuffle:5", session->config());
  auto s = compute(*session, shuffled);
  ASSERT_TRUE(s && s->error.empty()) << (s ? s->error : "");
  ASSERT_EQ(s->shuffleOrder.size(), clean->ids.size());
  for (size_t i = 0; i < s->ids.size(); ++i) {
    EXPECT_EQ(s->ids[i], clean->ids[s->shuffleOrder[i]]);
    EXPECT_EQ(s->tokenText[i], clean->tokenText[s->shuffleOrder[i]]);
  }
  EXPECT_NE(s->ids, clean->ids);
  Request generate = shuffled;
  generate.generateTokens = 3;
  auto refused = compute(*session, generate);
  ASSERT_TRUE(refused && refused->generation);
  EXPECT_NE(refused->generation->stopReason.find("cannot generate: the shuffle what-if is on"), std::string::npos) << refused->generation->stopReason;
  EXPECT_TRUE(refused->generation->newIds.empty());
}

TEST_F(SessionWhatIf, AWhatIfThatDoesNotFitIsOneLine) {
  Request bad = base;
  bad.whatIfs = parseWhatIfNames("skip-mlp:0");  // induction-2l is attention-only
  auto s = compute(*session, bad);
  ASSERT_TRUE(s);
  EXPECT_NE(s->error.find("attention-only"), std::string::npos) << s->error;
  EXPECT_EQ(s->error.find('\n'), std::string::npos);
  auto fine = compute(*session, base);
  ASSERT_TRUE(fine && fine->error.empty()) << fine->error;
  WhatIfs kept = bad.whatIfs;
  EXPECT_NE(keepFittingWhatIfs(kept, session->config()).find("attention-only"), std::string::npos);
  EXPECT_TRUE(kept.empty());
}

TEST(SessionFileWhatIf, KeptAndABadListIsAWarning) {
  SessionFile file;
  file.state.whatIfs = parseWhatIfNames("no-positions,uniform-attention:1,shuffle:9");
  const SessionFile back = sessionFileFromJsonText("s.json", sessionFileToJsonText(file));
  EXPECT_EQ(back.state.whatIfs, file.state.whatIfs);
  EXPECT_TRUE(back.warning.empty()) << back.warning;
  const SessionFile bad = sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "what_ifs": "no-positions,no-brain"})");
  EXPECT_TRUE(bad.state.whatIfs.empty());
  EXPECT_NE(bad.warning.find("what_ifs"), std::string::npos) << bad.warning;
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "what_ifs": 3})"), Error);
}

}  // namespace

// The session (the app's worker, no GL) with the Inside-the-block panel's requests: the internals
// of the inspected layer and the components arrive in the snapshot, interventions change the
// prediction and generation while the clean logits stay available, and a patch without a source
// prompt is one clear line, not a crash. Driven on induction-2l, whose copy the ablation breaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "app/session/session.h"
#include "tests/test_session_helpers.h"
#include "model/io/model_io.h"
#include "model/nn/trace_views.h"

using namespace tscope;
using namespace tscope::session;

namespace {

std::shared_ptr<const Snapshot> compute(Session& session, const Request& request) { return tscope::testing::computeSnapshot(session, request); }

int argmax(const std::vector<float>& v) { return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin()); }

class SessionInterventions : public ::testing::Test {
 protected:
  void SetUp() override {
    session = std::make_unique<Session>(loadModel(std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l"), "cpu");
    base.prompt = "ZXqwertyuiopqwert";  // continues "yuiopqw" (assets/models/README.md)
    base.sampling.greedy = true;
  }
  std::unique_ptr<Session> session;
  Request base;
};

TEST_F(SessionInterventions, InternalsArriveAndAblationChangesThePredictionButNotTheCleanOne) {
  Request inspect = base;
  inspect.components = true;
  inspect.inspectLayer = 1;
  auto clean = compute(*session, inspect);
  ASSERT_TRUE(clean && clean->error.empty()) << (clean ? clean->error : "no snapshot");
  const int y = session->tokenizer()->encode("y").at(0);
  EXPECT_EQ(argmax(clean->trace.logits), y);
  EXPECT_TRUE(clean->cleanLogits.empty());
  EXPECT_EQ(clean->trace.internalLayers, std::vector<int>{1});
  EXPECT_FALSE(clean->trace.q.empty());
  const int T = static_cast<int>(clean->ids.size());
  const LogitAttribution dla = directLogitAttribution(clean->trace, session->weights(), T - 1, y);
  EXPECT_NEAR(dla.sum(), dla.logit, 1e-3);

  Request ablate = inspect;
  ablate.interventions = parseInterventions("1.0,1.1,1.2,1.3", AblationKind::Zero, session->config());
  auto ablated = compute(*session, ablate);
  ASSERT_TRUE(ablated && ablated->error.empty()) << (ablated ? ablated->error : "");
  ASSERT_EQ(ablated->cleanLogits.size(), clean->trace.logits.size());
  EXPECT_EQ(argmax(ablated->cleanLogits), y);
  EXPECT_NE(argmax(ablated->trace.logits), y);
  // The ablated heads' outputs are zero in the inspected trace.
  EXPECT_TRUE(
      std::all_of(ablated->trace.headMix.begin() + (size_t)T * ablated->trace.A, ablated->trace.headMix.end(), [](float v) { return v == 0.0f; }));

  // An edit with the same interventions reuses the prefix of both the ablated and the clean run.
  Request edited = ablate;
  edited.prompt += "y";
  auto again1 = compute(*session, edited);
  ASSERT_TRUE(again1);
  EXPECT_EQ(again1->error, "");
  EXPECT_GT(again1->reusedTokens, 0);
  EXPECT_EQ(again1->cleanLogits.size(), clean->trace.logits.size());
  // Generation follows the ablated model, and a cleared ablation gives the copy back.
  Request generate = ablate;
  generate.generateTokens = 3;
  auto generated = compute(*session, generate);
  ASSERT_TRUE(generated && generated->generation);
  EXPECT_EQ(generated->error, "");
  EXPECT_NE(generated->request.prompt, base.prompt + "yui");
  Request cleared = base;
  cleared.generateTokens = 3;
  auto again = compute(*session, cleared);
  ASSERT_TRUE(again && again->generation);
  EXPECT_EQ(again->request.prompt, base.prompt + "yui");
}

TEST_F(SessionInterventions, PatchWithoutASourceIsOneLineAndTheNextRequestWorks) {
  Request patch = base;
  patch.patchSource.clear();  // (a request starts with AppState's example source prompt)
  patch.interventions = parseInterventions("1.0", AblationKind::Patch, session->config());
  auto failed = compute(*session, patch);
  ASSERT_TRUE(failed);
  EXPECT_NE(failed->error.find("source prompt"), std::string::npos) << failed->error;
  EXPECT_EQ(failed->error.find('\n'), std::string::npos);
  patch.patchSource = "ZXasdfghjklasdfg";
  auto patched = compute(*session, patch);
  ASSERT_TRUE(patched && patched->error.empty()) << (patched ? patched->error : "");
  EXPECT_EQ(patched->patchSourceIds.size(), 16u);
  EXPECT_FALSE(patched->cleanLogits.empty());
  auto plain = compute(*session, base);
  ASSERT_TRUE(plain && plain->error.empty());
  EXPECT_TRUE(plain->cleanLogits.empty());
  EXPECT_EQ(argmax(plain->trace.logits), session->tokenizer()->encode("y").at(0));
}

}  // namespace

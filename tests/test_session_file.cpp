// Session files keep the interventions, the patch source and the ablation kind: a round trip
// restores them; a bad intervention entry is left out with one line naming it, the rest kept; a
// bad field elsewhere refuses the file with one line. The Efficient-attention panel's variant and
// knobs round-trip; a bad name or knob keeps the defaults with one line. So do the Translation
// panel's source and encoder map selection.
#include <gtest/gtest.h>

#include "app/session/session_file.h"
#include "model/core/error.h"

using namespace tscope;
using namespace tscope::session;

TEST(SessionFile, InterventionsSurviveARoundTrip) {
  SessionFile session;
  session.state.panel = PanelId::Inside;
  session.state.interventions = {{1, 0, AblationKind::Zero}, {0, -1, AblationKind::Mean}, {1, 3, AblationKind::Patch}};
  session.state.patchSource = "a second prompt";
  session.state.ablationKind = AblationKind::Mean;
  const SessionFile back = sessionFileFromJsonText("s.json", sessionFileToJsonText(session));
  EXPECT_EQ(back.state.interventions, session.state.interventions);
  EXPECT_EQ(back.state.patchSource, "a second prompt");
  EXPECT_EQ(back.state.ablationKind, AblationKind::Mean);
  EXPECT_EQ(back.state.panel, PanelId::Inside);
  EXPECT_EQ(back.warning, "");
  EXPECT_EQ(sessionFileToJsonText(back), sessionFileToJsonText(session));
}

TEST(SessionFile, BadInterventionEntriesAreLeftOutWithOneLine) {
  const SessionFile s = sessionFileFromJsonText(
      "s.json", R"({"tscope_session": 1, "interventions": [{"layer": 1, "head": 2, "kind": "zero"}, {"layer": -1, "head": 0, "kind": "zero"},
                    {"layer": 0, "head": "mlp", "kind": "mean"}, {"layer": 0, "head": 1, "kind": "melt"}, 7,
                    {"layer": 1, "head": 2, "kind": "zero"}]})");
  ASSERT_EQ(s.state.interventions.size(), 2u);  // the duplicate is dropped too
  EXPECT_EQ(s.state.interventions[0], (InterventionSpec{1, 2, AblationKind::Zero}));
  EXPECT_EQ(s.state.interventions[1], (InterventionSpec{0, -1, AblationKind::Mean}));
  EXPECT_NE(s.warning.find("interventions[1]: 'layer'"), std::string::npos) << s.warning;
  EXPECT_NE(s.warning.find("[3]"), std::string::npos) << s.warning;
  EXPECT_NE(s.warning.find("[4]"), std::string::npos) << s.warning;
  EXPECT_EQ(s.warning.find('\n'), std::string::npos);
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "interventions": "1.0"})"), Error);
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "ablation_kind": "half"})"), Error);
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "patch_source": 3})"), Error);
}

TEST(SessionFile, EfficientAttentionChoicesSurviveARoundTrip) {
  SessionFile session;
  session.state.panel = PanelId::Efficient;
  session.state.attentionVariant.variant = AttentionVariant::Linformer;
  session.state.attentionVariant.projected = 32;
  session.state.attentionVariant.linformerProjection = LinformerProjection::Gaussian;
  session.state.attentionVariant.buckets = 16;
  session.state.attentionVariant.rounds = 3;
  session.state.variantAllLayers = true;
  const SessionFile back = sessionFileFromJsonText("s.json", sessionFileToJsonText(session));
  EXPECT_EQ(back.state.panel, PanelId::Efficient);
  EXPECT_EQ(back.state.attentionVariant.variant, AttentionVariant::Linformer);
  EXPECT_EQ(back.state.attentionVariant.projected, 32);
  EXPECT_EQ(back.state.attentionVariant.linformerProjection, LinformerProjection::Gaussian);
  EXPECT_EQ(back.state.attentionVariant.buckets, 16);
  EXPECT_EQ(back.state.attentionVariant.rounds, 3);
  EXPECT_TRUE(back.state.variantAllLayers);
  EXPECT_EQ(back.warning, "");
  EXPECT_EQ(sessionFileToJsonText(back), sessionFileToJsonText(session));
}

TEST(SessionFile, BadEfficientAttentionChoicesKeepTheDefaultsWithOneLine) {
  const AttentionVariantParams defaults = AppState{}.attentionVariant;
  for (const char* efficient :
       {R"({"variant": "sparse", "window": 9})", R"({"variant": "lsh", "buckets": 0})", R"({"variant": "linformer", "projection": "learned"})"}) {
    const SessionFile s =
        sessionFileFromJsonText("s.json", std::string(R"({"tscope_session": 1, "prompt": "kept", "efficient": )") + efficient + "}");
    EXPECT_EQ(s.state.prompt, "kept") << efficient;
    EXPECT_EQ(s.state.attentionVariant.variant, defaults.variant) << efficient;
    EXPECT_EQ(s.state.attentionVariant.window, defaults.window) << efficient;
    EXPECT_EQ(s.state.attentionVariant.buckets, defaults.buckets) << efficient;
    EXPECT_NE(s.warning.find("efficient: "), std::string::npos) << s.warning;
    EXPECT_EQ(s.warning.find('\n'), std::string::npos) << s.warning;
  }
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "efficient": 3})"), Error);
  EXPECT_THROW(sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "efficient": {"window": "wide"}})"), Error);
}

// The Translation panel's source and encoder map selection come back; a negative one is refused in one line.
TEST(SessionFile, TheSourceAndTheEncoderSelectionSurviveARoundTrip) {
  SessionFile session;
  session.state.panel = PanelId::Translation;
  session.state.source = "may first twenty ten";
  session.state.encoderLayer = 1;
  session.state.encoderHead = 3;
  const SessionFile back = sessionFileFromJsonText("s.json", sessionFileToJsonText(session));
  EXPECT_EQ(back.state.source, "may first twenty ten");
  EXPECT_EQ(back.state.encoderLayer, 1);
  EXPECT_EQ(back.state.encoderHead, 3);
  EXPECT_EQ(back.state.panel, PanelId::Translation);
  for (const char* field : {"encoder_layer", "encoder_head"}) {
    try {
      sessionFileFromJsonText("s.json", std::string(R"({"tscope_session": 1, ")") + field + R"(": -2})");
      ADD_FAILURE() << field << " -2 was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(field), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// A cross-attention head's intervention keeps its "cross" flag; a bad flag is left out with one line.
TEST(SessionFile, CrossAttentionInterventionsSurviveARoundTrip) {
  SessionFile session;
  InterventionSpec cross{1, 2, AblationKind::Zero};
  cross.cross = true;
  session.state.interventions = {cross, {1, 2, AblationKind::Zero}};
  const SessionFile back = sessionFileFromJsonText("s.json", sessionFileToJsonText(session));
  EXPECT_EQ(back.state.interventions, session.state.interventions);
  const SessionFile bad =
      sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "interventions": [{"layer": 0, "head": 1, "kind": "zero", "cross": "yes"},
                                                           {"layer": 0, "head": "mlp", "kind": "zero", "cross": true}]})");
  EXPECT_TRUE(bad.state.interventions.empty());
  EXPECT_NE(bad.warning.find("'cross'"), std::string::npos) << bad.warning;
  EXPECT_EQ(bad.warning.find('\n'), std::string::npos) << bad.warning;
}

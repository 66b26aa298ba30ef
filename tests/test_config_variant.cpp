// config.json's attention_variant and its knobs: read, written back, and refused with one line
// naming the problem (an unknown variant or knob, a knob of another variant, a bad value, a
// combination the variant cannot honour).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/core/config.h"
#include "model/core/error.h"
#include "test_helpers.h"

using namespace tscope;
using nlohmann::json;
using tscope::testing::smallConfig;

namespace {

// The one-line message configFromJson throws for `fields` added to a small valid config.
std::string problemOf(const json& fields) {
  json j = configToJson(smallConfig(2, 4, 32, 41, 24));
  j.update(fields);
  try {
    configFromJson(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ModelConfig parsed(const json& fields) {
  json j = configToJson(smallConfig(2, 4, 32, 41, 24));
  j.update(fields);
  return configFromJson(j);
}

}  // namespace

TEST(ConfigVariant, ReadsTheVariantAndItsKnobs) {
  const ModelConfig c =
      parsed({{"attention_variant", "linformer"}, {"attention_variant_knobs", {{"projected", 6}, {"projection", "gaussian"}, {"seed", 9}}}});
  EXPECT_EQ(c.attention_variant.variant, AttentionVariant::Linformer);
  EXPECT_EQ(c.attention_variant.projected, 6);
  EXPECT_EQ(c.attention_variant.linformerProjection, LinformerProjection::Gaussian);
  EXPECT_EQ(c.attention_variant.seed, 9u);
  EXPECT_TRUE(c.hasVariantAttention());
  EXPECT_EQ(c.slidingWindow(), 0);

  const ModelConfig exact = parsed(json::object());
  EXPECT_EQ(exact.attention_variant.variant, AttentionVariant::Exact);
  EXPECT_FALSE(exact.hasVariantAttention());
  EXPECT_FALSE(configToJson(exact).contains("attention_variant"));  // HF GPT-2 configs stay as they were
}

TEST(ConfigVariant, TheWindowVariantIsTheModelsSlidingWindow) {
  const ModelConfig c = parsed({{"attention_variant", "window"}, {"attention_variant_knobs", {{"window", 5}}}});
  EXPECT_EQ(c.slidingWindow(), 5);
  EXPECT_FALSE(c.hasVariantAttention());  // the backends' own windowed attention computes it
  EXPECT_EQ(parsed({{"attention_window", 7}}).slidingWindow(), 7);
  // Both spellings at once must agree.
  EXPECT_EQ(parsed({{"attention_variant", "window"}, {"attention_variant_knobs", {{"window", 5}}}, {"attention_window", 5}}).slidingWindow(), 5);
  EXPECT_NE(problemOf({{"attention_variant", "window"}, {"attention_variant_knobs", {{"window", 5}}}, {"attention_window", 6}}).find("disagree"),
            std::string::npos);
}

TEST(ConfigVariant, EveryVariantRoundTripsThroughJson) {
  for (AttentionVariant variant : allAttentionVariants()) {
    ModelConfig c = smallConfig(2, 4, 32, 41, 24);
    c.attention_variant.variant = variant;
    c.attention_variant.tile = 3;
    c.attention_variant.window = 4;
    c.attention_variant.buckets = 5;
    c.attention_variant.rounds = 2;
    c.attention_variant.chunk = 6;
    c.attention_variant.projected = 7;
    c.attention_variant.features = 8;
    c.attention_variant.seed = 42;
    ASSERT_EQ(validateConfig(c), "") << attentionVariantName(variant);
    const json written = configToJson(c);
    const ModelConfig back = configFromJson(json::parse(written.dump()));
    EXPECT_EQ(back.attention_variant.variant, variant);
    // The variant's own knobs come back; the others keep their defaults (they are not written).
    for (const AttentionKnob& knob : attentionKnobs()) {
      const int expected = knob.variant == variant ? c.attention_variant.*(knob.member) : AttentionVariantParams{}.*(knob.member);
      EXPECT_EQ(back.attention_variant.*(knob.member), expected) << attentionVariantName(variant) << " " << knob.name;
    }
    EXPECT_EQ(configToJson(back), written) << attentionVariantName(variant);
  }
}

TEST(ConfigVariant, BadVariantsAndKnobsAreOneLineNamingThem) {
  EXPECT_EQ(problemOf({{"attention_variant", "sparse"}}),
            "attention_variant 'sparse' is not one of: exact, flash, window, lsh, linformer, linear, performer");
  EXPECT_EQ(problemOf({{"attention_variant", "linear"}, {"attention_variant_knobs", {{"buckets", 4}}}}),
            "attention_variant_knobs.buckets is a knob of lsh, not of linear");
  EXPECT_EQ(problemOf({{"attention_variant", "lsh"}, {"attention_variant_knobs", {{"bucket", 4}}}}),
            "attention_variant_knobs has an unknown knob 'bucket'");
  EXPECT_EQ(problemOf({{"attention_variant", "lsh"}, {"attention_variant_knobs", {{"buckets", 0}}}}),
            "attention_variant_knobs: lsh buckets must be 1 .. 1024, not 0");
  EXPECT_NE(problemOf({{"attention_variant", "lsh"}, {"attention_variant_knobs", {{"buckets", "four"}}}}).find("buckets"), std::string::npos);
  EXPECT_NE(problemOf({{"attention_variant", "linformer"}, {"attention_variant_knobs", {{"projection", "random"}}}}).find("pool, gaussian"),
            std::string::npos);
  EXPECT_NE(problemOf({{"attention_variant", "linear"}, {"attention_variant_knobs", "fast"}}).find("must be an object"), std::string::npos);
  EXPECT_NE(problemOf({{"attention_variant", 3}}).find("attention_variant"), std::string::npos);
}

TEST(ConfigVariant, CombinationsAVariantCannotHonourAreRefused) {
  const std::string alibi = problemOf({{"attention_variant", "linear"}, {"position_encoding", "alibi"}});
  EXPECT_NE(alibi.find("ALiBi"), std::string::npos) << alibi;
  EXPECT_NE(problemOf({{"attention_variant", "flash"}, {"position_encoding", "alibi"}}).find("ALiBi"), std::string::npos);
  const std::string window = problemOf({{"attention_variant", "linformer"}, {"attention_window", 4}});
  EXPECT_NE(window.find("attention_window must be 0"), std::string::npos) << window;
  // Exact and window keep ALiBi and the rest of the lab.
  EXPECT_EQ(problemOf({{"attention_variant", "window"}, {"attention_variant_knobs", {{"window", 4}}}, {"position_encoding", "alibi"}}), "");
  EXPECT_EQ(problemOf({{"attention_variant", "linear"}, {"position_encoding", "rope"}, {"n_kv_head", 2}}), "");
}

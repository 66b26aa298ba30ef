// tscope-cli published end to end: the slides' tables as the panels report them, the training
// cost at a typed price and sustained FLOP/s, and a one-line error for a bad flag value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/theory/cost.h"
#include "model/theory/presets.h"
#include "model/theory/slide_tables.h"
#include "tests/test_files.h"

using nlohmann::json;
using tscope::testing::CliRun;
using tscope::testing::runCli;

TEST(CliPublished, TablesAndCostsAtTheGivenPrices) {
  tscope::testing::ScratchDir dir("tscope_published");
  const CliRun defaults = runCli("published", dir);
  ASSERT_EQ(defaults.exitCode, 0) << defaults.err;
  const json d = json::parse(defaults.out);
  ASSERT_EQ(d["table2"].size(), tscope::vaswaniTable2().size());
  EXPECT_EQ(d["table2"][9]["bleu_en_de"], 28.4);
  EXPECT_TRUE(d["table2"][0]["bleu_en_fr"].is_null());
  EXPECT_EQ(d["switch_c"]["total"], tscope::countParameters(tscope::presetConfig(tscope::switchCPreset())).total);
  // The slide's GPT-3 specifications beside Table 2.1: the slide's Large is the paper's XL.
  const json& specs = d["gpt3_specs"];
  ASSERT_EQ(specs["columns"].size(), 4u);
  EXPECT_EQ(specs["columns"][2]["slide"], "Large");
  EXPECT_EQ(specs["columns"][2]["paper"], "GPT-3 XL");
  ASSERT_EQ(specs["rows"].size(), tscope::gpt3SlideSpecs().size());
  const json& rate175 = specs["rows"][7]["cells"][3];
  EXPECT_EQ(specs["rows"][7]["label"], "Learning Rate");
  EXPECT_EQ(rate175["slide"], "1.2e-4");
  EXPECT_DOUBLE_EQ(rate175["paper"].get<double>(), 0.6e-4);
  EXPECT_TRUE(rate175["differs"].get<bool>());
  EXPECT_TRUE(specs["rows"][8]["cells"][0]["paper"].is_null());  // LAMBADA: not checked
  EXPECT_FALSE(specs["rows"][8]["cells"][0]["checked"].get<bool>());
  const json& gpt3 = d["training_cost"]["runs"][2];
  EXPECT_EQ(gpt3["name"], "GPT-3 175B");
  EXPECT_NEAR(gpt3["dollars"].get<double>() / 4.6e6, 1.0, 0.03);  // the slide's $4.6M at Lambda's prices
  // Twice the price and twice the FLOP/s: the same dollars, half the GPU-hours.
  const CliRun doubled = runCli("published --price 3 --gpu-tflops 56", dir);
  ASSERT_EQ(doubled.exitCode, 0) << doubled.err;
  const json parsed = json::parse(doubled.out);
  const json& g2 = parsed["training_cost"]["runs"][2];
  EXPECT_NEAR(g2["gpu_hours"].get<double>(), gpt3["gpu_hours"].get<double>() / 2, 1e-6 * gpt3["gpu_hours"].get<double>());
  EXPECT_NEAR(g2["dollars"].get<double>(), gpt3["dollars"].get<double>(), 1e-6 * gpt3["dollars"].get<double>());
  const CliRun bad = runCli("published --price 0", dir);
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_NE(bad.err.find("price"), std::string::npos) << bad.err;
}

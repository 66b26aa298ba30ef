// Inputs the fuzz targets (tests/fuzz/) found, or that writing them exposed, each fed to the parser
// that failed on it: every one must now be refused with one tscope::Error line naming the problem
// instead of an uncaught nlohmann exception, undefined behaviour or a silently wrong value.
// The same inputs are in the fuzz seed corpus as tests/fuzz/corpus/<target>/regression-*.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/session/lesson.h"
#include "app/session/session_file.h"
#include "model/core/config.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/model_io.h"
#include "model/io/safetensors.h"
#include "model/tokenize/tokenizer.h"
#include "model/train/trainer.h"
#include "test_files.h"

namespace tscope {
namespace {

using testing::errorMessage;
using testing::expectMentions;
using testing::ScratchDir;

std::string corpusFile(const std::string& target, const std::string& name) {
  return testing::readBytes(std::string(TSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/" + target + "/" + name);
}

// fuzz_session_file: a number too large for a double ("1e400") made nlohmann throw out_of_range,
// which the loader did not catch (it caught parse_error only), so opening the file ended the app.
TEST(FuzzRegressions, SessionFileWithAnOverflowingNumberIsRefused) {
  const std::string input = corpusFile("session_file", "regression-number-overflow");
  ASSERT_FALSE(input.empty());
  expectMentions(errorMessage([&] { session::sessionFileFromJsonText("found.json", input); }), {"found.json", "not a session file", "1e400"});
  expectMentions(errorMessage([] { session::sessionFileFromJsonText("s.json", R"({"tscope_session": 1, "temperature": 1e400})"); }),
                 {"s.json", "not a session file"});
}

// fuzz_config: the same overflow in config.json escaped loadModel as an nlohmann exception.
TEST(FuzzRegressions, ConfigJsonWithAnOverflowingNumberIsRefused) {
  ScratchDir dir;
  testing::writeBytes(dir.file("config.json"), R"({"n_layer": 2, "layer_norm_epsilon": 1e400})");
  expectMentions(errorMessage([&] { loadModel(dir.path().string()); }), {"config.json", "malformed JSON", "1e400"});
  testing::writeBytes(dir.file("config.json"), corpusFile("config", "regression-number-overflow"));
  expectMentions(errorMessage([&] { loadModel(dir.path().string()); }), {"config.json", "malformed JSON"});
}

// fuzz_config (CI, 2026-11-28): reading a config computed its effective d_ff (4 * n_embd) before
// validation, so an n_embd of 1681300086 overflowed an int (undefined behaviour under UBSan)
// instead of being refused as out of range.
TEST(FuzzRegressions, ConfigTooWideForItsDefaultFeedForwardIsRefused) {
  const std::string input = corpusFile("config", "regression-dff-overflow");
  ASSERT_FALSE(input.empty());
  expectMentions(errorMessage([&] { configFromJson(nlohmann::json::parse(input)); }), {"n_embd", "1681300086"});
  expectMentions(errorMessage([] { configFromJson({{"n_layer", 2}, {"n_head", 1}, {"n_embd", 2147483647}, {"n_kv_head", 0}}); }), {"n_embd"});
}

// Found while writing the fuzz targets' round-trip checks: nlohmann's get<int>() truncated 12.5,
// wrapped 4294967297 to 1 (a 1-layer model from a file that asked for 2^32 + 1) and cast 1e10 to
// int (undefined behaviour); an infinite value was accepted and written back as null.
TEST(FuzzRegressions, ConfigIntegersMustBeExact) {
  auto refusal = [](const nlohmann::json& json) { return errorMessage([&] { configFromJson(json); }); };
  expectMentions(refusal({{"n_layer", 4294967297ull}}), {"n_layer", "out of range", "4294967297"});
  expectMentions(refusal({{"n_layer", 1e10}}), {"n_layer", "out of range"});
  expectMentions(refusal({{"n_layer", 12.5}}), {"n_layer", "not an integer", "12.5"});
  expectMentions(refusal({{"n_head", -1e300}}), {"n_head", "out of range"});
  expectMentions(refusal({{"position_base", std::numeric_limits<double>::infinity()}}), {"position_base", "finite"});
  expectMentions(refusal({{"causal", 1}}), {"causal", "not true or false"});
  expectMentions(refusal({{"norm", 3}}), {"norm", "not a string"});
  EXPECT_EQ(configFromJson({{"n_layer", 4.0}}).n_layer, 4);  // a whole number written as a float is fine
}

// Found while writing the fuzz targets: config.json's sizes allocated the weight arena before the
// safetensors file was checked against them, so a valid but huge config beside a small file asked
// for about a terabyte (bad_alloc, or the out-of-memory killer) instead of naming the mismatch.
TEST(FuzzRegressions, HugeConfigBesideASmallFileIsRefusedBeforeAllocating) {
  ScratchDir dir;
  testing::writeBytes(dir.file("config.json"), R"({"n_layer": 1024, "n_head": 1, "n_embd": 65536, "vocab_size": 4194304, "n_positions": 1048576})");
  const std::vector<float> small = {1, 2, 3, 4};
  writeSafetensors(dir.file("model.safetensors"), {{"wte.weight", {2, 2}, small.data()}});
  expectMentions(errorMessage([&] { loadModel(dir.path().string()); }),
                 {"model.safetensors", "tensor 'wte.weight' has shape [2, 2] but the config needs [4194304, 65536]"});
}

TEST(FuzzRegressions, TrainConfigIntegersMustBeExact) {
  auto refusal = [](const nlohmann::json& json) { return errorMessage([&] { trainConfigFromJson(json); }); };
  expectMentions(refusal({{"train", {{"batch", 1e10}}}}), {"train config", "batch", "out of range"});
  expectMentions(refusal({{"train", {{"seed", -1}}}}), {"train config", "seed", "out of range"});
  expectMentions(refusal({{"train", {{"lr", 1e300}}}}), {"train config", "lr", "finite"});
  expectMentions(refusal({{"train", {{"steps", 4294967297ull}}}}), {"train config", "steps", "out of range"});
}

TEST(FuzzRegressions, SessionFieldsMustBeExact) {
  auto refusal = [](const std::string& fields) {
    return errorMessage([&] { session::sessionFileFromJsonText("s.json", R"({"tscope_session": 1, )" + fields + "}"); });
  };
  expectMentions(refusal(R"("layer": 1e10)"), {"s.json", "layer", "out of range"});
  expectMentions(refusal(R"("head": 4294967296)"), {"s.json", "head", "out of range"});
  expectMentions(refusal(R"("seed": -3)"), {"s.json", "seed", "out of range"});
  expectMentions(refusal(R"("moe_capacity_factor": 1e308, "font_scale": 1e300)"), {"s.json", "font_scale", "finite"});
  expectMentions(refusal(R"("token": -2)"), {"s.json", "token must be >= -1"});
  expectMentions(refusal(R"("moe_top_k": -1)"), {"s.json", "moe_top_k must be 0..1024"});
}

// The valid seeds of the fuzz corpus must stay valid as the formats evolve, or the fuzzers would
// start from nothing but refusals.
TEST(FuzzRegressions, ValidSeedsParse) {
  const std::string safetensors = corpusFile("safetensors", "valid-three-dtypes");
  const SafetensorsHeader header = parseSafetensorsHeader("seed", reinterpret_cast<const uint8_t*>(safetensors.data()), safetensors.size());
  EXPECT_EQ(header.tensors.size(), 3u);
  EXPECT_EQ(header.metadata.at("format"), "pt");

  const std::string bin = corpusFile("llmc_checkpoint", "tiny-valid");
  const std::vector<float> aligned = [&] {
    std::vector<float> floats(bin.size() / sizeof(float));
    std::memcpy(floats.data(), bin.data(), floats.size() * sizeof(float));
    return floats;
  }();
  const Weights weights = llmcCheckpointFromBytes("seed", reinterpret_cast<const uint8_t*>(aligned.data()), bin.size());
  EXPECT_EQ(weights.config().n_embd, 2);

  const std::string files = corpusFile("gpt2_tokenizer_files", "tiny-valid");
  const size_t nul = files.find('\0');
  ASSERT_NE(nul, std::string::npos);
  const auto bpe = gpt2TokenizerFromText("vocab", files.substr(0, nul), "merges", files.substr(nul + 1));
  EXPECT_EQ(bpe->encode(" the"), std::vector<int>{258});  // " t" + "he" -> " the", the third merge

  EXPECT_EQ(charTokenizerFromJsonText("seed", corpusFile("chars_json", "multibyte"))->vocabSize(), 7);
  EXPECT_EQ(session::sessionFileFromJsonText("seed", corpusFile("session_file", "full")).state.head, 2);
  EXPECT_EQ(configFromJson(nlohmann::json::parse(corpusFile("config", "lab-variants"))).n_experts, 4);
  const std::string setup = corpusFile("train_setup", "modadd");
  EXPECT_EQ(parseDataSpec(setup.substr(0, setup.find('\n'))).task.modulus, 13);
  EXPECT_EQ(trainConfigFromJson(nlohmann::json::parse(setup.substr(setup.find('\n') + 1))).batch, 4);
}

// fuzz_lesson and fuzz_hf_config (2026-11-27): a JSON key or an architecture name holding a
// newline ("\n" in the file) was quoted as it was, breaking the message in two. Every Error now
// keeps one line (oneLine escapes control bytes), and the names are cut at a readable length.
TEST(FuzzRegressions, NamesWithNewlinesStayOneLine) {
  const std::string lesson = corpusFile("lesson", "regression-newline-in-key");
  ASSERT_FALSE(lesson.empty());
  const std::string refusal = errorMessage([&] { session::lessonFromJsonText("lessons/x.json", lesson); });
  expectMentions(refusal, {"lessons/x.json", "lec\\ntu\\x01re", "not a lesson field"});
  EXPECT_EQ(refusal.find('\n'), std::string::npos) << refusal;
  const std::string hf = corpusFile("hf_config", "regression-newline-in-architecture");
  ASSERT_FALSE(hf.empty());
  const std::string unsupported = unsupportedHfArchitecture(nlohmann::json::parse(hf));
  expectMentions(unsupported, {"Laheadnehto_i^^\\nlamaForCausalLM", "not supported yet"});
  EXPECT_EQ(unsupported.find('\n'), std::string::npos) << unsupported;
  // Any Error: control bytes escaped, UTF-8 kept; oneLine's cut keeps whole characters.
  EXPECT_STREQ(Error("a\nb\tc\x1b d\xc3\xa9").what(), "a\\nb\\tc\\x1b d\xc3\xa9");
  EXPECT_EQ(oneLine("\xc3\xa9\xc3\xa9\xc3\xa9", 5), "\xc3\xa9...");
  EXPECT_EQ(oneLine("a\xc3\xa9\xc3\xa9\xc3\xa9", 5), "a...");  // not half of a character
  EXPECT_EQ(oneLine(std::string(10, 'k'), 10), std::string(10, 'k'));
  EXPECT_EQ(oneLine(std::string(11, 'k'), 10), std::string(7, 'k') + "...");
}

}  // namespace
}  // namespace tscope

// Fuzzes what a training run is set up from: the first line of the input is a --data spec
// (parseDataSpec), the rest a --config file (the JSON parse loadTrainConfig does, then
// trainConfigFromJson). Accepted specs and configs must write back (toString, trainConfigToJson) to
// text that reads back the same.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "model/train/data.h"
#include "model/core/error.h"
#include "model/train/trainer.h"

using namespace tscope;

namespace {

void checkDataSpec(const std::string& text) {
  DataSpec spec;
  try {
    spec = parseDataSpec(text);
  } catch (const Error&) {
    return;
  }
  const std::string written = toString(spec);
  DataSpec reread;
  try {
    reread = parseDataSpec(written);
  } catch (const Error& e) {
    FUZZ_CHECK(false, "toString wrote a spec that parseDataSpec refuses: " + written + ": " + e.what());
  }
  FUZZ_CHECK(toString(reread) == written, "data spec changed on a round trip: " + written);
  if (!spec.brown) {
    FUZZ_CHECK(taskVocabSize(spec.task) >= 1, "task vocab");
    FUZZ_CHECK(taskSequenceLength(spec.task) >= 2, "task length");
    FUZZ_CHECK(static_cast<int>(taskTokenNames(spec.task).size()) == taskVocabSize(spec.task), "token names");
  }
}

void checkTrainConfig(const std::string& text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return;
  }
  TrainConfig config;
  try {
    config = trainConfigFromJson(json);
  } catch (const Error&) {
    return;
  }
  const std::string written = trainConfigToJson(config).dump();
  TrainConfig reread;
  try {
    reread = trainConfigFromJson(nlohmann::json::parse(written));
  } catch (const Error& e) {
    FUZZ_CHECK(false, "trainConfigToJson wrote a config that trainConfigFromJson refuses: " + written + ": " + e.what());
  }
  FUZZ_CHECK(trainConfigToJson(reread).dump() == written, "train config changed on a round trip: " + written);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = fuzz::asString(data, size);
  const size_t newline = input.find('\n');
  checkDataSpec(input.substr(0, newline));
  if (newline != std::string::npos) checkTrainConfig(input.substr(newline + 1));
  return 0;
}

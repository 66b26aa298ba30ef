// Fuzzes config.json: the JSON parse model_io does, then configFromJson (which runs validateConfig).
// An accepted config must validate, and writing it back (configToJson) must read back to the same
// config, so a model saved by tscope loads as the model it was.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "model/core/config.h"
#include "model/core/error.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json json;
  if (!fuzz::parseJson(data, size, json)) return 0;
  ModelConfig config;
  try {
    config = configFromJson(json);
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(validateConfig(config).empty(), validateConfig(config));
  FUZZ_CHECK(config.headDim() >= 1 && config.kvHeads() >= 1 && config.dFF() >= 1, "derived sizes");
  // Through text, as saveModelDir writes config.json and loadModel reads it.
  const std::string written = configToJson(config).dump();
  ModelConfig reread;
  try {
    reread = configFromJson(nlohmann::json::parse(written));
  } catch (const Error& e) {
    FUZZ_CHECK(false, std::string("configToJson wrote a config that configFromJson refuses: ") + e.what());
  }
  FUZZ_CHECK(configToJson(reread).dump() == written, "config changed on a write/read round trip: " + written);
  return 0;
}

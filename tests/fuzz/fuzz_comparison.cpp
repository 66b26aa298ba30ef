// Fuzzes the training-comparison file the Training panel opens (comparisonFromJson after the JSON
// parse loadComparison does). An accepted file must write back (comparisonToJson) to JSON that
// reads back to the same text, and hold 1..16 runs with curves that agree in length.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/train/comparison.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(fuzz::asString(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  TrainingComparison comparison;
  try {
    comparison = comparisonFromJson(json);
  } catch (const Error&) {
    return 0;
  }
  FUZZ_CHECK(!comparison.runs.empty() && comparison.runs.size() <= static_cast<size_t>(kMaxComparedRuns), "run count");
  for (const ComparedRun& run : comparison.runs) {
    FUZZ_CHECK(run.evalSteps.size() == run.valLoss.size(), "eval lengths of " + run.label);
    FUZZ_CHECK(run.evalSteps.empty() || run.evalSteps.back() <= static_cast<int>(run.trainLoss.size()), "eval beyond the run");
  }
  const std::string written = comparisonToJson(comparison).dump();
  TrainingComparison reread;
  try {
    reread = comparisonFromJson(nlohmann::json::parse(written));
  } catch (const Error& e) {
    FUZZ_CHECK(false, std::string("comparisonToJson wrote a file comparisonFromJson refuses: ") + e.what());
  }
  FUZZ_CHECK(comparisonToJson(reread).dump() == written, "comparison changed on a round trip");
  return 0;
}

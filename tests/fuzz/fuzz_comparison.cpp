// Fuzzes the training-comparison file the Training panel opens (comparisonFromJson after the JSON
// parse loadComparison does). An accepted file must write back (comparisonToJson) to JSON that
// reads back to the same text, and hold 1..16 runs with curves that agree in length.
#include "fuzz_check.h"
#include "model/train/comparison.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::jsonRoundTrip(data, size, "comparison", comparisonFromJson, comparisonToJson, [](const TrainingComparison& comparison) {
    FUZZ_CHECK(!comparison.runs.empty() && comparison.runs.size() <= static_cast<size_t>(kMaxComparedRuns), "run count");
    for (const ComparedRun& run : comparison.runs) {
      FUZZ_CHECK(run.evalSteps.size() == run.valLoss.size(), "eval lengths of " + run.label);
      FUZZ_CHECK(run.evalSteps.empty() || run.evalSteps.back() <= static_cast<int>(run.trainLoss.size()), "eval beyond the run");
    }
  });
  return 0;
}

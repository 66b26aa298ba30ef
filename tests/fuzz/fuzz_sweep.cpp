// Fuzzes the sweep file the Scaling panel and `tscope-cli fit` open (sweepFromJson after the JSON
// parse loadSweep does). An accepted file must hold a valid spec, runs of its grid each once with
// curves that agree in length, and write back (sweepToJson) to JSON that reads back to the same text.
#include <set>

#include "fuzz_check.h"
#include "model/train/sweep.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::jsonRoundTrip(data, size, "sweep", sweepFromJson, sweepToJson, [](const SweepResults& sweep) {
    FUZZ_CHECK(validateSweepSpec(sweep.spec).empty(), "an accepted spec fails validation");
    std::set<std::string> names;
    for (const SweepRunResult& run : sweep.runs) {
      FUZZ_CHECK(names.insert(run.name).second, "run listed twice: " + run.name);
      FUZZ_CHECK(run.evalSteps.size() == run.evalLoss.size(), "eval lengths of " + run.name);
      FUZZ_CHECK(run.valLoss > 0 && run.tokens > 0 && run.paramsNonEmbedding > 0, "non-positive numbers in " + run.name);
    }
    FUZZ_CHECK(sweepPoints(sweep).size() == sweep.runs.size(), "points");
  });
  return 0;
}

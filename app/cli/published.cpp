// tscope-cli published: the slides' published tables beside tscope's numbers, as JSON (the same
// JSON the Architecture and Scaling panels report): Vaswani et al.'s Table 2 with the Transformer
// base / big parameters, Switch-C's slide figures against its counted shape, the named runs'
// training cost at --price dollars per GPU-hour and --gpu-tflops sustained, and the Chinchilla
// worked example at C = 1e23, and the slide's GPT-3 specifications beside Brown et al. 2020's
// Table 2.1 (the slide's Large is the paper's XL).
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/session/published_json.h"

namespace tscope::cli {

int runPublished(const Argv& argv) {
  Args args("published", argv, {"price", "gpu-tflops"}, {});
  GpuPricing pricing;
  pricing.dollarsPerGpuHour = args.number("price", pricing.dollarsPerGpuHour, 1e-6, 1e6);
  pricing.sustainedFlopsPerGpu = 1e12 * args.number("gpu-tflops", pricing.sustainedFlopsPerGpu / 1e12, 1e-6, 1e9);
  print({{"table2", translationTableJson()},
         {"switch_c", slideFiguresJson(switchCPreset())},
         {"training_cost", trainingCostJson(pricing)},
         {"chinchilla_example", chinchillaExampleJson()},
         {"gpt3_specs", gpt3SpecsJson()}});
  return 0;
}

}  // namespace tscope::cli

// What-ifs (model/nn/what_if.h) on every device: the forward with each what-if on the device under
// test gives the reference device's logits and maps (the CUDA attention reads the no-scale what-if's
// score scale, the mask and the positions from the same AttentionShape the host backends read).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/nn/transformer.h"
#include "model/nn/what_if.h"
#include "tests/device_cases.h"
#include "tests/test_helpers.h"

using namespace tscope;
using namespace tscope::testing;

namespace {

void everyWhatIfMatchesTheReference(Device& device, Device& reference) {
  const double tolerance = device.name() == "cuda" ? 2e-4 : 1e-5;  // CUDA's float sums in other orders
  for (const char* variantName : {"gpt2", "gqa2_rope", "alibi"}) {
    const auto variants = architectureVariants();
    const ModelConfig config = variantConfig(*std::find_if(variants.begin(), variants.end(), [&](const auto& v) { return v.name == variantName; }));
    const Weights weights = randomWeights(config, 41);
    const std::vector<int> ids = sequence(11, config.vocab_size, 3);
    for (const char* text :
         {"no-causal-mask", "no-positions", "no-scale", "uniform-attention:1", "skip-residual:0", "skip-mlp:1", "skip-final-norm"}) {
      Transformer got(weights, device.forward()), want(weights, reference.forward()), clean(weights, device.forward());
      const WhatIfs whatIfs = parseWhatIfs(text, config);
      got.setWhatIfs(whatIfs);
      want.setWhatIfs(whatIfs);
      Trace gotTrace, wantTrace;
      const auto gotLogits = got.logitsFor(ids, &gotTrace), wantLogits = want.logitsFor(ids, &wantTrace);
      const std::string what = std::string(variantName) + " " + text;
      EXPECT_LE(compare(gotLogits, wantLogits).relative(), tolerance) << what;
      EXPECT_LE(compare(gotTrace.attn, wantTrace.attn).maxAbs, tolerance * 10) << what;
      EXPECT_GT(compare(gotLogits, clean.logitsFor(ids)).maxAbs, 1e-6)
          << what << ": the what-if changes the forward (random weights: near-uniform maps)";
    }
  }
}

}  // namespace

std::vector<DeviceCase> tscope::testing::whatIfCases() { return {{"WhatIfEveryOneMatchesTheReference", everyWhatIfMatchesTheReference}}; }

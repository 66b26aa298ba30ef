// Prefix reuse (IncrementalForward): after each edit of a prompt (change the last token, insert
// in the middle, delete, delete the last, append, change the first) the merged trace must equal a
// forward over the whole prompt, field by field, in every architecture variant, on the reference
// and the Eigen backend. Tolerance: the reference backend's loops sum every row in the same order
// whatever T is, so it must be bit-exact; the Eigen backend multiplies a 1-row suffix with its
// GEMV and a many-row forward with Eigen's GEMM, whose summation orders differ, so floats there
// may differ by rounding: at most 1e-5 of the largest value (the test prints the largest seen).
#include <gtest/gtest.h>

#include <algorithm>

#include "model/nn/incremental_forward.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "tests/test_helpers.h"

namespace tscope {
namespace {

using testing::compare;

// Whether the rule says a prefix can be reused (the test's own statement of it).
bool reusable(const ModelConfig& c) {
  if (!c.causal) return false;
  if (c.isMoe() && (c.moe_routing == MoeRoutingKind::ExpertChoice || c.moe_capacity_factor > 0)) return false;
  return true;
}

struct Worst {
  double relative = 0;
  std::string where;
  void note(const testing::Difference& d, const std::string& what) {
    if (d.relative() > relative) {
      relative = d.relative();
      where = what + ": " + d.describe();
    }
  }
};

// Every field of `got` (incremental) against `want` (one forward over the whole prompt).
void expectSameTrace(const PromptForward& got, const Trace& want, const std::vector<float>& wantLogits, double tolerance, const std::string& label,
                     Worst& worst) {
  const Trace& t = got.trace;
  auto close = [&](const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << label << " " << what;
    const auto d = compare(a, b);
    worst.note(d, label + " " + what);
    EXPECT_LE(d.relative(), tolerance) << label << " " << what << ": " << d.describe();
  };
  EXPECT_EQ(t.T, want.T) << label;
  EXPECT_EQ(t.Tk, want.Tk) << label;
  EXPECT_EQ(t.pos0, want.pos0) << label;
  EXPECT_EQ(t.L, want.L);
  EXPECT_EQ(t.H, want.H);
  EXPECT_EQ(t.C, want.C);
  EXPECT_EQ(t.V, want.V);
  EXPECT_EQ(t.tokens, want.tokens) << label;
  EXPECT_EQ(t.layers, want.layers) << label;
  EXPECT_EQ(t.truncated, want.truncated) << label;
  EXPECT_EQ(t.note, want.note) << label;
  Trace maps;
  got.attention.flattenInto(maps);
  close(maps.attn, want.attn, "attn");
  close(maps.scores, want.scores, "scores");
  close(t.residAfterAttn, want.residAfterAttn, "residAfterAttn");
  close(t.residAfterMlp, want.residAfterMlp, "residAfterMlp");
  close(t.residNorm, want.residNorm, "residNorm");
  EXPECT_EQ(t.lensK, want.lensK) << label;
  EXPECT_EQ(t.lensPositions, want.lensPositions) << label;
  EXPECT_EQ(t.lensIds, want.lensIds) << label;
  close(t.lensProbs, want.lensProbs, "lensProbs");
  close(t.logits, want.logits, "trace logits");
  EXPECT_EQ(t.rowPositions, want.rowPositions) << label;
  close(t.embedded, want.embedded, "embedded");
  close(t.headMix, want.headMix, "headMix");
  close(t.mlpOut, want.mlpOut, "mlpOut");
  close(t.finalResid, want.finalResid, "finalResid");
  EXPECT_EQ(t.internalLayers, want.internalLayers) << label;
  EXPECT_TRUE(t.D == want.D && t.Hkv == want.Hkv && t.F == want.F) << label;
  close(t.q, want.q, "q");
  close(t.k, want.k, "k");
  close(t.v, want.v, "v");
  close(t.attnOut, want.attnOut, "attnOut");
  close(t.normMean, want.normMean, "normMean");
  close(t.normRstd, want.normRstd, "normRstd");
  close(t.mlpPre, want.mlpPre, "mlpPre");
  close(t.mlpGate, want.mlpGate, "mlpGate");
  close(t.mlpPost, want.mlpPost, "mlpPost");
  close(got.logits, wantLogits, "logits");
  ASSERT_EQ(t.moe.size(), want.moe.size()) << label;
  for (size_t l = 0; l < t.moe.size(); ++l) {
    const MoeRouting &a = t.moe[l], &b = want.moe[l];
    const std::string layer = "moe layer " + std::to_string(l) + " ";
    EXPECT_EQ(a.tokens, b.tokens) << label << layer;
    EXPECT_EQ(a.experts, b.experts) << label << layer;
    EXPECT_EQ(a.topK, b.topK) << label << layer;
    EXPECT_EQ(a.capacity, b.capacity) << label << layer;
    close(a.routerLogits, b.routerLogits, layer + "routerLogits");
    close(a.routerProbs, b.routerProbs, layer + "routerProbs");
    ASSERT_EQ(a.assignments.size(), b.assignments.size()) << label << layer;
    for (size_t i = 0; i < a.assignments.size(); ++i) {
      const MoeAssignment &x = a.assignments[i], &y = b.assignments[i];
      EXPECT_TRUE(x.token == y.token && x.expert == y.expert && x.rank == y.rank && x.dropped == y.dropped) << label << layer << i;
      EXPECT_LE(std::fabs(x.gate - y.gate), tolerance) << label << layer << "gate " << i;
    }
    EXPECT_EQ(a.load, b.load) << label << layer;
    close(a.fraction, b.fraction, layer + "fraction");
    close(a.meanProb, b.meanProb, layer + "meanProb");
    ASSERT_EQ(a.sharedExpertGates.size(), b.sharedExpertGates.size()) << label << layer;  // (T) with a shared expert, else empty
    close(a.sharedExpertGates, b.sharedExpertGates, layer + "sharedExpertGates");
    EXPECT_LE(std::fabs(a.auxLoss - b.auxLoss), tolerance * std::max(1.0f, std::fabs(b.auxLoss))) << label << layer;
    EXPECT_EQ(a.droppedTokens, b.droppedTokens) << label << layer;
  }
  EXPECT_LE(std::fabs(t.moeAuxLoss - want.moeAuxLoss), tolerance * std::max(1.0f, std::fabs(want.moeAuxLoss))) << label;
}

// The reference: one forward over the whole prompt on a fresh cache.
Trace fullForward(Transformer& model, const std::vector<int>& ids, const TraceOptions& options, std::vector<float>& logits) {
  KVCache cache(model.backend(), model.config());
  Trace trace;
  model.forward(ids, cache, logits, false, &trace, options);
  return trace;
}

int commonPrefix(const std::vector<int>& a, const std::vector<int>& b) {
  return static_cast<int>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// The edits a lecturer makes, in order, each applied to the previous prompt.
std::vector<std::pair<std::string, std::vector<int>>> editChain(int V) {
  std::vector<std::pair<std::string, std::vector<int>>> chain;
  std::vector<int> ids = testing::sequence(14, V, 1);
  chain.push_back({"first prompt", ids});
  ids.back() = (ids.back() + 1) % V;
  chain.push_back({"change the last token", ids});
  ids.insert(ids.begin() + 7, (ids[7] + 3) % V);
  chain.push_back({"insert in the middle", ids});
  ids.erase(ids.begin() + 4);
  chain.push_back({"delete in the middle", ids});
  ids.pop_back();
  chain.push_back({"delete the last token", ids});
  for (int extra : {5, 9, 2}) ids.push_back(extra);
  chain.push_back({"append three tokens", ids});
  ids.front() = (ids.front() + 1) % V;
  chain.push_back({"change the first token", ids});
  ids.back() = (ids.back() + 4) % V;
  chain.push_back({"change the last token again", ids});
  return chain;
}

// ablate: zero layer 0's head 1 and patch layer 1's MLP (or head 0 of an attention-only model)
// from another prompt: both act per position, so reuse stays exact.
void checkVariant(const testing::ArchitectureVariant& variant, Backend& backend, double tolerance, const TraceOptions& options, Worst& worst,
                  bool ablate = false) {
  const ModelConfig config = testing::variantConfig(variant);
  const Weights weights = testing::randomWeights(config, 7);
  Transformer model(weights, backend);
  if (ablate) {
    const std::vector<int> source = testing::sequence(9, config.vocab_size, 5);
    std::vector<InterventionSpec> specs{{0, 1, AblationKind::Zero}, {1, config.hasFeedForward() ? -1 : 0, AblationKind::Patch}};
    model.setInterventions(resolveInterventions(model, specs, {}, source));
  }
  IncrementalForward incremental(model);
  std::vector<int> previous;
  for (const auto& [edit, ids] : editChain(config.vocab_size)) {
    const std::string label = variant.name + " / " + backend.name() + " / " + edit;
    const PromptForward got = incremental.run(ids, options);
    const int expectedReuse = previous.empty() || !reusable(config) ? 0 : std::min(commonPrefix(ids, previous), (int)ids.size() - 1);
    EXPECT_EQ(got.reusedTokens, expectedReuse) << label;
    std::vector<float> logits;
    const Trace want = fullForward(model, ids, options, logits);
    expectSameTrace(got, want, logits, tolerance, label, worst);
    previous = ids;
  }
}

TraceOptions everything() {
  TraceOptions options;
  options.logitLensTopK = 3;
  return options;
}

// The app's choice for big vocabularies: lens at the last position only; one layer captured.
TraceOptions lastOnlyOneLayer() {
  TraceOptions options;
  options.residuals = false;
  options.logitLensTopK = 4;
  options.logitLensLastOnly = true;
  options.layers = {1};
  return options;
}

// The Inside-the-block panel's capture: every layer's components and one layer's internals.
TraceOptions inside() {
  TraceOptions options = lastOnlyOneLayer();
  options.components = true;
  options.internalLayers = {1};
  return options;
}

TEST(PrefixReuse, EveryEditEqualsAFullForwardInEveryVariantReferenceBitExact) {
  auto backend = makeReferenceBackend();
  Worst worst;
  for (const auto& variant : testing::architectureVariants()) {
    checkVariant(variant, *backend, 0.0, everything(), worst);
    checkVariant(variant, *backend, 0.0, lastOnlyOneLayer(), worst);
    checkVariant(variant, *backend, 0.0, inside(), worst);
    checkVariant(variant, *backend, 0.0, inside(), worst, true);
    checkVariant(variant, *backend, 0.0, TraceOptions::nothing(), worst);  // the session's clean before / after run
  }
  std::printf("reference backend: largest normalised difference %g (%s)\n", worst.relative, worst.where.c_str());
}

TEST(PrefixReuse, EveryEditEqualsAFullForwardInEveryVariantEigen) {
  auto backend = makeCpuBackend(2);
  Worst worst;
  for (const auto& variant : testing::architectureVariants()) {
    checkVariant(variant, *backend, 1e-5, everything(), worst);
    checkVariant(variant, *backend, 1e-5, lastOnlyOneLayer(), worst);
    checkVariant(variant, *backend, 1e-5, inside(), worst);
    checkVariant(variant, *backend, 1e-5, inside(), worst, true);
  }
  std::printf("Eigen backend: largest normalised difference %g (%s)\n", worst.relative, worst.where.c_str());
}

// The Inside panel keeps only its query row. Each edit comes with the query the lecturer then
// looks at; a query before the reused prefix that the kept trace lacks is run again on its own.
std::vector<std::vector<int>> queriesPerEdit(const std::vector<std::pair<std::string, std::vector<int>>>& chain) {
  std::vector<std::vector<int>> rows;
  for (size_t i = 0; i < chain.size(); ++i) {
    const int last = (int)chain[i].second.size() - 1;
    const std::vector<std::vector<int>> pick{{last}, {3}, {5}, {2}, {2}, {last, 0}, {4}, {4, last, last + 7}};
    rows.push_back(pick[i % pick.size()]);
  }
  return rows;
}

TEST(PrefixReuse, TheInsideQueryRowAloneEqualsAFullForwardAndLeavesTheCacheExact) {
  auto reference = makeReferenceBackend();
  auto eigen = makeCpuBackend(2);
  Worst worst;
  for (const auto& variant : testing::architectureVariants()) {
    const ModelConfig config = testing::variantConfig(variant);
    const Weights weights = testing::randomWeights(config, 7);
    const auto chain = editChain(config.vocab_size);
    const auto queries = queriesPerEdit(chain);
    // Reference backend: every row sums in the same order whatever T, so a row run again alone is
    // bit-identical: the incremental trace must equal a forward of the whole prompt keeping the same rows.
    {
      Transformer model(weights, *reference);
      IncrementalForward incremental(model);
      for (size_t i = 0; i < chain.size(); ++i) {
        TraceOptions options = inside();
        options.componentRows = queries[i];
        const std::string label = variant.name + " / rows / " + chain[i].first;
        const PromptForward got = incremental.run(chain[i].second, options);
        std::vector<float> logits;
        const Trace want = fullForward(model, chain[i].second, options, logits);
        expectSameTrace(got, want, logits, 0.0, label, worst);
        // The kept rows are those rows of a forward that keeps every row.
        TraceOptions all = inside();
        std::vector<float> allLogits;
        const Trace every = fullForward(model, chain[i].second, all, allLogits);
        const int n = (int)chain[i].second.size(), A = config.attnDim();
        for (int position : queries[i]) {
          if (position >= n) {
            EXPECT_LT(got.trace.rowIndex(position), 0) << label << " kept a position past the prompt";
            continue;
          }
          const int r = got.trace.rowOf(position);
          for (int l = 0; l < config.n_layer; ++l)
            for (int c = 0; c < A; ++c)
              ASSERT_EQ(got.trace.headMix[((size_t)l * got.trace.R() + r) * A + c], every.headMix[((size_t)l * n + position) * A + c]) << label;
        }
      }
    }
    // Eigen backend: a row run again alone may differ in the last bits, so the cache rows it wrote
    // must be put back: later edits give the same logits, bit for bit, as an incremental forward
    // that never ran a row again.
    Transformer model(weights, *eigen);
    IncrementalForward withRows(model), plain(model);
    for (size_t i = 0; i < chain.size(); ++i) {
      TraceOptions options = inside();
      options.componentRows = queries[i];
      const PromptForward got = withRows.run(chain[i].second, options);
      const PromptForward want = plain.run(chain[i].second, inside());
      EXPECT_EQ(got.logits, want.logits) << variant.name << " / " << chain[i].first;
      EXPECT_EQ(got.reusedTokens, want.reusedTokens) << variant.name << " / " << chain[i].first;
      for (int position : queries[i])
        if (position < (int)chain[i].second.size() && logitAttributionProblem(config).empty()) {
          const auto a = directLogitAttribution(got.trace, weights, position, 1);
          const auto b = directLogitAttribution(want.trace, weights, position, 1);
          EXPECT_NEAR(a.sum(), b.sum(), 1e-4 * std::max(1.0, (double)std::fabs(b.sum()))) << variant.name;
        }
    }
  }
  std::printf("query rows: largest normalised difference %g (%s)\n", worst.relative, worst.where.c_str());
}

// What a lecturer does on one long prompt: open the Inside panel, move its layer and query, edit
// the prompt there, go back to another panel. Only the per-row capture changes, so each step
// reuses the whole prompt but its last token (the few rows asked for run again on their own), and
// the result equals a forward over the whole prompt with the new options, bit for bit on the
// reference backend. Every row under other per-row options, or another layer's maps (the
// whole-sequence capture), still runs from scratch.
TEST(PrefixReuse, OpeningTheInsidePanelOrMovingItsLayerReusesThePrompt) {
  auto backend = makeReferenceBackend();
  Worst worst;
  for (const auto& variant : testing::architectureVariants()) {
    const ModelConfig config = testing::variantConfig(variant);
    if (!reusable(config)) continue;
    const Weights weights = testing::randomWeights(config, 11);
    Transformer model(weights, *backend);
    IncrementalForward incremental(model);
    std::vector<int> ids = testing::sequence(13, config.vocab_size, 6);
    const int last = (int)ids.size() - 1, lastLayer = config.n_layer - 1;
    auto insideAt = [&](int layer, std::vector<int> rows) {
      TraceOptions options = lastOnlyOneLayer();
      options.components = true;
      options.internalLayers = {layer};
      options.componentRows = std::move(rows);
      return options;
    };
    struct Step {
      std::string what;
      TraceOptions options;
      int reused;         // tokens the step must reuse
      bool edit = false;  // change the last token first
    };
    // Every row's components under other per-row options would run 12 rows again one by one:
    // more than a few, so that step runs the whole prompt instead (and keeps every row after).
    const std::vector<Step> steps{{"another panel", lastOnlyOneLayer(), 0},
                                  {"open the Inside panel", insideAt(0, {last}), last},
                                  {"move its layer", insideAt(lastLayer, {last}), last},
                                  {"move its query back", insideAt(lastLayer, {2}), last},
                                  {"edit the last token there", insideAt(lastLayer, {2}), last, true},
                                  {"every row's components", insideAt(0, {}), 0},
                                  {"every row's components, the last token edited", insideAt(0, {}), last, true},
                                  {"back to another panel", lastOnlyOneLayer(), last},
                                  {"the Inside panel again", insideAt(lastLayer, {last, 4}), last}};
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string label = variant.name + " / " + steps[i].what;
      if (steps[i].edit) ids.back() = (ids.back() + 1) % config.vocab_size;
      if (steps[i].reused == 0 && i > 0) {
        std::string why;
        EXPECT_EQ(incremental.reusableTokens(ids, steps[i].options, &why), 0) << label;
        EXPECT_EQ(why, std::to_string(last) + " rows before the reused prefix would have to run again one by one") << label;
      }
      const PromptForward got = incremental.run(ids, steps[i].options);
      EXPECT_EQ(got.reusedTokens, steps[i].reused) << label;
      std::vector<float> logits;
      expectSameTrace(got, fullForward(model, ids, steps[i].options, logits), logits, 0.0, label, worst);
    }
    TraceOptions otherMaps = lastOnlyOneLayer();
    otherMaps.layers = {0};
    std::string why;
    EXPECT_EQ(incremental.reusableTokens(ids, otherMaps, &why), 0) << variant.name;
    EXPECT_EQ(why, "the trace options changed") << variant.name;
  }
  EXPECT_EQ(worst.relative, 0.0) << worst.where;
}

// A cancelled forward leaves the shared prefix reusable and nothing half-written trusted.
TEST(PrefixReuse, CancelledForwardKeepsAConsistentState) {
  auto backend = makeReferenceBackend();
  const ModelConfig config = testing::variantConfig(testing::architectureVariants()[0]);
  const Weights weights = testing::randomWeights(config, 3);
  Transformer model(weights, *backend);
  IncrementalForward incremental(model);
  const TraceOptions options = everything();
  std::vector<int> first = testing::sequence(12, config.vocab_size, 2);
  incremental.run(first, options);
  std::vector<int> second = first;
  second[5] = (second[5] + 1) % config.vocab_size;
  second.push_back(3);
  int calls = 0;
  model.setLayerCallback([&](int done, int layers) {
    EXPECT_EQ(layers, config.n_layer);
    EXPECT_EQ(done, ++calls);
    return done < 1;  // stop after the first layer
  });
  EXPECT_THROW(incremental.run(second, options), Cancelled);
  EXPECT_EQ(calls, 1);
  model.setLayerCallback({});
  // Only the five shared tokens may be reused now, for either prompt.
  EXPECT_EQ(incremental.reusableTokens(first, options), 5);
  EXPECT_EQ(incremental.reusableTokens(second, options), 5);
  Worst worst;
  for (const auto& ids : {first, second}) {
    const PromptForward got = incremental.run(ids, options);
    std::vector<float> logits;
    const Trace want = fullForward(model, ids, options, logits);
    expectSameTrace(got, want, logits, 0.0, "after a cancel", worst);
  }
  EXPECT_EQ(worst.relative, 0.0) << worst.where;
}

// Typing one token at a time makes many attention pieces; they are merged and stay exact.
TEST(PrefixReuse, ManySmallEditsMergePiecesAndStayExact) {
  auto backend = makeReferenceBackend();
  ModelConfig config = testing::variantConfig(testing::architectureVariants()[0]);
  const Weights weights = testing::randomWeights(config, 5);
  Transformer model(weights, *backend);
  IncrementalForward incremental(model);
  const TraceOptions options = everything();
  std::vector<int> ids = testing::sequence(2, config.vocab_size, 4);
  Worst worst;
  size_t mostPieces = 0;
  for (int t = 2; t <= config.n_positions; ++t) {
    ids.resize(t, (t * 5 + 1) % config.vocab_size);
    const PromptForward got = incremental.run(ids, options);
    mostPieces = std::max(mostPieces, got.attention.pieceCount());
    std::vector<float> logits;
    const Trace want = fullForward(model, ids, options, logits);
    expectSameTrace(got, want, logits, 0.0, "typing token " + std::to_string(t), worst);
  }
  EXPECT_LE(mostPieces, 16u);
  EXPECT_EQ(worst.relative, 0.0) << worst.where;
}

TEST(PrefixReuse, RefusesInputItCannotRun) {
  auto backend = makeReferenceBackend();
  const ModelConfig config = testing::variantConfig(testing::architectureVariants()[0]);
  const Weights weights = testing::randomWeights(config, 3);
  Transformer model(weights, *backend);
  IncrementalForward incremental(model);
  EXPECT_THROW(incremental.run(std::vector<int>{}, everything()), Error);
  EXPECT_THROW(incremental.run(std::vector<int>{1, config.vocab_size}, everything()), Error);
  EXPECT_THROW(incremental.run(std::vector<int>(config.n_positions + 1, 1), everything()), Error);
  // Still usable, and exact, afterwards.
  const std::vector<int> ids = testing::sequence(6, config.vocab_size, 1);
  const PromptForward got = incremental.run(ids, everything());
  std::vector<float> logits;
  Worst worst;
  expectSameTrace(got, fullForward(model, ids, everything(), logits), logits, 0.0, "after errors", worst);
}

}  // namespace
}  // namespace tscope

// Tests for beam search (model/generate/sampling.h): against brute-force enumeration on a fake model that
// keeps real per-slot state (so a wrong slot copy changes later logits), the tree's invariants,
// EOS handling and argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/generate/sampling.h"

namespace tscope {
namespace {

std::vector<float> randomLogits(Rng& rng, int vocab, double scale = 4.0) {
  std::vector<float> logits(vocab);
  for (float& logit : logits) logit = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return logits;
}

// A "random tree" language model: the logits after a sequence are a pseudo-random function of the
// whole sequence (prompt included), plus an optional bonus on EOS; rounded to integers when asked,
// to force ties. Slots keep the sequence so far, so a wrong or missing copy changes later logits.
std::vector<float> logitsAfter(const std::vector<int>& sequence, int vocab, int eos, float eosBonus, bool integerLogits = false) {
  uint64_t hash = 1469598103934665603ull;
  for (int token : sequence) hash = (hash ^ static_cast<uint64_t>(token + 1)) * 1099511628211ull;
  Rng rng(hash);
  std::vector<float> logits = randomLogits(rng, vocab, 3.0);
  if (eos >= 0) logits[eos] += eosBonus;
  if (integerLogits)
    for (float& logit : logits) logit = std::round(logit);
  return logits;
}

double logSoftmaxAt(const std::vector<float>& logits, int token) {
  double sum = 0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit));
  return logits[token] - std::log(sum);
}

struct SequenceModel : BeamModel {
  int vocab, eos;
  float eosBonus;
  bool brokenCopy = false;  // ignore copySlot, to show the tests would notice
  bool integerLogits = false;
  std::vector<std::vector<int>> slots;
  std::vector<int> feedLengths;  // length of every feed call, in order

  SequenceModel(int vocabSize, int slotCount, int eosId = -1, float bonus = 0) : vocab(vocabSize), eos(eosId), eosBonus(bonus), slots(slotCount) {}
  int vocabSize() const override { return vocab; }
  int slotCount() const override { return static_cast<int>(slots.size()); }
  void copySlot(int from, int to) override {
    EXPECT_NE(from, to);
    if (!brokenCopy) slots.at(to) = slots.at(from);
  }
  void feed(int slot, std::span<const int> tokens, std::vector<float>& logits) override {
    slots.at(slot).insert(slots.at(slot).end(), tokens.begin(), tokens.end());
    feedLengths.push_back(static_cast<int>(tokens.size()));
    logits = logitsAfter(slots[slot], vocab, eos, eosBonus, integerLogits);
  }
  // Log-probability of `generated` after `prompt`, recomputed from scratch.
  double logProbOf(const std::vector<int>& prompt, const std::vector<int>& generated) const {
    std::vector<int> sequence = prompt;
    double logProb = 0;
    for (int token : generated) {
      logProb += logSoftmaxAt(logitsAfter(sequence, vocab, eos, eosBonus), token);
      sequence.push_back(token);
    }
    return logProb;
  }
};

const std::vector<int> kPrompt{2, 0, 3};

std::vector<int> promptNumber(int n) { return {n % 5, (n / 5) % 5, 1}; }

std::vector<int> tokensTo(const BeamResult& result, int node) {
  std::vector<int> tokens;
  for (; node > 0; node = result.nodes[node].parent) tokens.insert(tokens.begin(), result.nodes[node].token);
  return tokens;
}

// Best sequence over every continuation of up to `length` tokens that stops early only at EOS.
void bruteForceBest(const SequenceModel& model, const std::vector<int>& prompt, int length, std::vector<int>& bestTokens, double& bestLogProb) {
  bestLogProb = -1e300;
  std::function<void(std::vector<int>&)> visit = [&](std::vector<int>& generated) {
    const bool ended = static_cast<int>(generated.size()) == length || (!generated.empty() && generated.back() == model.eos);
    if (ended) {
      const double logProb = model.logProbOf(prompt, generated);
      if (logProb > bestLogProb) bestLogProb = logProb, bestTokens = generated;
      return;
    }
    for (int token = 0; token < model.vocab; ++token) {
      generated.push_back(token);
      visit(generated);
      generated.pop_back();
    }
  };
  std::vector<int> generated;
  visit(generated);
}

TEST(BeamSearch, WideBeamFindsTheBruteForceOptimum) {
  int narrowMisses = 0;  // how often width 2 misses it: shows the instances are not trivial
  for (int n = 0; n < 20; ++n) {
    for (int eos : {-1, 4}) {  // without EOS: all 125 sequences of length 3; with: also shorter ones
      SequenceModel model(5, 2 * 25, eos, 1.0f);
      const BeamResult result = beamSearch(model, promptNumber(n), 25, 3, eos);  // 25 = V^2 prunes nothing
      std::vector<int> bestTokens;
      double bestLogProb = 0;
      bruteForceBest(model, promptNumber(n), 3, bestTokens, bestLogProb);
      EXPECT_EQ(result.bestTokens, bestTokens) << "prompt " << n << ", eos " << eos;
      EXPECT_NEAR(result.bestLogProb, bestLogProb, 1e-4) << "prompt " << n << ", eos " << eos;
      narrowMisses += beamSearch(model, promptNumber(n), 2, 3, eos).bestTokens != bestTokens;
    }
  }
  EXPECT_GT(narrowMisses, 0);
}

TEST(BeamSearch, WidthOneIsGreedy) {
  SequenceModel model(5, 2);
  const BeamResult result = beamSearch(model, kPrompt, 1, 6);
  std::vector<int> sequence = kPrompt, greedy;
  for (int step = 0; step < 6; ++step) {
    greedy.push_back(argmax(logitsAfter(sequence, 5, -1, 0)));
    sequence.push_back(greedy.back());
  }
  EXPECT_EQ(result.bestTokens, greedy);
  EXPECT_NEAR(result.bestLogProb, model.logProbOf(kPrompt, greedy), 1e-4);
}

TEST(BeamSearch, TreeInvariantsHold) {
  const int width = 3, maxNew = 4, vocab = 12;
  for (int n = 0; n < 10; ++n) {
    SCOPED_TRACE("prompt " + std::to_string(n));
    const std::vector<int> prompt = promptNumber(n);
    SequenceModel model(vocab, 2 * width);
    model.integerLogits = n % 2 == 1;  // ties everywhere: children and survivors go to lower ids
    const BeamResult result = beamSearch(model, prompt, width, maxNew);
    const auto& nodes = result.nodes;
    ASSERT_EQ(nodes[0].parent, -1);
    EXPECT_TRUE(nodes[0].kept && nodes[0].inBest);
    std::vector<int> keptAtDepth(maxNew + 1, 0), nodesAtDepth(maxNew + 1, 0), bestAtDepth(maxNew + 1, 0);
    std::vector<std::vector<int>> children(nodes.size());
    for (size_t i = 1; i < nodes.size(); ++i) {
      const BeamNode& node = nodes[i];
      ASSERT_GE(node.parent, 0);
      ASSERT_LT(node.parent, static_cast<int>(i));
      const BeamNode& parent = nodes[node.parent];
      EXPECT_EQ(parent.depth, node.depth - 1) << "node " << i;
      EXPECT_TRUE(parent.kept) << "node " << i << " grew from a pruned parent";
      EXPECT_FLOAT_EQ(node.logProb, parent.logProb + node.tokenLogProb) << "node " << i;
      children[node.parent].push_back(node.token);
      ++nodesAtDepth[node.depth];
      keptAtDepth[node.depth] += node.kept;
      bestAtDepth[node.depth] += node.inBest;
      if (node.inBest) {
        EXPECT_TRUE(parent.inBest && node.kept) << "inBest chain broken at node " << i;
      }
    }
    // Each expanded node's children are its `width` most likely next tokens, best first.
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].kept || nodes[i].depth == maxNew) continue;
      std::vector<int> sequence = prompt, top(vocab);
      for (int token : tokensTo(result, static_cast<int>(i))) sequence.push_back(token);
      const std::vector<float> logits = logitsAfter(sequence, vocab, -1, 0, model.integerLogits);
      for (int id = 0; id < vocab; ++id) top[id] = id;
      std::stable_sort(top.begin(), top.end(), [&logits](int a, int b) { return logits[a] > logits[b]; });
      top.resize(width);
      EXPECT_EQ(children[i], top) << "children of node " << i;
    }
    for (int depth = 1; depth <= maxNew; ++depth) {
      EXPECT_EQ(keptAtDepth[depth], width) << "depth " << depth;
      EXPECT_EQ(nodesAtDepth[depth], (depth == 1 ? 1 : width) * width) << "depth " << depth;
      EXPECT_EQ(bestAtDepth[depth], 1) << "depth " << depth;
      float worstKept = 1, bestPruned = -1e30f;  // kept nodes are the best `width` at their depth
      for (const BeamNode& node : nodes) {
        if (node.depth != depth) continue;
        if (node.kept) worstKept = std::min(worstKept, node.logProb);
        else bestPruned = std::max(bestPruned, node.logProb);
      }
      EXPECT_GE(worstKept, bestPruned) << "depth " << depth;
      int lastKeptAtCut = -1, firstPrunedAtCut = static_cast<int>(nodes.size());  // ties: earlier node
      for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
        if (nodes[i].depth != depth || nodes[i].logProb != worstKept) continue;
        if (nodes[i].kept) lastKeptAtCut = i;
        else firstPrunedAtCut = std::min(firstPrunedAtCut, i);
      }
      EXPECT_LT(lastKeptAtCut, firstPrunedAtCut) << "depth " << depth;
    }
    int bestLeaf = -1;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].inBest && nodes[i].depth == maxNew) bestLeaf = static_cast<int>(i);
    ASSERT_GE(bestLeaf, 0);
    EXPECT_EQ(tokensTo(result, bestLeaf), result.bestTokens);
    EXPECT_EQ(nodes[bestLeaf].logProb, result.bestLogProb);
    ASSERT_EQ(result.finalBeams.size(), static_cast<size_t>(width));
    EXPECT_EQ(result.finalBeams[0], result.bestTokens);
    EXPECT_TRUE(std::is_sorted(result.finalLogProbs.rbegin(), result.finalLogProbs.rend())) << "best first";
    float bestLeafLogProb = -1e30f;
    for (const BeamNode& node : nodes)
      if (node.depth == maxNew) bestLeafLogProb = std::max(bestLeafLogProb, node.logProb);
    EXPECT_EQ(result.bestLogProb, bestLeafLogProb) << "best is the top candidate of the last step";
  }
}
// Largest |tokenLogProb - value recomputed from the node's full sequence| over the tree. Slots
// carry the sequence, so a missing or wrong copy shows up here.
double worstNodeError(const SequenceModel& model, const BeamResult& result) {
  double worst = 0;
  for (size_t i = 1; i < result.nodes.size(); ++i) {
    std::vector<int> sequence = kPrompt;
    const std::vector<int> parentTokens = tokensTo(result, result.nodes[i].parent);
    sequence.insert(sequence.end(), parentTokens.begin(), parentTokens.end());
    const double expected = logSoftmaxAt(logitsAfter(sequence, model.vocab, model.eos, model.eosBonus), result.nodes[i].token);
    worst = std::max(worst, std::abs(expected - result.nodes[i].tokenLogProb));
  }
  return worst;
}

TEST(BeamSearch, SlotCopiesCarryTheRightStateAndThePromptIsFedOnce) {
  const int width = 3, maxNew = 5;
  SequenceModel model(5, 2 * width);
  const BeamResult result = beamSearch(model, kPrompt, width, maxNew);
  EXPECT_LT(worstNodeError(model, result), 1e-5) << "largest tokenLogProb error against recomputation";
  for (size_t b = 0; b < result.finalBeams.size(); ++b)
    EXPECT_NEAR(result.finalLogProbs[b], model.logProbOf(kPrompt, result.finalBeams[b]), 1e-4) << "beam " << b;
  ASSERT_FALSE(model.feedLengths.empty());
  EXPECT_EQ(model.feedLengths[0], 3) << "the prompt goes in first, whole";
  EXPECT_EQ(std::count(model.feedLengths.begin(), model.feedLengths.end(), 1), static_cast<long>(model.feedLengths.size()) - 1)
      << "every later feed is one token";
  EXPECT_EQ(model.feedLengths.size(), 1u + width * (maxNew - 1)) << "the last step feeds nothing";

  SequenceModel broken(5, 2 * width);
  broken.brokenCopy = true;
  EXPECT_GT(worstNodeError(broken, beamSearch(broken, kPrompt, width, maxNew)), 1e-3)
      << "a model that ignores copySlot must be caught by the same check";
}

TEST(BeamSearch, EosFinishesHypothesesWhichStayInTheBeam) {
  const int eos = 4;
  SequenceModel model(5, 4, eos, 10.0f);  // EOS is nearly certain after any sequence
  const BeamResult result = beamSearch(model, kPrompt, 2, 5, eos);
  for (const BeamNode& node : result.nodes)
    if (node.parent >= 0) {
      EXPECT_NE(result.nodes[node.parent].token, eos) << "a finished hypothesis was expanded";
    }
  // Step 1 keeps {eos} and one other; step 2 expands only the other; then both are finished.
  EXPECT_EQ(result.nodes.size(), 1u + 2 + 2);
  ASSERT_EQ(result.finalBeams.size(), 2u);
  EXPECT_EQ(result.finalBeams[0], (std::vector<int>{eos}));
  EXPECT_EQ(result.finalBeams[1].size(), 2u);
  EXPECT_EQ(result.finalBeams[1].back(), eos);
  EXPECT_EQ(result.bestTokens, (std::vector<int>{eos}));
  EXPECT_NEAR(result.bestLogProb, model.logProbOf(kPrompt, {eos}), 1e-5);

  SequenceModel single(5, 2, eos, 10.0f);
  const BeamResult greedy = beamSearch(single, kPrompt, 1, 5, eos);
  EXPECT_EQ(greedy.nodes.size(), 2u) << "width 1 stops once its only hypothesis ends";
  EXPECT_EQ(single.feedLengths.size(), 1u) << "a finished hypothesis needs no feed";
}

TEST(BeamSearch, RejectsBadArguments) {
  SequenceModel model(5, 3);
  EXPECT_THROW(beamSearch(model, kPrompt, 0, 3), Error);
  EXPECT_THROW(beamSearch(model, kPrompt, 2, 3), Error) << "width 2 needs 4 slots, model has 3";
  EXPECT_THROW(beamSearch(model, std::vector<int>{}, 1, 3), Error);
  EXPECT_THROW(beamSearch(model, kPrompt, 1, -1), Error);
  const BeamResult nothing = beamSearch(model, kPrompt, 1, 0);
  EXPECT_TRUE(nothing.bestTokens.empty());
  EXPECT_EQ(nothing.nodes.size(), 1u);
}

}  // namespace
}  // namespace tscope

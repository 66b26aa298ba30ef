// Beam search that records every expanded candidate as a tree node, so the UI can draw the search.
// Slots alternate between generations: a kept candidate copies its parent's slot into a free one
// and feeds its token there; finished (EOS) hypotheses give their slot back and are carried as-is.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/generate/sampling.h"

namespace tscope {

namespace {

struct Hypothesis {
  int node;       // index into BeamResult::nodes
  int slot;       // model slot holding this sequence's state; -1 once finished or no longer needed
  bool finished;  // emitted EOS: never expanded again
};

struct Candidate {
  int node;      // index into BeamResult::nodes
  int source;    // index into the current beam: the parent, or the finished hypothesis carried over
  bool carried;  // a finished hypothesis competing again as itself
};

// log of sum(exp(logits)) (core/softmax.h). Throws if no token is possible.
double checkedLogSumExp(const std::vector<float>& logits) {
  float maxLogit = -std::numeric_limits<float>::infinity();
  for (float logit : logits) {
    if (std::isnan(logit)) throw Error("beam search: model returned NaN logits");
    maxLogit = std::max(maxLogit, logit);
  }
  if (!std::isfinite(maxLogit)) throw Error("beam search: model returned logits with no finite maximum");
  return logSumExp(logits);
}

// Fills topTokens with up to topTokens.size() ids of the highest finite logits, best first, ties
// to the lower id; returns how many it found. Insertion into a short sorted list: no allocation.
int selectTopTokens(const std::vector<float>& logits, std::vector<int>& topTokens) {
  const int capacity = static_cast<int>(topTokens.size());
  int filled = 0;
  for (int id = 0; id < static_cast<int>(logits.size()); ++id) {
    const float logit = logits[id];
    if (logit == -std::numeric_limits<float>::infinity()) continue;
    if (filled == capacity && !(logit > logits[topTokens[capacity - 1]])) continue;
    int position = std::min(filled, capacity - 1);
    while (position > 0 && logit > logits[topTokens[position - 1]]) {
      topTokens[position] = topTokens[position - 1];
      --position;
    }
    topTokens[position] = id;
    filled = std::min(filled + 1, capacity);
  }
  return filled;
}

void validateBeamArguments(const BeamModel& model, std::span<const int> prompt, int width, int maxNew) {
  if (width < 1) throw Error("beam search: width must be >= 1, got " + std::to_string(width));
  if (maxNew < 0) throw Error("beam search: max new tokens must be >= 0, got " + std::to_string(maxNew));
  if (prompt.empty()) throw Error("beam search: the prompt is empty");
  if (model.vocabSize() < 1) throw Error("beam search: the model has an empty vocabulary");
  if (model.slotCount() < 2 * width)
    throw Error("beam search: width " + std::to_string(width) + " needs " + std::to_string(2 * width) + " model slots, the model has " +
                std::to_string(model.slotCount()));
}

}  // namespace

BeamResult beamSearch(BeamModel& model, std::span<const int> prompt, int width, int maxNew, int eosId) {
  validateBeamArguments(model, prompt, width, maxNew);
  const int vocab = model.vocabSize();
  const int slotCount = 2 * width;
  const int expansions = std::min(width, vocab);  // children per expanded hypothesis

  BeamResult result;
  std::vector<BeamNode>& nodes = result.nodes;
  // Room for every candidate up front, capped so a long search that ends early at EOS does not
  // reserve gigabytes; past the cap the tree grows by the usual doubling.
  nodes.reserve(std::min<size_t>(1 + static_cast<size_t>(maxNew) * width * expansions, size_t{1} << 16));
  BeamNode root;
  root.kept = true;
  nodes.push_back(root);

  // All buffers the step loop touches are sized here, once.
  std::vector<std::vector<float>> slotLogits(slotCount);  // (slots, V) logits following each slot
  for (auto& logits : slotLogits) logits.reserve(vocab);
  std::vector<char> slotFree(slotCount, 1);
  std::vector<Hypothesis> beam, nextBeam;
  beam.reserve(width);
  nextBeam.reserve(width);
  std::vector<Candidate> pool;
  pool.reserve(static_cast<size_t>(width) * expansions + width);
  std::vector<int> topTokens(expansions);

  auto feedChecked = [&](int slot, std::span<const int> tokens) {
    model.feed(slot, tokens, slotLogits[slot]);
    if (static_cast<int>(slotLogits[slot].size()) != vocab)
      throw Error("beam search: model wrote " + std::to_string(slotLogits[slot].size()) + " logits, expected " + std::to_string(vocab));
  };
  auto takeFreeSlot = [&]() {
    for (int slot = 0; slot < slotCount; ++slot)
      if (slotFree[slot]) {
        slotFree[slot] = 0;
        return slot;
      }
    throw Error("beam search: internal error, no free slot");  // cannot happen with 2 * width slots
  };

  beam.push_back({0, -1, false});
  if (maxNew > 0) {
    beam[0].slot = takeFreeSlot();
    feedChecked(beam[0].slot, prompt);  // the prompt is fed once; hypotheses copy its state
  }

  for (int step = 0; step < maxNew; ++step) {
    const bool anyLive = std::any_of(beam.begin(), beam.end(), [](const Hypothesis& h) { return !h.finished; });
    if (!anyLive) break;

    // Expand every live hypothesis by its top tokens; finished ones compete again unchanged.
    pool.clear();
    for (int source = 0; source < static_cast<int>(beam.size()); ++source) {
      const Hypothesis& hypothesis = beam[source];
      if (hypothesis.finished) {
        pool.push_back({hypothesis.node, source, true});
        continue;
      }
      const std::vector<float>& logits = slotLogits[hypothesis.slot];
      const double logNormaliser = checkedLogSumExp(logits);
      const int found = selectTopTokens(logits, topTokens);
      for (int rank = 0; rank < found; ++rank) {
        BeamNode child;
        child.parent = hypothesis.node;
        child.token = topTokens[rank];
        child.depth = step + 1;
        child.tokenLogProb = static_cast<float>(logits[child.token] - logNormaliser);
        child.logProb = nodes[hypothesis.node].logProb + child.tokenLogProb;
        pool.push_back({static_cast<int>(nodes.size()), source, false});
        nodes.push_back(child);
      }
    }

    // Keep the best `width` by cumulative log-probability; ties go to the earlier node.
    std::sort(pool.begin(), pool.end(), [&nodes](const Candidate& a, const Candidate& b) {
      const float la = nodes[a.node].logProb, lb = nodes[b.node].logProb;
      return la > lb || (la == lb && a.node < b.node);
    });
    const int keepCount = std::min(width, static_cast<int>(pool.size()));
    const bool lastStep = step + 1 == maxNew;  // nothing will read the logits after this step

    nextBeam.clear();
    for (int k = 0; k < keepCount; ++k) {
      const Candidate& candidate = pool[k];
      nodes[candidate.node].kept = true;
      if (candidate.carried) {
        nextBeam.push_back(beam[candidate.source]);
        continue;
      }
      const int token = nodes[candidate.node].token;
      Hypothesis child{candidate.node, -1, token == eosId && eosId >= 0};
      if (!child.finished && !lastStep) {
        child.slot = takeFreeSlot();
        model.copySlot(beam[candidate.source].slot, child.slot);
        const int tokens[1] = {token};
        feedChecked(child.slot, tokens);
      }
      nextBeam.push_back(child);
    }
    for (const Hypothesis& old : beam)
      if (old.slot >= 0) slotFree[old.slot] = 1;  // the previous generation's slots are now free
    std::swap(beam, nextBeam);
  }

  // The beam is ordered best first; read sequences back from the tree.
  for (const Hypothesis& hypothesis : beam) {
    std::vector<int> tokens;
    for (int node = hypothesis.node; node > 0; node = nodes[node].parent) tokens.push_back(nodes[node].token);
    std::reverse(tokens.begin(), tokens.end());
    result.finalBeams.push_back(std::move(tokens));
    result.finalLogProbs.push_back(nodes[hypothesis.node].logProb);
  }
  result.bestTokens = result.finalBeams.front();
  result.bestLogProb = result.finalLogProbs.front();
  for (int node = beam.front().node; node >= 0; node = nodes[node].parent) nodes[node].inBest = true;
  return result;
}

}  // namespace tscope

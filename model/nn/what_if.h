// What-ifs: the live model with one of its design choices taken out, to show what that piece is
// for ("without the causal mask the decoder sees the future"). Each changes the forward itself
// (Transformer::setWhatIfs), so the maps, the logit lens and the next token are what the changed
// forward computes:
//   no-causal-mask      every query sees every key (the decoder sees the future)
//   no-positions        no learned / sinusoidal table added, no RoPE rotation, no ALiBi bias
//   no-scale            scores q.k instead of q.k / sqrt(d) (attention at temperature sqrt(d))
//   uniform-attention:L layer L's softmax replaced by the mean over the visible keys
//   skip-residual:L     layer L's sublayers replace the residual stream instead of adding to it
//   skip-mlp:L          layer L's feed-forward output (MLP or experts) is zero
//   skip-final-norm     the unembedding (and the logit lens) read the residual without the final norm
//   shuffle:SEED        the prompt's tokens in a seeded random order (shuffleTokens; the caller
//                       permutes the ids, the forward is the model's own)
// Encoder-decoder models: the what-ifs change the decoder stack; the encoder runs as trained.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/core/config.h"

namespace tscope {

enum class WhatIfKind { NoCausalMask, NoPositions, NoScale, UniformAttention, SkipResidual, SkipMlp, SkipFinalNorm, Shuffle };
inline constexpr WhatIfKind kWhatIfKinds[] = {WhatIfKind::NoCausalMask,     WhatIfKind::NoPositions,  WhatIfKind::NoScale,
                                              WhatIfKind::UniformAttention, WhatIfKind::SkipResidual, WhatIfKind::SkipMlp,
                                              WhatIfKind::SkipFinalNorm,    WhatIfKind::Shuffle};

const char* whatIfName(WhatIfKind kind);  // "no-causal-mask", ... (the command line's names)
// Whether the kind takes a layer (uniform-attention, skip-residual, skip-mlp) or a seed (shuffle).
bool whatIfTakesLayer(WhatIfKind kind);
bool whatIfTakesSeed(WhatIfKind kind);

struct WhatIf {
  WhatIfKind kind = WhatIfKind::NoCausalMask;
  int64_t arg = 0;  // the layer, or the shuffle's seed; 0 for the others
  bool operator==(const WhatIf&) const = default;
};

struct WhatIfs {
  std::vector<WhatIf> items;  // at most one per (kind, arg)

  bool empty() const { return items.empty(); }
  bool has(WhatIfKind kind) const;
  bool atLayer(WhatIfKind kind, int layer) const;  // a layer kind at `layer`
  // The changes to the forward itself (all but the shuffle, which the caller applies to the ids).
  bool changeForward() const;
  bool operator==(const WhatIfs&) const = default;
};

// "no-causal-mask,skip-mlp:1,shuffle:7" -> what-ifs (duplicates dropped). Throws tscope::Error with
// one line naming the bad item: an unknown name (the line lists the names), a missing or extra
// argument, a layer outside the model, or one that does not fit the model (whatIfProblem). Empty
// text -> none.
WhatIfs parseWhatIfs(std::string_view text, const ModelConfig& config);
// The same without a model: the names and arguments only (session files, read before a model is).
WhatIfs parseWhatIfNames(std::string_view text);
// Drops the what-ifs that do not fit `config` (another model was opened); returns "" or one line
// naming the first one dropped and why.
std::string keepFittingWhatIfs(WhatIfs& whatIfs, const ModelConfig& config);
std::string formatWhatIfs(const WhatIfs& whatIfs);  // the inverse: "no-causal-mask,skip-mlp:1"
// "" when `w` fits `config`, else one line saying why not (no-causal-mask on a model without a
// causal mask, no-positions on a model without positions, skip-mlp on an attention-only model,
// skip-final-norm on a post-norm model, a layer outside the model).
std::string whatIfProblem(const WhatIf& w, const ModelConfig& config);
// The status bar's words: "no causal mask", "uniform attention in layer 2", "tokens shuffled (seed 7)".
std::string describeWhatIf(const WhatIf& w);
std::string describeWhatIfs(const WhatIfs& whatIfs);  // joined with ", "

// The config the forward ran as, for what draws its maps (which cells are masked): without the
// causal mask the decoder's maps have no masked upper triangle.
ModelConfig configAsRun(ModelConfig config, const WhatIfs& whatIfs);

// The permutation a shuffle:SEED what-if applies to a prompt of n tokens: shuffled[i] =
// ids[order[i]]. The same seed and n give the same order on every machine (Rng, Fisher-Yates).
std::vector<int> shuffleOrder(int n, uint64_t seed);
// The ids in the order of the what-ifs' shuffle (as they are when there is none); `order` (may be
// null) gets the permutation used (the identity when there is none).
std::vector<int> applyShuffle(const WhatIfs& whatIfs, std::span<const int> ids, std::vector<int>* order = nullptr);

}  // namespace tscope

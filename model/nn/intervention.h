// Interventions on the live forward (TransformerLens' hooks, NDIF's patching): replace one
// attention head's output (its weighted sum of values, before W_O) or one layer's feed-forward
// output (before the residual add) by zeros, by its mean, or by what it was on a second prompt.
// Specs say what the user asked for; resolveInterventions turns them into the replacement values
// (a clean run of the prompt for means, of the source prompt for patches), which
// Transformer::setInterventions applies in every forward from then on.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/core/config.h"

namespace tscope {

class Transformer;

enum class AblationKind { Zero, Mean, Patch };
const char* ablationKindName(AblationKind kind);                      // "zero", "mean", "patch"
bool ablationKindFromName(std::string_view name, AblationKind& out);  // the inverse; false for another name

struct InterventionSpec {
  int layer = 0;
  int head = -1;  // -1: the layer's feed-forward (MLP or mixture of experts) output
  AblationKind kind = AblationKind::Zero;
  // Encoder-decoder models: `head` of the decoder layer's cross-attention (its output before the
  // cross-attention's W_O), not of its self-attention.
  bool cross = false;
  bool isMlp() const { return head < 0; }
  bool operator==(const InterventionSpec&) const = default;
};

// "1.0,1.3,0.mlp,1.x2" -> specs of `kind` (duplicates dropped; L.xH is head H of layer L's
// cross-attention). Throws tscope::Error with one line naming the bad item (not L.H, L.xH or L.mlp,
// a layer or head outside the model, an MLP ablation on an attention-only model, a cross-attention
// head of a decoder-only model). Empty text -> none.
std::vector<InterventionSpec> parseInterventions(std::string_view text, AblationKind kind, const ModelConfig& config);
// Whether any of `specs` is of `kind` (Mean edits need the prompt, Patch edits a source prompt).
bool usesKind(const std::vector<InterventionSpec>& specs, AblationKind kind);
// "1.0,1.3,0.mlp,1.x2" (the kind is not written).
std::string formatInterventions(const std::vector<InterventionSpec>& specs);
// "" when `spec` fits `config`, else one line saying why not.
std::string interventionProblem(const InterventionSpec& spec, const ModelConfig& config);

// The specs with their replacement values: what the forward applies.
struct Interventions {
  struct Edit {
    InterventionSpec spec;
    int width = 0;              // D (a head) or C (the feed-forward output)
    std::vector<float> values;  // Zero: empty; Mean: (width); Patch: (positions, width)
    int positions = 0;          // Patch: rows of the source prompt; later positions are left as they are
    bool operator==(const Edit&) const = default;
  };
  std::vector<Edit> edits;

  bool empty() const { return edits.empty(); }
  // cross: the heads of the layer's cross-attention (InterventionSpec::cross), else of its self-attention.
  bool touchesHeads(int layer, bool cross = false) const;
  bool touchesMlp(int layer) const;
  // On host rows of layer `layer` at absolute positions pos0 .. pos0 + T - 1: the concatenated head
  // outputs (T, A = H D; head h in columns h D .. h D + D - 1), or the feed-forward output (T, C).
  void applyToHeads(int layer, bool cross, float* rows, int T, int pos0, int A, int D) const;
  void applyToMlp(int layer, float* rows, int T, int pos0, int C) const;
  bool operator==(const Interventions&) const = default;
};

// The values of `specs` for `model`: Mean edits take each component's mean over the positions of
// a clean run (no interventions) of `promptIds`; Patch edits take each component's rows from a
// clean run of `sourceIds` (which must not be empty when there is one). Leaves the model's own
// interventions as they were. Throws tscope::Error on a spec that does not fit the model.
Interventions resolveInterventions(Transformer& model, const std::vector<InterventionSpec>& specs, std::span<const int> promptIds,
                                   std::span<const int> sourceIds);

}  // namespace tscope

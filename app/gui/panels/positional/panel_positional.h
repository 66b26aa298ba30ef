// Positional encodings panel: sinusoidal (Vaswani et al. 2017), the loaded model's learned table,
// RoPE and ALiBi, each as heatmaps with knobs. Knob values live here (not in AppState: they never
// change what the model computes); textures are rebuilt only when the knobs they were built from change.
#pragma once
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/figure.h"
#include "app/gui/widgets/heatmap.h"

namespace tscope::gui {

struct PositionalView {
  bool initialized = false;    // knobs take the loaded model's values on the first frame
  bool selectModelTab = true;  // open the tab of the model's own scheme once
  // Sinusoidal (Vaswani et al. 2017): base C, width d (even), positions shown.
  float sinBase = 10000;
  int sinDim = 128, sinPositions = 128;
  // Learned table of the loaded model: first N positions.
  int learnedPositions = 128, learnedDraft = 128;  // the slider edits the draft; applied on release
  // RoPE: base, head dimension (even), positions shown.
  float ropeBase = 10000;
  int ropeHeadDim = 64, ropePositions = 64;
  bool ropeScaled = true;  // use the model's Llama 3 RoPE scaling (models that have one)
  // ALiBi: selected head, positions shown, causal mask.
  int alibiHead = 0, alibiPositions = 24;
  bool alibiCausal = true;

  // What each texture group was built from (rebuild on change only).
  float builtSinBase = -1;
  int builtSinDim = -1, builtSinPositions = -1, builtLearned = -1;
  float builtRopeBase = -1;
  int builtRopeDim = -1, builtRopePositions = -1, builtRopeScaled = -1;
  int builtAlibiHead = -1, builtAlibiPositions = -1, builtAlibiCausal = -1;
  Heatmap sinusoid, sinusoidSimilarity, learned, learnedSimilarity, ropeAngles, ropeDot, alibi;
  Colorbar sinusoidBar, similarityBar, learnedBar, learnedSimilarityBar, ropeBar, ropeDotBar, alibiBar;
  std::vector<float> sinFrequencies;  // (d/2) omega_i = C^(-2i/d), from ropeAngles at t = 1
  std::vector<float> ropeRawAngles;   // (T, D/2) theta(t, i), unwrapped, for the read-out
  std::vector<float> alibiSlopes;     // (H)
  std::vector<float> alibiAll;        // (H, T, T) alibiBias of every head
  float sinSimilarityMax = 1, learnedMax = 1, learnedSimilarityMax = 1, ropeDotMax = 1, alibiMin = -1;
};

class PositionalPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  PositionalView view_;
};

}  // namespace tscope::gui

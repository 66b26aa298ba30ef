// What the user chose (the panel on screen, the selection, the sampling and MoE knobs, the text
// size): the per-session view state that session files save. Plain data with no GL or ImGui
// headers, so session files parse (and are fuzzed) without a window.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/generate/sampling.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/intervention.h"
#include "app/session/panel_catalog.h"

namespace tscope::session {

// What the user chose: saved in session files, shared by every panel.
struct AppState {
  std::string prompt = "The quick brown fox jumps over the lazy dog because it";
  // Encoder-decoder models: the source the encoder reads (the prompt is then the target so far,
  // after the decoder start token; docs/ENCODER_DECODER.md).
  std::string source = "the twelfth of march nineteen ninety one";
  PanelId panel = PanelId::Attention;
  // Selection shared by every panel.
  int layer = 0, head = 0;
  int encoderLayer = 0, encoderHead = 0;  // encoder-decoder models: the encoder map the Translation panel shows
  int token = -1;                         // selected position (-1: the last one)
  bool averageHeads = false;              // attention: mean over heads
  bool showScores = false;                // attention: pre-softmax scores instead of probabilities
  bool linesView = false;                 // attention: lines between two token columns
  bool showGrid = false;                  // attention: every layer x head as thumbnails
  SamplingParams sampling;
  // The Next-token panel's generated tokens after the text generatedFrom (Request has the rule;
  // not saved: a session file's prompt is text).
  std::string generatedFrom;
  std::vector<int> generatedIds;
  int beamWidth = 0;  // 0 = off
  int beamSteps = 4;
  bool measureKvCache = false;
  int moeTopK = 0;                // 0 = the model's own
  double moeCapacityFactor = -1;  // < 0 = the model's own
  bool moeExpertChoice = false;
  // Interventions applied to every forward (the Inside-the-block panel's toggles): every panel
  // shows the ablated model. patchSource: the second prompt Patch edits copy from.
  std::vector<InterventionSpec> interventions;
  std::string patchSource = "The slow green turtle walks under the busy road because it";
  AblationKind ablationKind = AblationKind::Zero;  // the kind new toggles use
  // The Efficient-attention panel: the variant put beside exact attention, with its knobs (fixed
  // random projections: Linformer's pointers stay null), in the selected layer or in every layer.
  AttentionVariantParams attentionVariant{.variant = AttentionVariant::Lsh};
  bool variantAllLayers = false;
  // Preference: the memory the attention maps of a long prompt may take (MiB). Past it the layers
  // nearest the selected one are held; another layer's maps are computed when it is selected.
  int mapMemoryMiB = 512;
  static constexpr int kMinMapMemoryMiB = 16, kMaxMapMemoryMiB = 16384;
  float fontScale = 1.0f;
  bool projector = false;  // high-contrast light theme, large font
};

}  // namespace tscope::session

// What the user chose, split by kind: the model's inputs (what the forward and the stages after it
// read), the session's scratch (generated tokens), what the view selects, and preferences. Session
// files save all but the scratch (session_file.cpp: one field visitor per kind); a Request is the
// model's inputs and the scratch plus what the panel on screen asks of the forward (session.h:
// requestFor). Plain data with no GL or ImGui headers, so session files parse (and are fuzzed)
// without a window.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/generate/sampling.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/intervention.h"
#include "model/nn/what_if.h"
#include "app/session/panel_catalog.h"

namespace tscope::session {

// The model's inputs that its forward reads: a change runs the forward again (reusing the prefix
// its tokens share with the last one).
struct ForwardInputs {
  std::string prompt = "When the President came back to the White House, he said that";
  // Encoder-decoder models: the source the encoder reads (the prompt is then the target so far,
  // after the decoder start token; docs/ENCODER_DECODER.md). Other models ignore it.
  std::string source = "the twelfth of march nineteen ninety one";
  int moeTopK = 0;                // 0 = the model's own
  double moeCapacityFactor = -1;  // < 0 = the model's own
  bool moeExpertChoice = false;
  // Interventions applied to every forward (the Inside-the-block panel's toggles): every panel
  // shows the ablated model. patchSource: the second prompt Patch edits copy from.
  std::vector<InterventionSpec> interventions;
  std::string patchSource = "The slow green turtle walks under the busy road because it";
  // What-ifs (model/nn/what_if.h: the toolbar's "What if" menu): the model with a piece taken out;
  // every panel shows the changed forward, the status bar names them.
  WhatIfs whatIfs;
  // Image models (docs/VISION.md): the image as the model reads it, (num_channels, size, size) after
  // its preprocessing (the Vision panel's canvas or an opened picture); empty: none yet. Not saved in
  // session files (a picture's path is kept by the Vision panel).
  std::vector<float> image;
  // Patches the Vision panel masked (0-based, row by row): their pixels are set to 0 before the
  // forward, and the unmasked image's classes are the "before".
  std::vector<int> maskedPatches;
  // The digits' test image `image` is (digits-vit; session files and lessons set it by this number);
  // -1: a drawing or a picture.
  int digit = -1;
  bool operator==(const ForwardInputs&) const = default;
};

// The model's inputs read after its forward: a change reruns only the stages that read it
// (session_stages.cpp), from the last forward's logits.
struct ReadoutInputs {
  SamplingParams sampling;
  int beamWidth = 0;  // 0 = off
  int beamSteps = 4;
  bool measureKvCache = false;
  bool operator==(const ReadoutInputs&) const = default;
};

struct ModelInputs : ForwardInputs, ReadoutInputs {
  bool operator==(const ModelInputs&) const = default;
};

// Per-session scratch, not saved (a session file's prompt is text): the Next-token panel's
// generated tokens after the text generatedFrom (session.h's Request has the rule).
struct SessionScratch {
  std::string generatedFrom;
  std::vector<int> generatedIds;
  bool operator==(const SessionScratch&) const = default;
};

// What the view selects: the panel on screen and what it shows.
struct ViewSelection {
  PanelId panel = PanelId::Attention;
  int layer = 0, head = 0;
  int encoderLayer = 0, encoderHead = 0;           // encoder-decoder models: the encoder map the Translation panel shows
  int token = -1;                                  // selected position (-1: the last one)
  bool averageHeads = false;                       // attention: mean over heads
  bool showScores = false;                         // attention: pre-softmax scores instead of probabilities
  bool linesView = false;                          // attention: lines between two token columns
  bool showGrid = false;                           // attention: every layer x head as thumbnails
  bool archFamilies = false;                       // the Architecture panel shows the three families view
  AblationKind ablationKind = AblationKind::Zero;  // the kind the Inside panel's new toggles use
  // The Efficient-attention panel: the variant put beside exact attention, with its knobs (fixed
  // random projections: Linformer's pointers stay null), in the selected layer or in every layer.
  AttentionVariantParams attentionVariant{.variant = AttentionVariant::Lsh};
  bool variantAllLayers = false;
  // The Compare panel's right side (the left is the model, prompt and what-ifs above): its model
  // ("" = the left's), its own prompt unless linked to the left's, its what-ifs.
  std::string compareModel;
  bool comparePromptLinked = true;
  std::string comparePrompt = "When the President came back to the White House, she said that";
  WhatIfs compareWhatIfs;
};

struct Preferences {
  // The memory the attention maps of a long prompt may take (MiB). Past it the layers nearest the
  // selected one are held; another layer's maps are computed when it is selected.
  int mapMemoryMiB = 512;
  static constexpr int kMinMapMemoryMiB = 16, kMaxMapMemoryMiB = 16384;
  float fontScale = 1.0f;
  bool projector = false;  // high-contrast light theme, large font
  bool operator==(const Preferences&) const = default;
};

// Everything the user chose, shared by every panel.
struct AppState : ModelInputs, SessionScratch, ViewSelection, Preferences {};

}  // namespace tscope::session

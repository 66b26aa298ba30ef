// Translation panel (encoder-decoder models, docs/ENCODER_DECODER.md): the source box and its
// tokens; the target decoded step by step (greedy, sampled or by beam search) with each token's
// probability; the cross-attention of the selected decoder layer and head as a heatmap or as
// lines; the encoder's and the decoder's self-attention beside it; the two stacks as a diagram.
// A decoder-only model gets one line and a button that opens the shipped translator.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

// The three maps' textures, rebuilt only when the snapshot or the selection changes.
struct TranslationMaps {
  uint64_t builtFor = 0;  // snapshot id (0: nothing built)
  int layer = -1, head = -1, encoderLayer = -1, encoderHead = -1;
  bool average = false;
  std::vector<float> cross;                       // (T, S) as shown: for the lines view and File > Export
  TokenHeatmap crossMap, encoderMap, decoderMap;  // the cross map with its colour bar
  std::string problem;                            // why a map could not be built ("" when all were)
};

// How the next target tokens are chosen (derived from AppState: beamWidth > 0, sampling.greedy).
enum class DecodeMode { Greedy, Sample, Beam };

class TranslationPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  void drawNoEncoder(PanelContext& ctx);
  void drawSource(PanelContext& ctx);
  void drawTarget(PanelContext& ctx);
  void drawDecodeControls(PanelContext& ctx, bool canDecode, const std::string& why, float right);
  void drawTargetTokens(PanelContext& ctx);
  void drawBeam(PanelContext& ctx);
  void drawMapControls(PanelContext& ctx);
  void drawMaps(PanelContext& ctx);
  void drawCrossAttention(PanelContext& ctx, ImVec2 size);
  void drawEncoderSelfAttention(PanelContext& ctx, ImVec2 size);
  void drawDecoderSelfAttention(PanelContext& ctx, ImVec2 size);
  void drawNextTokens(PanelContext& ctx, float width);
  void drawDiagram(PanelContext& ctx, ImVec2 size);
  void rebuildMaps(PanelContext& ctx);
  void takeFromBeam(PanelContext& ctx, size_t tokens);
  void recordFacts(PanelContext& ctx);

  TranslationMaps maps_;
  std::vector<std::string> rowLabels_, sourceLabels_, targetLabels_;  // of the snapshot maps_ was built for
  int beamWidth_ = 4;                                                 // the width beam mode asks for
  bool awaitingGeneration_ = false;                                   // a Step / Translate was posted and the session is still on it
  int outlinedRow_ = -1;                                              // the target row hovered last frame (in a map or the token strip)
  int nextOutlinedRow_ = -1;                                          // ... and this frame
};

}  // namespace tscope::gui

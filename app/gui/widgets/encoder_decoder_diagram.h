// The two stacks of an encoder-decoder model (docs/ENCODER_DECODER.md), drawn with ImDrawList:
// the encoder's layers (bidirectional self-attention, feed-forward) on the left, the decoder's
// (masked self-attention, cross-attention, feed-forward) on the right, one frame per layer, and
// the encoder's output carried by a bus line into every cross-attention. Clicking a layer's
// frame picks it.
#pragma once
#include <imgui.h>

#include <vector>

#include "model/core/config.h"

namespace tscope::gui {

struct StackLayers {
  int encoder = -1, decoder = -1;  // one layer of each stack (-1: none)
};

struct EncoderDecoderDiagram {
  StackLayers clicked;                // the layer frames clicked this frame
  std::vector<ImVec4> encoderFrames;  // (n_encoder_layer) each layer's frame on screen: x0, y0, x1, y1
  std::vector<ImVec4> decoderFrames;  // (n_layer)
};

// Draws the diagram at the cursor within `size` (size.y <= 0: any height), the `highlighted`
// layers outlined, shrinking the text (to half at most) to fit; claims its space. With `pickable`,
// a hovered layer frame is outlined with a tooltip and a click reports it.
EncoderDecoderDiagram drawEncoderDecoderDiagram(const ModelConfig& config, ImVec2 size, StackLayers highlighted, bool pickable = true);

}  // namespace tscope::gui

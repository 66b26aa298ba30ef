// The block diagram of a model config (embedding, L blocks of norm / attention / add / norm /
// MLP or MoE / add, final norm, unembedding), drawn with ImDrawList at the cursor.
#pragma once
#include <imgui.h>

#include "model/core/config.h"

namespace tscope::gui {

// Draws the diagram `width` pixels wide at most (text shrinks to fit) and claims its space.
void drawBlockDiagram(const ModelConfig& config, float width);

}  // namespace tscope::gui

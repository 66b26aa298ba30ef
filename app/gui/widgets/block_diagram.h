// The block diagram of a model config (embedding, L blocks of norm / attention / add / norm /
// MLP or MoE / add, final norm, unembedding), drawn with ImDrawList at the cursor.
#pragma once
#include <imgui.h>

#include "model/core/config.h"

namespace tscope::gui {

// Box fills shared by the block diagrams (the same colour is the same kind of part everywhere).
inline constexpr ImU32 kEmbeddingFill = IM_COL32(150, 110, 220, 80);
inline constexpr ImU32 kNormFill = IM_COL32(150, 150, 150, 70);
inline constexpr ImU32 kAttentionFill = IM_COL32(70, 130, 230, 90);
inline constexpr ImU32 kCrossAttentionFill = IM_COL32(40, 170, 200, 100);
inline constexpr ImU32 kMlpFill = IM_COL32(60, 180, 110, 90);
inline constexpr ImU32 kMoeFill = IM_COL32(230, 150, 50, 90);
inline constexpr ImU32 kOutputFill = IM_COL32(220, 90, 90, 80);

// A line from `from` to `to` ending in a filled arrowhead `head` pixels long (both diagrams' arrows).
void drawArrow(ImDrawList* draw, ImVec2 from, ImVec2 to, ImU32 colour, float thickness, float head);

// Draws the diagram `width` pixels wide at most (text shrinks to fit) and claims its space.
void drawBlockDiagram(const ModelConfig& config, float width);

}  // namespace tscope::gui

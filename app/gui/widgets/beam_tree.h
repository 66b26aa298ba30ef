// The beam-search tree: every hypothesis beam search expanded, by depth from left to right, with
// edges to its parent; kept and pruned hypotheses in different colours and the best sequence
// highlighted. Drawn with ImDrawList lines and text inside a scrolling child; hover for details.
#pragma once
#include <imgui.h>

#include "model/generate/sampling.h"
#include "model/tokenize/tokenizer.h"

namespace tscope::gui {

// Draws `beam` in a child window of `size` (scrolls when the tree is larger).
void drawBeamTree(const BeamResult& beam, const Tokenizer& tokenizer, ImVec2 size);

}  // namespace tscope::gui

// The Translation panel's helpers (translation_views.cpp): what a snapshot holds of the translation
// (the decode mode, the target and whether it is finished), the token labels of its maps (drawn by
// TokenHeatmap), the cross-attention as lines between the source and the target, and token chips.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "app/gui/panels/translation/panel_translation.h"
#include "app/gui/panels/panels.h"

namespace tscope::gui {

DecodeMode modeOf(const AppState& st);  // beamWidth > 0: beam; else greedy or sample by sampling.greedy
const char* modeName(DecodeMode mode);  // "greedy", "sample", "beam"
// True when the snapshot was computed for the source and target on screen.
bool isCurrent(const Snapshot& s, const AppState& st);
// Index of the first target token in the decoder's input: 1, after the start token (0 when a
// target past the context lost it).
size_t firstTarget(const Snapshot& s, const ModelConfig& c);
bool finished(const Snapshot& s, const ModelConfig& c);                      // the target ends with the end token
std::string targetText(const Snapshot& s, const ModelConfig& c);             // the target as text, without the end token
std::string decodeIds(const Session& session, const std::vector<int>& ids);  // "?" for ids the tokenizer refuses
const std::string& tokenAt(const std::vector<std::string>& text, int i);     // text[i], or "?" outside it

// Before a widget `width` pixels wide: stays on the current line when it fits left of `right` (a
// table cell's right edge, which layout.h's sameLineIfFits does not know), else starts a new line.
inline void sameLineIfFitsBefore(float right, float width) {
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) ImGui::SameLine();
}

// The outlined target row's colour, in every map, the lines and the token chips.
inline constexpr ImU32 kOutline = IM_COL32(235, 80, 50, 255);

// A token as an axis label: a space shown as a middle dot, control characters escaped, cut to
// `maxChars` characters.
std::string axisLabel(const std::string& token, size_t maxChars = 5);

// The cross-attention (T, S) as lines: the source tokens along the top, the target rows along the
// bottom, a line from each row to each source token with alpha = weight. Hovering a row's label
// (or `outlinedRow`) dims every other row's lines. Claims `size`; returns the hovered row (-1 none).
int drawAlignmentLines(const std::vector<float>& cross, int T, int S, const std::vector<std::string>& rowLabels,
                       const std::vector<std::string>& colLabels, ImVec2 size, int outlinedRow, ScreenRect* area);

// One token as a chip with its probability under it and a bar of that length (probability < 0:
// none, e.g. the start token); `outlined` draws it highlighted, `dim` greys it. True when hovered.
bool probabilityChip(const std::string& label, float probability, bool outlined, bool dim);

// One source token as a small chip (space as a middle dot). True when hovered.
bool sourceChip(const std::string& label);

}  // namespace tscope::gui

// The RoPE and ALiBi tabs of the Positional encodings panel (panel_positional.cpp draws the
// sinusoidal and learned tabs and the tab bar).
#pragma once
#include <string>
#include <vector>

#include "app/gui/widgets/figure.h"
#include "app/gui/panels/positional/panel_positional.h"

namespace tscope::gui {

// Largest finite |value| (1 when there is none): a symmetric colour range for diverging maps.
float maxAbs(const std::vector<float>& values);

// "RoPE", "ALiBi", "a learned position table", ...
const char* positionSchemeName(PositionEncoding scheme);

// Records the drawn plots as screen regions "positional_<name>" (and "..._similarity" for the
// second) and offers `exported` to File > Export.
void publishFigures(PanelContext& ctx, const FigureHover& layout, const std::string& name, const Heatmap& exported, int figures);

void drawRopeTab(PanelContext& ctx, PositionalView& view);
void drawAlibiTab(PanelContext& ctx, PositionalView& view);

}  // namespace tscope::gui

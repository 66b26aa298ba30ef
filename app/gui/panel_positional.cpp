// The Positional panel is not written yet (issue "The desktop app"); it says so on screen.
#include <imgui.h>

#include "panels.h"

namespace tscope::gui {
void drawPositionalPanel(PanelContext&) { ImGui::TextDisabled("This panel is not written yet."); }
}  // namespace tscope::gui

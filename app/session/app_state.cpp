// The panels' names (for --panel and session files) and tab titles, kept apart from the GUI code so
// that session files can be read without it.
#include "app/session/app_state.h"

namespace tscope::gui {

namespace {
constexpr const char* kPanelNames[] = {"prompt", "attention", "residual", "sampling", "positional", "moe", "architecture", "scaling", "training"};
constexpr const char* kPanelTitles[] = {"Prompt & tokens", "Attention",           "Residual & logit lens", "Next token", "Positional encodings",
                                        "Experts",         "Architecture & cost", "Scaling laws",          "Training"};
}  // namespace

const char* panelName(PanelId id) { return kPanelNames[static_cast<int>(id)]; }
const char* panelTitle(PanelId id) { return kPanelTitles[static_cast<int>(id)]; }

}  // namespace tscope::gui

// The panels' names (for --panel and session files) and tab titles, kept apart from the GUI code so
// that session files can be read without it.
#include "app/session/app_state.h"

#include <iterator>

namespace tscope::gui {

namespace {
constexpr const char* kPanelNames[] = {"prompt", "attention", "inside", "residual", "sampling", "positional", "moe", "architecture", "scaling", "efficient", "training", "translation"};
constexpr const char* kPanelTitles[] = {"Prompt & tokens", "Attention",    "Inside the block",    "Residual & logit lens", "Next token",
                                        "Positional encodings", "Experts", "Architecture & cost", "Scaling laws",          "Efficient attention", "Training",
                                        "Translation"};
// The panels' sub-tabs, by the region names their tabs record (what a lesson step's "tab" names).
constexpr struct {
  const char* region;
  PanelId panel;
} kPanelTabs[] = {{"scaling_tab_published", PanelId::Scaling}, {"scaling_tab_runs", PanelId::Scaling},
                  {"scaling_tab_emergence", PanelId::Scaling}, {"efficient_tab_live", PanelId::Efficient},
                  {"efficient_tab_flash", PanelId::Efficient}, {"efficient_tab_cost", PanelId::Efficient},
                  {"training_tab_run", PanelId::Training},     {"training_tab_compare", PanelId::Training}};
static_assert(std::size(kPanelNames) == static_cast<size_t>(PanelId::Count));
static_assert(std::size(kPanelTitles) == static_cast<size_t>(PanelId::Count));
}  // namespace

const char* panelName(PanelId id) { return kPanelNames[static_cast<int>(id)]; }
const char* panelTitle(PanelId id) { return kPanelTitles[static_cast<int>(id)]; }

std::optional<PanelId> panelOfTab(const std::string& tab) {
  for (const auto& t : kPanelTabs)
    if (tab == t.region) return t.panel;
  return std::nullopt;
}

std::string panelTabNames() {
  std::string names;
  for (const auto& t : kPanelTabs) names += (names.empty() ? "" : ", ") + std::string(t.region);
  return names;
}

std::optional<PanelId> panelFromName(const std::string& name) {
  for (int i = 0; i < static_cast<int>(PanelId::Count); ++i)
    if (name == kPanelNames[i]) return static_cast<PanelId>(i);
  return std::nullopt;
}

}  // namespace tscope::gui

// The panels' catalogue: what app/session/panel_list.h registers, as data (names, titles,
// shortcuts, sub-tabs and needs), kept apart from the GUI so that session files and lessons are
// read (and fuzzed) without a window. The GUI's factories are in app/gui/panels/registry.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tscope::session {

#define TSCOPE_PANEL(Id, ...) Id,
enum class PanelId {
#include "app/session/panel_list.h"
  Count
};
#undef TSCOPE_PANEL

// What a panel asks of the model and of every request while it is on screen (panel_list.h's needs).
enum PanelNeed : unsigned {
  kNeedsNothing = 0,
  kNeedsComponents = 1u << 0,  // each sublayer's output and one layer's internals at the query row (Inside the block)
  kNeedsLayerQkv = 1u << 1,    // the selected layer's q, k, v at every row (Efficient attention)
  kNeedsVariant = 1u << 2,     // the efficient-attention variant run beside exact attention
  kStepsQueryRow = 1u << 3,    // Up / Down step the query token, not the layer
  kMoeModelsOnly = 1u << 4,    // its tab shows only for mixture-of-experts models
  kOwnRun = 1u << 5,           // shows its own run, not the explorer's model: kept across model switches
};

struct PanelInfo {
  PanelId id;
  const char* name;               // --panel, session files, lessons
  const char* title;              // the tab
  char shortcut;                  // with Alt: '1'..'9', '0' or a letter
  unsigned needs;                 // PanelNeed flags
  std::vector<std::string> tabs;  // its sub-tabs' region names
  bool has(PanelNeed need) const { return (needs & need) != 0; }
};

const std::vector<PanelInfo>& panelCatalog();  // every panel, in PanelId (tab) order
const PanelInfo& panelInfo(PanelId id);
const char* panelName(PanelId id);                              // "attention", ... (for --panel)
const char* panelTitle(PanelId id);                             // "Attention", ... (tab titles)
std::optional<PanelId> panelFromName(const std::string& name);  // panelName's inverse
// A panel's sub-tab by the region name its tab records ("scaling_tab_runs", "efficient_tab_flash",
// "training_tab_compare", ...): the panel it belongs to, or nullopt for no such tab.
std::optional<PanelId> panelOfTab(const std::string& tab);
std::string panelTabNames();                          // every sub-tab's name, comma-separated (for error messages)
std::string panelNames(const char* separator = " ");  // every panel's name (for --help)

}  // namespace tscope::session

// The panels' catalogue, read from app/session/panel_list.h (one registration per panel).
#include "app/session/panel_catalog.h"

namespace tscope::session {

const std::vector<PanelInfo>& panelCatalog() {
  static const std::vector<PanelInfo> catalog = [] {
    std::vector<PanelInfo> panels;
#define TSCOPE_PANEL(Id, name, title, shortcut, needs, ...) \
  panels.push_back(PanelInfo{PanelId::Id, name, title, shortcut, needs, std::vector<std::string>{__VA_ARGS__}});
#include "app/session/panel_list.h"
#undef TSCOPE_PANEL
    return panels;
  }();
  return catalog;
}

const PanelInfo& panelInfo(PanelId id) { return panelCatalog().at(static_cast<size_t>(id)); }
const char* panelName(PanelId id) { return panelInfo(id).name; }
const char* panelTitle(PanelId id) { return panelInfo(id).title; }

std::optional<PanelId> panelOfTab(const std::string& tab) {
  for (const PanelInfo& panel : panelCatalog())
    for (const std::string& region : panel.tabs)
      if (tab == region) return panel.id;
  return std::nullopt;
}

std::string panelTabNames() {
  std::string names;
  for (const PanelInfo& panel : panelCatalog())
    for (const std::string& region : panel.tabs) names += (names.empty() ? "" : ", ") + region;
  return names;
}

std::string panelNames(const char* separator) {
  std::string names;
  for (const PanelInfo& panel : panelCatalog()) names += (names.empty() ? "" : separator) + std::string(panel.name);
  return names;
}

std::optional<PanelId> panelFromName(const std::string& name) {
  for (const PanelInfo& panel : panelCatalog())
    if (name == panel.name) return panel.id;
  return std::nullopt;
}

}  // namespace tscope::session

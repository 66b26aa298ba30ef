// The GUI half of the panel registry (app/session/panel_list.h): each panel's factory, defined in
// the panel's own .cpp, and its Alt shortcut as a key of the platform.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "app/gui/panels/panels.h"
#include "app/gui/platform.h"

namespace tscope::gui {

std::unique_ptr<Panel> makePanel(PanelId id);

// A panel's Alt shortcut: Key::Digit1 + digit for '1'..'9' and '0', or a letter key.
struct ShortcutKey {
  Key key;
  int digit = 0;
};
std::optional<ShortcutKey> shortcutKey(char shortcut);  // nullopt: no key of the platform
std::string shortcutLabel(char shortcut);               // "Alt 1", "Alt E"

}  // namespace tscope::gui

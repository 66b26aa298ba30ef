// The panels' factories, declared from the registrations in app/session/panel_list.h: a panel
// registered there without its make<Id>Panel() (in its own .cpp) does not link.
#include "app/gui/panels/registry.h"

namespace tscope::gui {

#define TSCOPE_PANEL(Id, ...) std::unique_ptr<Panel> make##Id##Panel();
#include "app/session/panel_list.h"
#undef TSCOPE_PANEL

std::unique_ptr<Panel> makePanel(PanelId id) {
  switch (id) {
#define TSCOPE_PANEL(Id, ...) \
  case PanelId::Id:           \
    return make##Id##Panel();
#include "app/session/panel_list.h"
#undef TSCOPE_PANEL
    case PanelId::Count: break;
  }
  return nullptr;
}

std::optional<ShortcutKey> shortcutKey(char shortcut) {
  if (shortcut >= '1' && shortcut <= '9') return ShortcutKey{Key::Digit1, shortcut - '1'};
  if (shortcut == '0') return ShortcutKey{Key::Digit1, -1};  // GLFW's 0 comes before its 1
  switch (shortcut) {
    case 'E': return ShortcutKey{Key::E};
    case 'T': return ShortcutKey{Key::T};
    case 'B': return ShortcutKey{Key::B};
    case 'C': return ShortcutKey{Key::C};
    case 'V': return ShortcutKey{Key::V};
    default: return std::nullopt;
  }
}

std::string shortcutLabel(char shortcut) { return std::string("Alt ") + shortcut; }

}  // namespace tscope::gui

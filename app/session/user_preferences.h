// The user's preferences file: what the window remembers from one start to the next (its size and
// place, the text size, projector mode, the map memory, the last model, prompt and panel, the recent
// files), as JSON
// at $XDG_CONFIG_HOME/tscope/preferences.json (else ~/.config/tscope/preferences.json). Written
// through a temporary file and a rename when the window closes; a missing file is the defaults, a
// corrupt one the defaults and one line naming it. `tscope --fresh` starts without it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "app/session/app_state.h"

namespace tscope::session {

// A window's place on the desktop, in screen coordinates.
struct WindowPlace {
  int x = 0, y = 0, width = 0, height = 0;
  bool maximized = false;
  bool operator==(const WindowPlace&) const = default;
};

constexpr size_t kRecentFilesKept = 12;  // a longer list in the file is cut to this

struct UserPreferences {
  Preferences preferences;               // text size, projector mode, map memory (session files' keys)
  std::optional<WindowPlace> window;     // none: fit the window to the screen (fitWindow)
  std::string model;                     // the model last open ("" none)
  std::string prompt;                    // its prompt
  std::optional<PanelId> panel;          // the panel last on screen
  std::vector<std::string> recentFiles;  // models, sessions and lessons opened, the latest first (file_kinds.h's withRecent)
  bool operator==(const UserPreferences&) const = default;
};

// "" when neither $XDG_CONFIG_HOME nor $HOME is set.
std::string userPreferencesPath();
// nullopt with no warning when the file does not exist; nullopt and one line in `warning` naming
// the file and the problem when it cannot be read or is not a preferences file.
std::optional<UserPreferences> loadUserPreferences(const std::string& path, std::string& warning);
// The same on the file's text (throws tscope::Error "NAME: ..."), and the text saveUserPreferences writes.
UserPreferences userPreferencesFromJsonText(const std::string& name, const std::string& text);
std::string userPreferencesToJsonText(const UserPreferences& prefs);
void saveUserPreferences(const std::string& path, const UserPreferences& prefs);  // makes the directory; throws tscope::Error

// Where the window opens on a monitor whose work area (the screen less task bars) is `area`: the
// saved place clamped into it (a window saved on a larger screen shrinks to fit), else at most
// 1600x1000 centred in it, maximized on a work area under 1440x900 (a projector, a small laptop).
WindowPlace fitWindow(const std::optional<WindowPlace>& saved, const WindowPlace& area);

}  // namespace tscope::session

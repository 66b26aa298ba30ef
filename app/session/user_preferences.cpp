// The user's preferences file (user_preferences.h).
#include "app/session/user_preferences.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "app/session/session_file.h"
#include "model/core/error.h"
#include "model/core/file_check.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"

namespace tscope::session {

namespace fs = std::filesystem;

std::string userPreferencesPath() {
  // XDG Base Directory Specification: $XDG_CONFIG_HOME, else $HOME/.config.
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return (fs::path(xdg) / "tscope" / "preferences.json").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".config" / "tscope" / "preferences.json").string();
  return "";
}

UserPreferences userPreferencesFromJsonText(const std::string& name, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(name + ": not a preferences file (malformed JSON: " + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("tscope_preferences")) throw Error(name + ": not a tscope preferences file (no \"tscope_preferences\" field)");
  UserPreferences prefs;
  readPreferenceFields(j, prefs.preferences, name);
  readJsonField(j, "model", prefs.model, name);
  readJsonField(j, "prompt", prefs.prompt, name);
  std::string panel;
  readJsonField(j, "panel", panel, name);
  if (!panel.empty()) prefs.panel = panelFromName(panel);
  if (const auto it = j.find("recent_files"); it != j.end()) {
    if (!it->is_array()) throw Error(name + ": field 'recent_files' must be a list of paths");
    for (const nlohmann::json& path : *it) {
      if (!path.is_string() || path.get_ref<const std::string&>().empty()) throw Error(name + ": field 'recent_files' must be a list of paths");
      if (prefs.recentFiles.size() < kRecentFilesKept) prefs.recentFiles.push_back(path.get<std::string>());
    }
  }
  if (const auto it = j.find("window"); it != j.end()) {
    if (!it->is_object()) throw Error(name + ": field 'window' must be an object");
    WindowPlace w;
    readJsonField(*it, "x", w.x, name);
    readJsonField(*it, "y", w.y, name);
    readJsonField(*it, "width", w.width, name);
    readJsonField(*it, "height", w.height, name);
    readJsonField(*it, "maximized", w.maximized, name);
    if (w.width < 320 || w.height < 240 || w.width > 16384 || w.height > 16384 || std::abs(w.x) > 65536 || std::abs(w.y) > 65536)
      throw Error(name + ": field 'window' is " + std::to_string(w.width) + "x" + std::to_string(w.height) + " at " + std::to_string(w.x) + ", " +
                  std::to_string(w.y) + ": the size must be 320x240 to 16384x16384, the place within 65536 of the origin");
    prefs.window = w;
  }
  return prefs;
}

std::string userPreferencesToJsonText(const UserPreferences& prefs) {
  nlohmann::json j = {{"tscope_preferences", 1}, {"model", prefs.model}, {"prompt", prefs.prompt}};
  writePreferenceFields(prefs.preferences, j);
  if (prefs.panel) j["panel"] = panelName(*prefs.panel);
  j["recent_files"] = prefs.recentFiles;
  if (const auto& w = prefs.window) j["window"] = {{"x", w->x}, {"y", w->y}, {"width", w->width}, {"height", w->height}, {"maximized", w->maximized}};
  return j.dump(2) + "\n";
}

std::optional<UserPreferences> loadUserPreferences(const std::string& path, std::string& warning) {
  std::error_code ec;
  if (path.empty() || !fs::exists(fs::symlink_status(path, ec))) return std::nullopt;
  try {
    requireRegularFile(path, "the preferences file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open the preferences file");
    std::ostringstream contents;
    contents << in.rdbuf();
    return userPreferencesFromJsonText(path, contents.str());
  } catch (const Error& e) {
    warning = std::string(e.what()) + " (started with the defaults; it is rewritten when the window closes)";
  }
  return std::nullopt;
}

void saveUserPreferences(const std::string& path, const UserPreferences& prefs) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) throw Error(fs::path(path).parent_path().string() + ": cannot make the preferences directory (" + ec.message() + ")");
  writeFileAtomically(path, userPreferencesToJsonText(prefs));
}

WindowPlace fitWindow(const std::optional<WindowPlace>& saved, const WindowPlace& area) {
  WindowPlace w;
  if (saved) {
    w = *saved;
    w.width = std::clamp(w.width, std::min(320, area.width), area.width);
    w.height = std::clamp(w.height, std::min(240, area.height), area.height);
    w.x = std::clamp(w.x, area.x, area.x + area.width - w.width);
    w.y = std::clamp(w.y, area.y, area.y + area.height - w.height);
    return w;
  }
  w.width = std::min(1600, area.width);
  w.height = std::min(1000, area.height);
  w.x = area.x + (area.width - w.width) / 2;
  w.y = area.y + (area.height - w.height) / 2;
  w.maximized = area.width < 1440 || area.height < 900;
  return w;
}

}  // namespace tscope::session

// The thin platform layer: GLFW window + OpenGL 3.3 core context + Dear ImGui (GLFW and
// OpenGL3 backends), fonts with HiDPI scaling, themes, frame begin/end, and reading the
// framebuffer back into a PNG. Nothing else in the app touches GLFW.
#pragma once
#include <optional>
#include <string>

#include "app/session/user_preferences.h"

struct GLFWwindow;

namespace tscope::gui {

// Keys the app binds.
enum class Key {
  Left,
  Right,
  Up,
  Down,
  A,
  E,
  G,
  L,
  P,
  Q,
  S,
  T,
  F1,
  Slash,
  Equal,
  Minus,
  Digit1,
  // a lesson's keys (presentation clickers send PageDown / PageUp)
  PageUp,
  PageDown,
  Space,
  Home,
  End,
  Escape,
  Backspace,
  N,
  B,
  R,
  Enter,
  O,
  C,
  V
};
// Modifier bits a shortcut is pressed with (combine with |).
enum Mod : int { kNoMod = 0, kShift = 1, kCtrl = 2, kAlt = 4 };
// Pressed (or repeated) since the last frame with exactly these modifiers held; Digit1 + n for the
// digit n + 1. Latched in GLFW's key callback: ImGui 1.86 samples key state once per frame, so a
// tap shorter than a frame (a slow frame, synthetic input) would otherwise be lost.
bool isShortcutPressed(Key key, int mods = kNoMod, int digitOffset = 0);

struct PlatformOptions {
  // The window's size (scaled by the monitor's content scale), unless fitToScreen.
  int width = 1600, height = 1000;
  // Open at fitWindow(place, the primary monitor's work area) instead: the saved place kept on
  // screen, or at most 1600x1000 (maximized on a small screen) when there is none.
  bool fitToScreen = false;
  std::optional<session::WindowPlace> place;
  float fontScale = 1.0f;  // on top of the monitor's content scale
  bool projector = false;  // high-contrast light theme
};

class Platform {
 public:
  // Throws std::runtime_error with one line when there is no display or no OpenGL 3.3.
  explicit Platform(const PlatformOptions& options);
  ~Platform();
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  bool shouldClose() const;
  // Sleeps until input arrives or `seconds` pass; the next beginFrame then uses those events.
  void waitForEvents(double seconds);
  void beginFrame();                                           // poll events (unless just waited), start an ImGui frame
  void setMouseHidden(bool hidden) { mouseHidden_ = hidden; }  // headless capture: no hover from a stray cursor
  void endFrame();                                             // render ImGui, swap
  void renderOnly();                                           // render ImGui without swapping (for capture)
  void finish();                                               // wait for the GPU (frame timing)
  void swap();                                                 // present what renderOnly drew
  void setSwapInterval(int interval);
  // Writes the current back buffer (or its part x0,y0..x1,y1 in window coordinates when x1 > x0)
  // as PNG, through a temporary file and a rename; throws on failure.
  void saveScreenshot(const std::string& path, float x0 = 0, float y0 = 0, float x1 = 0, float y1 = 0) const;
  void applyStyle(float fontScale, bool projector);
  session::WindowPlace windowPlace() const;  // where the window is now (for the preferences file)

 private:
  GLFWwindow* window_ = nullptr;
  float contentScale_ = 1.0f;
  float appliedFontScale_ = 0, appliedProjector_ = -1;
  bool mouseHidden_ = false;
  bool waited_ = false;  // waitForEvents ran since the last beginFrame
};

}  // namespace tscope::gui

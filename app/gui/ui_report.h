// The live window's own account of itself for the GUI tests (TSCOPE_UI_REPORT=FILE): every
// 100 ms the UI thread rewrites FILE (temporary name, then rename) with a frame counter, what is
// on screen (panel, model, tokens kept and dropped, messages) and the named screen regions, so a
// harness driving the window with synthetic input can tell that it is alive and where to click.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <nlohmann/json.hpp>
#include <string>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

class App;

// {"name": [x0, y0, x1, y1], ...} in window pixels (also printed by --screenshot).
nlohmann::json regionsJson(const SharedView& shared);

class UiReport {
 public:
  explicit UiReport(std::string path) : path_(std::move(path)) {}
  // Counts the frame and writes the report when 100 ms have passed since the last one, or at once
  // when the pointer moved or a button went down (so a harness can wait for the app to have seen
  // its pointer before pressing, and know that the press arrived).
  void maybeWrite(const App& app, float frameMs);
  // Between NewFrame and the end of the frame: where the pointer is, since which frame, and the
  // presses ImGui saw (count, place, frame).
  void noteInput();

 private:
  std::string path_;
  uint64_t frames_ = 0;
  long mouseX_ = -1, mouseY_ = -1;  // -1: not over the window
  uint64_t mouseSince_ = 0;         // the frame the pointer arrived where it is
  uint64_t presses_ = 0, pressFrame_ = 0;
  long pressX_ = -1, pressY_ = -1;
  bool inputChanged_ = false;
  // The last kMaxSlowFrames frames whose own work (frameMs: without the wait for input) took over
  // kSlowFrameMs, as (frame, ms): the GUI tests read which frames of an action stalled the UI thread.
  static constexpr float kSlowFrameMs = 100;
  static constexpr size_t kMaxSlowFrames = 32;
  std::deque<std::pair<uint64_t, float>> slowFrames_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

}  // namespace tscope::gui

// The lesson being presented (app/session/lesson.h): the toolbar's lesson picker and Resume
// button, entering a step (its model, state, architecture, expert, training run), the clicker's
// keys, the caption bar under the panels and the outline of the step's highlighted region.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/session/lesson.h"
#include "app/gui/session_names.h"

namespace tscope::gui {

class App;

class LessonPlayer {
 public:
  // The shipped lessons from `lessonsDir`; `modelsDir` resolves the models they name.
  LessonPlayer(std::string lessonsDir, std::string modelsDir);
  const std::vector<Lesson>& lessons() const { return lessons_; }
  const std::vector<std::string>& problems() const { return problems_; }  // one line per broken shipped file
  // A shipped lesson's name or a path to a .json file: presents it from `step` (clamped). False
  // with `error` (one line) when there is no such lesson or the file is broken.
  bool start(const std::string& nameOrPath, int step, std::string* error);
  bool active() const { return active_; }
  const Lesson* lesson() const { return lesson_ ? &*lesson_ : nullptr; }
  int step() const { return step_; }
  void goTo(int step);  // enters that step (clamped) and shows the lesson again
  // True once the step entered last is on screen as far as the player goes (its model opened,
  // state applied, training started): the app may still be computing.
  bool settled() const { return !entering_; }
  // settled(), and the training run a step started has paused (or one that runs on has begun):
  // a headless capture (--export-slides) may be taken once the app is up to date too.
  bool captureReady(const App& app) const;

  // Once a frame before the panels: enters a step asked for (after opening its model).
  void beforeFrame(App& app);
  // The clicker's keys while a lesson is on; true when a lesson is on (the head keys are then its).
  bool handleKeys();
  void drawPicker(App& app);   // in the toolbar: the Lessons combo and Resume
  float captionSpace();        // the height the caption bar and its spacing take this frame (0 without a lesson on)
  void drawCaption(App& app);  // under the panels, above the status bar; the highlight; report facts

 private:
  void enter(App& app);  // applies step_ on the model now open
  void reveal(const App& app);
  void layoutCaption(float width, float maxHeight);
  float captionHeight();

  std::string lessonsDir_, modelsDir_;
  std::vector<Lesson> lessons_;
  std::vector<std::string> problems_;
  std::optional<Lesson> lesson_;
  AppState start_;  // the state the lesson began from (steps apply over it)
  bool startCaptured_ = false;
  int step_ = 0;
  bool active_ = false;
  bool entering_ = false;   // step_ still to enter (its model perhaps opening)
  bool openAsked_ = false;  // the step's model was asked for once
  bool modelMissing_ = false;
  std::string warning_;
  std::string trainingPreset_;  // the preset the player started last
  bool revealed_ = false;
  std::string liveAnswer_, why_;
  uint64_t revealedFor_ = 0;         // the snapshot the live answer was read from
  float scale_ = 1.3f, height_ = 0;  // the caption's text scale and height, laid out each frame
  bool fits_ = true;
};

}  // namespace tscope::gui

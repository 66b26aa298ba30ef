// Headless rendering: frames drawn with the mouse hidden until the app has settled, then captured
// (--screenshot, --export-slides); and the slides' index.html, one page for a whole lesson.
#pragma once
#include <functional>
#include <string>

#include "app/session/lesson.h"
#include "app/gui/session_names.h"

namespace tscope::gui {

class App;
class Platform;

// Draws frames (mouse hidden, no vsync) until the app is up to date and `ready()` holds for 3
// frames in a row; the last frame stays in the back buffer for saveScreenshot. Throws
// tscope::Error ("the <what> did not finish within N s") after limitSeconds.
void renderSettled(Platform& platform, App& app, const std::function<bool()>& ready, int limitSeconds, const std::string& what);

// Every step of the lesson being presented (app.lessons()) rendered to DIR/step-01.png, ... and
// DIR/index.html written (a temporary name, then a rename). Throws tscope::Error with one line
// when DIR cannot be made or written.
void exportSlides(Platform& platform, App& app, const std::string& dir);

// One HTML page: the lesson's title and, per step, its image (step-NN.png beside it), title,
// caption and formula as text, one step at a time with Left / Right (and buttons) to move.
std::string slidesHtml(const Lesson& lesson);

}  // namespace tscope::gui

// Headless capture for --screenshot and --export-slides (headless.h), and the slides' HTML.
#include "app/gui/headless.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/gui/app.h"
#include "app/gui/platform.h"
#include "model/core/error.h"
#include "model/io/npy.h"

namespace tscope::gui {

void renderSettled(Platform& platform, App& app, const std::function<bool()>& ready, int limitSeconds, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  platform.setMouseHidden(true);
  platform.setSwapInterval(0);
  const auto started = Clock::now();
  float lastFrameMs = 0;
  int settledFrames = 0;
  while (settledFrames < 3) {
    const auto frameStart = Clock::now();
    platform.applyStyle(app.state().fontScale, app.state().projector);  // a lesson's projector mode (outside the frame)
    platform.beginFrame();
    app.frame(lastFrameMs);
    platform.renderOnly();
    settledFrames = app.upToDate() && ready() ? settledFrames + 1 : 0;
    if (settledFrames < 3) platform.endFrame();
    lastFrameMs = std::chrono::duration<float, std::milli>(Clock::now() - frameStart).count();
    if (Clock::now() - started > std::chrono::seconds(limitSeconds))
      throw Error("the " + what + " did not finish within " + std::to_string(limitSeconds) + " s");
  }
}

namespace {
std::string escapeHtml(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string slideName(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%02d.png", step + 1);
  return name;
}
}  // namespace

std::string slidesHtml(const Lesson& lesson) {
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escapeHtml(lesson.title) +
                     "</title>\n<style>body{font-family:sans-serif;margin:1em 2em;background:#fff;color:#111}"
                     "section{display:none}section.on{display:block}img{max-width:100%;border:1px solid #999}"
                     ".formula{font-size:1.5em;font-family:serif;margin:.5em 0}.caption{font-size:1.3em}</style></head>\n<body>\n<h1>" +
                     escapeHtml(lesson.title) +
                     "</h1>\n<p><button onclick=\"go(-1)\">&larr; Prev</button> <span id=\"where\"></span> "
                     "<button onclick=\"go(1)\">Next &rarr;</button></p>\n";
  for (size_t i = 0; i < lesson.steps.size(); ++i) {
    const LessonStep& step = lesson.steps[i];
    html += "<section id=\"step-" + std::to_string(i + 1) + "\">\n<h2>" + std::to_string(i + 1) + ". " + escapeHtml(step.title) +
            "</h2>\n<img src=\"" + slideName(static_cast<int>(i)) + "\" alt=\"" + escapeHtml(step.title) + "\">\n<p class=\"caption\">" +
            escapeHtml(step.caption) + "</p>\n";
    if (!step.formula.empty()) html += "<p class=\"formula\">" + escapeHtml(step.formula) + "</p>\n";
    if (step.check) html += "<p class=\"check\">" + escapeHtml(step.check->question) + "</p>\n";
    html += "</section>\n";
  }
  html +=
      "<script>\nconst slides = document.querySelectorAll('section'); let at = 0;\n"
      "function go(d) { slides[at].classList.remove('on'); at = Math.max(0, Math.min(slides.length - 1, at + d));\n"
      "  slides[at].classList.add('on'); document.getElementById('where').textContent = 'step ' + (at + 1) + ' / ' + slides.length; }\n"
      "document.addEventListener('keydown', e => { if (e.key === 'ArrowRight' || e.key === 'PageDown') go(1);\n"
      "  if (e.key === 'ArrowLeft' || e.key === 'PageUp') go(-1); });\ngo(0);\n</script>\n</body></html>\n";
  return html;
}

void exportSlides(Platform& platform, App& app, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string probe = (std::filesystem::path(dir) / ".tscope-write-test").string();
  if (ec || !std::ofstream(probe)) throw Error(dir + ": cannot write the slides there" + (ec ? " (" + ec.message() + ")" : ""));
  std::filesystem::remove(probe, ec);
  LessonPlayer& player = app.lessons();
  const Lesson& lesson = *player.lesson();
  for (int step = 0; step < static_cast<int>(lesson.steps.size()); ++step) {
    player.goTo(step);
    renderSettled(
        platform, app, [&] { return player.captureReady(app); }, 600, "lesson's step " + std::to_string(step + 1));
    platform.saveScreenshot((std::filesystem::path(dir) / slideName(step)).string());
  }
  writeFileAtomically((std::filesystem::path(dir) / "index.html").string(), slidesHtml(lesson));
}

}  // namespace tscope::gui

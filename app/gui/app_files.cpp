// The App's files: the session file's Save and Load, the file browser (widgets/file_browser.h)
// behind the toolbar's "..." buttons, Ctrl+O and the lesson picker, and the recent files the
// preferences keep. Split from app_toolbar.cpp.
#include <imgui.h>

#include <cstdlib>
#include <filesystem>

#include "app/gui/app.h"
#include "app/session/session_file.h"
#include "app/session/user_preferences.h"
#include "app/session/vision_input.h"

namespace tscope::gui {

namespace fs = std::filesystem;

namespace {

const std::string kModelsDir = TSCOPE_SOURCE_DIR "/assets/models";
const std::string kLessonsDir = TSCOPE_SOURCE_DIR "/assets/lessons";

std::string workingFolder() {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  return ec ? std::string(".") : cwd.string();
}

}  // namespace

void App::addRecent(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  recentFiles_ = session::withRecent(std::move(recentFiles_), ec ? path : absolute.lexically_normal().string(), session::kRecentFilesKept);
}

void App::saveSession() {
  try {
    saveSessionFile(sessionPath_, {session_->modelPath(), state_, ""});
    showMessage("saved " + sessionPath_, MessageKind::Info);
    addRecent(sessionPath_);
  } catch (const std::exception& e) {
    showMessage(e.what(), MessageKind::Error);
  }
}

// A session names its model: a different one is opened first (next frame), then the state applied.
void App::loadSession() {
  try {
    SessionFile file = loadSessionFile(sessionPath_);
    if (file.warning.empty()) showMessage("loaded " + sessionPath_, MessageKind::Info);
    else showMessage(file.warning, MessageKind::Warning);
    addRecent(sessionPath_);
    if (!file.modelPath.empty() && file.modelPath != session_->modelPath()) openModel(file.modelPath, "");
    if (opening().empty()) applyState(std::move(file.state));
    else pendingState_ = std::move(file.state);
  } catch (const std::exception& e) {
    showMessage(e.what(), MessageKind::Error);
  }
}

// Each purpose starts where its files are: models beside the shipped ones (or the open model's
// folder), sessions beside the session path, lessons in the shipped lessons.
void App::openBrowser(FileBrowser::Purpose purpose) {
  std::string folder;
  switch (purpose) {
    case FileBrowser::Purpose::Model: {
      const fs::path open = fs::path(session_->modelPath()).lexically_normal();
      folder = open.has_parent_path() ? open.parent_path().string() : kModelsDir;
      break;
    }
    case FileBrowser::Purpose::Session: {
      const fs::path path(sessionPath_);
      folder = path.has_parent_path() ? path.parent_path().string() : workingFolder();
      break;
    }
    case FileBrowser::Purpose::Lesson: folder = kLessonsDir; break;
    case FileBrowser::Purpose::Image: {  // the sample photographs the set-up unpacked, else the working folder
      const std::vector<std::string> samples = session::sampleImages();
      folder = samples.empty() ? workingFolder() : fs::path(samples.front()).parent_path().string();
      break;
    }
  }
  browser_.open(purpose, folder, fs::path(sessionPath_).filename().string());
}

void App::drawBrowser() {
  if (!browser_.isOpen()) return;
  FileBrowser::Sidebar sidebar;
  sidebar.places = {{"Shipped models", kModelsDir}, {"Lessons", kLessonsDir}, {"Working folder", workingFolder()}};
  if (const char* home = std::getenv("HOME"); home && *home) sidebar.places.push_back({"Home", home});
  sidebar.places.push_back({"Root", "/"});
  sidebar.recent = &recentFiles_;
  sidebar.cached = &cachedModels_;
  sidebar.errorColour = messageColour(MessageKind::Error);
  const std::optional<FileBrowser::Choice> choice = browser_.draw(shared_, sidebar);
  if (!choice) return;
  switch (browser_.purpose()) {
    case FileBrowser::Purpose::Model:
      modelPathInput_ = choice->path;
      openModel(choice->path, "");
      break;
    case FileBrowser::Purpose::Session:
      sessionPath_ = choice->path;
      if (choice->save) saveSession();
      else loadSession();
      break;
    case FileBrowser::Purpose::Lesson: {
      std::string error;
      if (lesson_.start(choice->path, 0, &error)) addRecent(choice->path);
      else showMessage(error, MessageKind::Error);
      break;
    }
    case FileBrowser::Purpose::Image:
      chosenImage_ = choice->path;  // the Vision panel reads it next frame (PanelContext::chosenImage)
      state_.panel = PanelId::Vision;
      requestedTab_ = static_cast<int>(PanelId::Vision);
      break;
  }
}

}  // namespace tscope::gui

// The in-app file browser: a modal dialog over the window for Open model, the session file (Load
// and Save), Open lesson and the Vision panel's Open picture. Folders first, each entry marked with what tscope can do with it
// (file_kinds.h: model, session, lesson, image); places on the left (shipped models, lessons, home,
// the working folder), the recent files and, for models, the HuggingFace cache's models.
// Mouse: click selects, double click opens, the buttons. Keyboard: Up/Down, PageUp/PageDown,
// Home/End select; Enter opens (a folder is entered, a model/session/lesson chosen); Right enters
// the selected folder (a model folder too); Backspace or Left goes up; Esc cancels. The folder
// field takes a typed path (Enter goes there, or chooses the file it names).
#pragma once
#include <imgui.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/session/file_kinds.h"
#include "model/io/hf_checkpoint.h"

namespace tscope::gui {

class FileBrowser {
 public:
  enum class Purpose { Model, Session, Lesson, Image };  // Image: the Vision panel's picture
  struct Place {
    std::string label, path;
  };
  // What the dialog shows beside the folder: places, recent files (all kinds: the dialog keeps
  // those of its purpose), the HuggingFace cache's models (Model only), the error colour.
  struct Sidebar {
    std::vector<Place> places;
    const std::vector<std::string>* recent = nullptr;
    const std::vector<DownloadedModel>* cached = nullptr;
    ImVec4 errorColour{0.9f, 0.25f, 0.2f, 1.0f};
  };
  struct Choice {
    std::string path;
    bool save = false;  // Session: write the session there (else load it)
  };

  // Opens the dialog in `folder` (the folder this purpose used last, when there is one), with
  // `fileName` in the session's name field.
  void open(Purpose purpose, const std::string& folder, const std::string& fileName = "");
  bool isOpen() const { return open_; }
  // Draws the dialog while it is open (each frame, outside any window); returns the choice once,
  // closing the dialog. Records its regions ("browser_*") in `shared`.
  std::optional<Choice> draw(SharedView& shared, const Sidebar& sidebar);

  // For the report.
  Purpose purpose() const { return purpose_; }
  const session::FolderListing& listing() const { return listing_; }
  int selected() const { return selected_; }
  const std::string& problem() const { return problem_; }  // the line under the entries ("" none)

 private:
  void navigate(const std::string& folder);
  std::optional<Choice> activate(const std::string& path, session::FileKind kind);  // Enter / double click
  std::optional<Choice> handleKeys();
  std::optional<Choice> drawSidebar(SharedView& shared, const Sidebar& sidebar);
  std::optional<Choice> drawEntries(SharedView& shared);
  std::optional<Choice> drawFooter(SharedView& shared, const Sidebar& sidebar);
  std::vector<session::FileKind> wanted() const;
  bool chooses(session::FileKind kind) const;  // an entry of this kind is what the purpose opens
  void select(int index);

  bool open_ = false, justOpened_ = false, scrollToSelected_ = false, showHidden_ = false;
  Purpose purpose_ = Purpose::Model;
  session::FolderListing listing_;
  int selected_ = -1;
  std::string folderInput_, nameInput_, problem_;
  std::map<Purpose, std::string> lastFolder_;
  std::vector<session::FileKind> recentKinds_;  // the sidebar's recent files, classified when the dialog opens
};

const char* fileBrowserPurposeName(FileBrowser::Purpose purpose);  // "model", "session", "lesson", "image"

}  // namespace tscope::gui

// The in-app file browser (file_browser.h).
#include "app/gui/widgets/file_browser.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/gui/platform.h"
#include "model/core/units.h"

namespace tscope::gui {

using session::FileKind;
namespace fs = std::filesystem;

namespace {

// Each purpose's name, dialog title and the one kind of file it opens (in Purpose's order).
struct PurposeInfo {
  const char* name;
  const char* title;  // "###file_browser": one popup id whatever the title
  FileKind opens;
};
constexpr PurposeInfo kPurposes[] = {{"model", "Open a model###file_browser", FileKind::Model},
                                     {"session", "Load or save a session###file_browser", FileKind::Session},
                                     {"lesson", "Open a lesson###file_browser", FileKind::Lesson},
                                     {"image", "Open a picture###file_browser", FileKind::Image}};
const PurposeInfo& infoOf(FileBrowser::Purpose purpose) { return kPurposes[static_cast<size_t>(purpose)]; }

}  // namespace

const char* fileBrowserPurposeName(FileBrowser::Purpose purpose) { return infoOf(purpose).name; }

std::vector<FileKind> FileBrowser::wanted() const { return {infoOf(purpose_).opens}; }

bool FileBrowser::chooses(FileKind kind) const { return kind == infoOf(purpose_).opens; }

void FileBrowser::open(Purpose purpose, const std::string& folder, const std::string& fileName) {
  purpose_ = purpose;
  open_ = justOpened_ = true;
  nameInput_ = fileName;
  problem_.clear();
  recentKinds_.clear();
  const auto last = lastFolder_.find(purpose);
  navigate(last != lastFolder_.end() ? last->second : folder);
}

void FileBrowser::navigate(const std::string& folder) {
  session::FolderListing listing = session::listFolder(folder, wanted(), showHidden_);
  if (!listing.problem.empty() && !listing_.folder.empty() && open_ && !justOpened_) {
    problem_ = listing.problem;  // stay where we were
    return;
  }
  const std::string from = listing_.folder;
  listing_ = std::move(listing);
  problem_ = listing_.problem;
  folderInput_ = listing_.folder;
  lastFolder_[purpose_] = listing_.folder;
  // Going up selects the folder we came from.
  selected_ = listing_.entries.empty() ? -1 : 0;
  for (size_t i = 0; i < listing_.entries.size(); ++i)
    if (listing_.entries[i].path == from) selected_ = static_cast<int>(i);
  scrollToSelected_ = true;
}

void FileBrowser::select(int index) {
  if (listing_.entries.empty()) return;
  selected_ = std::clamp(index, 0, static_cast<int>(listing_.entries.size()) - 1);
  scrollToSelected_ = true;
}

std::optional<FileBrowser::Choice> FileBrowser::activate(const std::string& path, FileKind kind) {
  if (chooses(kind)) {
    open_ = false;
    return Choice{path, false};
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) navigate(path);
  else if (!fs::exists(path, ec)) problem_ = path + ": no such file or folder";
  else
    problem_ = path + ": not a " + fileBrowserPurposeName(purpose_) +
               (purpose_ == Purpose::Model ? " (a folder with a config.json, or an llm.c .bin)" : " file");
  return std::nullopt;
}

std::optional<FileBrowser::Choice> FileBrowser::handleKeys() {
  if (ImGui::IsAnyItemActive()) return std::nullopt;  // typing in the folder or name field
  const int n = static_cast<int>(listing_.entries.size());
  if (isShortcutPressed(Key::Escape)) {
    open_ = false;
    return std::nullopt;
  }
  if (isShortcutPressed(Key::Down)) select(selected_ + 1);
  if (isShortcutPressed(Key::Up)) select(selected_ - 1);
  if (isShortcutPressed(Key::PageDown)) select(selected_ + 10);
  if (isShortcutPressed(Key::PageUp)) select(selected_ - 10);
  if (isShortcutPressed(Key::Home)) select(0);
  if (isShortcutPressed(Key::End)) select(n - 1);
  if (isShortcutPressed(Key::Backspace) || isShortcutPressed(Key::Left)) navigate(session::parentFolder(listing_.folder));
  const bool inRange = selected_ >= 0 && selected_ < static_cast<int>(listing_.entries.size());
  if (inRange && isShortcutPressed(Key::Right) && listing_.entries[static_cast<size_t>(selected_)].folder)
    navigate(listing_.entries[static_cast<size_t>(selected_)].path);
  if (inRange && isShortcutPressed(Key::Enter)) {
    const session::FileEntry entry = listing_.entries[static_cast<size_t>(selected_)];
    return activate(entry.path, entry.kind);
  }
  return std::nullopt;
}

std::optional<FileBrowser::Choice> FileBrowser::drawSidebar(SharedView& shared, const Sidebar& sidebar) {
  std::optional<Choice> choice;
  ImGui::TextDisabled("Places");
  for (size_t i = 0; i < sidebar.places.size(); ++i) {
    if (ImGui::Selectable(sidebar.places[i].label.c_str(), sidebar.places[i].path == listing_.folder)) navigate(sidebar.places[i].path);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", sidebar.places[i].path.c_str());
    recordItem(shared, "browser_place_" + std::to_string(i));
  }
  if (sidebar.recent && recentKinds_.size() != sidebar.recent->size()) {  // once per opening: classifying peeks into files
    recentKinds_.clear();
    for (const std::string& path : *sidebar.recent) recentKinds_.push_back(session::classifyPath(path));
  }
  if (sidebar.recent) {
    bool any = false;
    for (size_t i = 0; i < sidebar.recent->size(); ++i) {
      const std::string& path = (*sidebar.recent)[i];
      const FileKind kind = recentKinds_[i];
      if (!chooses(kind)) continue;  // another purpose's, or gone
      if (!any) ImGui::Spacing(), ImGui::TextDisabled("Recent");
      any = true;
      const std::string label = fs::path(path).filename().string() + "##recent" + std::to_string(i);
      if (ImGui::Selectable(label.c_str())) choice = activate(path, kind);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", path.c_str());
      recordItem(shared, "browser_recent_" + std::to_string(i));
    }
  }
  if (purpose_ == Purpose::Model && sidebar.cached && !sidebar.cached->empty()) {
    for (size_t i = 0; i < sidebar.cached->size(); ++i) {
      const DownloadedModel& model = (*sidebar.cached)[i];
      if (i == 0 || (*sidebar.cached)[i - 1].source != model.source) ImGui::Spacing(), ImGui::TextDisabled("%s", model.source.c_str());
      ImGui::BeginDisabled(!model.problem.empty());
      if (ImGui::Selectable((model.id + "##cached").c_str())) {
        open_ = false;
        choice = Choice{model.path, false};
      }
      ImGui::EndDisabled();
      if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s", model.problem.empty() ? model.path.c_str() : model.problem.c_str());
      recordItem(shared, "browser_cached_" + std::to_string(i));
    }
  }
  return choice;
}

std::optional<FileBrowser::Choice> FileBrowser::drawEntries(SharedView& shared) {
  std::optional<Choice> choice;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersOuter | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("entries", 3, flags)) return choice;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Name", ImGuiTableColumnFlags_WidthStretch, 6.0f);
  ImGui::TableSetupColumn("Kind", ImGuiTableColumnFlags_WidthStretch, 1.2f);
  ImGui::TableSetupColumn("Size", ImGuiTableColumnFlags_WidthStretch, 1.2f);
  ImGui::TableHeadersRow();
  const ImVec4 marked = ImGui::GetStyleColorVec4(ImGuiCol_PlotHistogram);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(listing_.entries.size()));
  if (scrollToSelected_ && selected_ >= 0) clipper.ForceDisplayRangeByIndices(selected_, selected_ + 1);
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const session::FileEntry& entry = listing_.entries[static_cast<size_t>(row)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const bool folder = entry.folder;
      const std::string label = (folder ? entry.name + "/" : entry.name) + "##entry" + std::to_string(row);
      if (ImGui::Selectable(label.c_str(), row == selected_, ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
        selected_ = row;
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) choice = activate(entry.path, entry.kind);
      }
      recordItem(shared, "browser_entry_" + std::to_string(row));
      if (row == selected_ && scrollToSelected_) {
        ImGui::SetScrollHereY();
        scrollToSelected_ = false;
      }
      ImGui::TableNextColumn();
      if (chooses(entry.kind)) ImGui::TextColored(marked, "%s", session::fileKindName(entry.kind));
      else ImGui::TextDisabled("%s", session::fileKindName(entry.kind));
      ImGui::TableNextColumn();
      if (!folder) ImGui::TextDisabled("%s", formatBytes(static_cast<double>(entry.bytes)).c_str());
      if (choice || !open_) break;
    }
    if (choice || !open_) break;
  }
  if (choice || !open_) clipper.End();
  ImGui::EndTable();
  return choice;
}

std::optional<FileBrowser::Choice> FileBrowser::drawFooter(SharedView& shared, const Sidebar& sidebar) {
  std::optional<Choice> choice;
  if (!problem_.empty()) ImGui::TextColored(sidebar.errorColour, "%s", problem_.c_str());
  else
    ImGui::TextDisabled("%zu entries%s. Enter opens, Right enters a folder, Backspace goes up, Esc cancels", listing_.entries.size(),
                        listing_.hidden ? (", " + std::to_string(listing_.hidden) + " hidden").c_str() : "");
  const bool inRange = selected_ >= 0 && selected_ < static_cast<int>(listing_.entries.size());
  if (purpose_ == Purpose::Session) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
    const bool entered = ImGui::InputTextWithHint("##browser_name", "new-session.json", &nameInput_, ImGuiInputTextFlags_EnterReturnsTrue);
    recordItem(shared, "browser_name");
    ImGui::SameLine();
    const bool save = ImGui::Button("Save here") || entered;
    recordItem(shared, "browser_save");
    if (save && !nameInput_.empty()) {
      std::string name = nameInput_;
      if (fs::path(name).extension() != ".json") name += ".json";
      open_ = false;
      choice = Choice{(fs::path(listing_.folder) / name).string(), true};
    } else if (save) {
      problem_ = "type a file name to save the session under";
    }
    ImGui::SameLine();
  }
  ImGui::BeginDisabled(!inRange);
  if (ImGui::Button(purpose_ == Purpose::Session ? "Load" : "Open") && inRange) {
    const session::FileEntry entry = listing_.entries[static_cast<size_t>(selected_)];
    choice = activate(entry.path, entry.kind);
  }
  recordItem(shared, "browser_open");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) open_ = false;
  recordItem(shared, "browser_cancel");
  return choice;
}

std::optional<FileBrowser::Choice> FileBrowser::draw(SharedView& shared, const Sidebar& sidebar) {
  if (!open_) return std::nullopt;
  const char* title = infoOf(purpose_).title;
  if (justOpened_) ImGui::OpenPopup(title);
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowSize(ImVec2(viewport->WorkSize.x * 0.8f, viewport->WorkSize.y * 0.8f), ImGuiCond_Always);
  ImGui::SetNextWindowPos(ImVec2(viewport->WorkPos.x + viewport->WorkSize.x * 0.5f, viewport->WorkPos.y + viewport->WorkSize.y * 0.5f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) {
    open_ = justOpened_;  // closed from outside (another popup took over): closed here too
    return std::nullopt;
  }
  justOpened_ = false;
  const ImVec2 at = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  shared.regions["browser"] = {at.x, at.y, at.x + size.x, at.y + size.y};
  std::optional<Choice> choice = handleKeys();
  if (ImGui::Button("Up")) navigate(session::parentFolder(listing_.folder));
  recordItem(shared, "browser_up");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 9);
  if (ImGui::InputText("##browser_folder", &folderInput_, ImGuiInputTextFlags_EnterReturnsTrue)) {
    std::error_code ec;
    if (fs::is_directory(folderInput_, ec)) navigate(folderInput_);
    else if (!choice) choice = activate(folderInput_, session::classifyPath(folderInput_));
  }
  recordItem(shared, "browser_folder");
  ImGui::SameLine();
  if (ImGui::Checkbox("hidden", &showHidden_)) navigate(listing_.folder);
  recordItem(shared, "browser_hidden");
  const float footer = ImGui::GetFrameHeightWithSpacing() + ImGui::GetTextLineHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  ImGui::BeginChild("browser_sidebar", ImVec2(ImGui::GetFontSize() * 14, -footer), true);
  if (auto picked = drawSidebar(shared, sidebar); picked && !choice) choice = picked;
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("browser_entries", ImVec2(0, -footer));
  if (auto picked = drawEntries(shared); picked && !choice) choice = picked;
  ImGui::EndChild();
  if (auto picked = drawFooter(shared, sidebar); picked && !choice) choice = picked;
  if (!open_) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
  return choice;
}

}  // namespace tscope::gui

// What the file browser (app/gui/widgets/file_browser.h) lists: a folder's entries, each marked
// with what tscope can do with it (a model to open, a session to load, a lesson to present, an
// image), and the recent files kept in the preferences. No GUI here: unit-tested on scratch folders.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tscope::session {

enum class FileKind { Folder, Model, Session, Lesson, Image, Other };
const char* fileKindName(FileKind kind);  // "folder", "model", "session", "lesson", "image", "file"

// What `path` is, from its type, name and a peek at its first bytes; never throws, never opens
// anything but a regular file (a FIFO would block):
//   Model    a folder with a config.json (tscope's, HuggingFace's), or a .bin file that starts with
//            llm.c's checkpoint magic (20240326, little-endian int32) or is a llama2.c checkpoint
//            (looksLikeLlama2c: its header, and the file size it implies);
//   Session  a .json file whose first 4 KiB hold "tscope_session";
//   Lesson   a .json file whose first 4 KiB hold "tscope-lesson";
//   Image    .png, .jpg, .jpeg, .bmp, .pgm, .ppm (by name);
//   Folder   any other folder; Other anything else.
FileKind classifyPath(const std::string& path);

struct FileEntry {
  std::string name;  // the file name, as the folder has it
  std::string path;  // folder / name
  FileKind kind = FileKind::Other;
  bool folder = false;  // a folder (a model folder too): entered, listed first
  uintmax_t bytes = 0;  // files only
};

struct FolderListing {
  std::string folder;  // absolute, normalised
  std::vector<FileEntry> entries;
  std::string problem;  // "" or one line: the folder cannot be read (entries then empty)
  int hidden = 0;       // entries left out: dot files, and files of kinds not asked for
};

// The entries of `folder`: every folder (a model folder marked Model), then the files whose kind is
// in `wanted` (all files when `wanted` is empty); each group sorted by name, case-insensitively.
// Names starting with '.' are left out unless `showHidden`. Never throws: an unreadable or missing
// folder is a listing with its problem.
FolderListing listFolder(const std::string& folder, const std::vector<FileKind>& wanted, bool showHidden = false);

// The paths of the model folders (a config.json inside) in `folder`, sorted by name as listFolder
// sorts: the shipped models of assets/models for the model picker and the Compare panel.
std::vector<std::string> modelFolders(const std::string& folder);

// The folder above `folder` ("/" stays "/").
std::string parentFolder(const std::string& folder);

// `recent` with `path` first (moved there when already in it), at most `keep` long.
std::vector<std::string> withRecent(std::vector<std::string> recent, const std::string& path, size_t keep);

}  // namespace tscope::session

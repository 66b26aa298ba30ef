// Folder listings and file kinds for the file browser (file_kinds.h).
#include "app/session/file_kinds.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "model/io/llama2c.h"

namespace tscope::session {

namespace fs = std::filesystem;

const char* fileKindName(FileKind kind) {
  switch (kind) {
    case FileKind::Folder: return "folder";
    case FileKind::Model: return "model";
    case FileKind::Session: return "session";
    case FileKind::Lesson: return "lesson";
    case FileKind::Image: return "image";
    case FileKind::Other: break;
  }
  return "file";
}

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The first `n` bytes of a regular file ("" when it cannot be read).
std::string peek(const fs::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// llm.c's checkpoint header starts with the magic number 20240326 (llm.c's train_gpt2.c,
// gpt2_build_from_checkpoint), an int32 in the file's (little-endian) byte order.
constexpr uint32_t kLlmcMagic = 20240326;

FileKind classifyFile(const fs::path& path) {
  const std::string ext = lower(path.extension().string());
  if (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".pgm" || ext == ".ppm") return FileKind::Image;
  if (ext == ".bin") {
    const std::string head = peek(path, 4);
    if (head.size() == 4) {
      uint32_t magic = 0;
      for (int i = 3; i >= 0; --i) magic = (magic << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
      if (magic == kLlmcMagic) return FileKind::Model;
    }
    return looksLikeLlama2c(path.string()) ? FileKind::Model : FileKind::Other;  // llama2.c's stories15M.bin and its kin
  }
  if (ext == ".json") {
    const std::string head = peek(path, 4096);
    if (head.find("\"tscope_session\"") != std::string::npos) return FileKind::Session;
    if (head.find("\"tscope-lesson\"") != std::string::npos) return FileKind::Lesson;
  }
  return FileKind::Other;
}

}  // namespace

FileKind classifyPath(const std::string& pathString) {
  const fs::path path(pathString);
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links: a link to a model folder is one
  if (ec) return FileKind::Other;
  if (fs::is_directory(status)) {
    std::error_code configEc;
    return fs::is_regular_file(path / "config.json", configEc) ? FileKind::Model : FileKind::Folder;
  }
  return fs::is_regular_file(status) ? classifyFile(path) : FileKind::Other;
}

FolderListing listFolder(const std::string& folder, const std::vector<FileKind>& wanted, bool showHidden) {
  FolderListing listing;
  std::error_code ec;
  fs::path at = fs::absolute(fs::path(folder.empty() ? "." : folder), ec).lexically_normal();
  if (at.has_relative_path() && !at.has_filename()) at = at.parent_path();  // no trailing separator
  listing.folder = at.string();
  if (!fs::is_directory(at, ec)) {
    listing.problem = listing.folder + ": " + (fs::exists(at, ec) ? "not a folder" : "no such folder");
    return listing;
  }
  fs::directory_iterator it(at, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    listing.problem = listing.folder + ": cannot be read (" + ec.message() + ")";
    return listing;
  }
  std::vector<FileEntry> folders, files;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      listing.problem = listing.folder + ": stopped reading it (" + ec.message() + ")";
      break;
    }
    const std::string name = it->path().filename().string();
    if (!showHidden && name.starts_with(".")) {
      ++listing.hidden;
      continue;
    }
    FileEntry entry{name, it->path().string(), classifyPath(it->path().string()), false, 0};
    std::error_code typeEc;
    entry.folder = it->is_directory(typeEc);  // follows a link
    if (entry.folder) {
      folders.push_back(std::move(entry));
      continue;
    }
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), entry.kind) == wanted.end()) {
      ++listing.hidden;
      continue;
    }
    std::error_code sizeEc;
    const uintmax_t bytes = it->is_regular_file(sizeEc) ? it->file_size(sizeEc) : 0;
    entry.bytes = sizeEc ? 0 : bytes;
    files.push_back(std::move(entry));
  }
  auto byName = [](const FileEntry& a, const FileEntry& b) {
    const std::string la = lower(a.name), lb = lower(b.name);
    return la != lb ? la < lb : a.name < b.name;
  };
  std::sort(folders.begin(), folders.end(), byName);
  std::sort(files.begin(), files.end(), byName);
  listing.entries = std::move(folders);
  listing.entries.insert(listing.entries.end(), std::make_move_iterator(files.begin()), std::make_move_iterator(files.end()));
  return listing;
}

std::vector<std::string> modelFolders(const std::string& folder) {
  std::vector<std::string> paths;
  for (const FileEntry& entry : listFolder(folder, {}).entries)
    if (entry.folder && entry.kind == FileKind::Model) paths.push_back(entry.path);
  return paths;
}

std::string parentFolder(const std::string& folder) {
  fs::path path = fs::path(folder).lexically_normal();
  if (path.has_relative_path() && !path.has_filename()) path = path.parent_path();  // "/a/b/" is "/a/b"
  const fs::path parent = path.has_relative_path() ? path.parent_path() : path;
  return parent.empty() ? folder : parent.string();
}

std::vector<std::string> withRecent(std::vector<std::string> recent, const std::string& path, size_t keep) {
  std::erase(recent, path);
  recent.insert(recent.begin(), path);
  if (recent.size() > keep) recent.resize(keep);
  return recent;
}

}  // namespace tscope::session

// The file browser's folder listings (app/session/file_kinds.h): each entry's kind from its type,
// name and first bytes, folders first, the filter by kind, hidden files, unreadable folders as one
// line, and the recent-files list.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "app/session/file_kinds.h"
#include "test_files.h"

using namespace tscope::session;
using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

namespace {

std::vector<std::string> names(const FolderListing& listing) {
  std::vector<std::string> out;
  for (const FileEntry& e : listing.entries) out.push_back(e.name + ":" + fileKindName(e.kind));
  return out;
}

std::string llmcHeader() {
  std::string bytes(16, '\0');
  const uint32_t magic = 20240326;
  for (int i = 0; i < 4; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((magic >> (8 * i)) & 0xff);
  return bytes;
}

}  // namespace

TEST(FileKinds, EachEntryIsMarkedByWhatTscopeCanDoWithIt) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("brown-small"));
  writeBytes(dir.file("brown-small/config.json"), "{}");
  std::filesystem::create_directories(dir.file("notes"));
  writeBytes(dir.file("class.json"), R"({"tscope_session": 1, "model": "x"})");
  writeBytes(dir.file("attention.json"), R"({"format": "tscope-lesson", "version": 1})");
  writeBytes(dir.file("other.json"), R"({"n_layer": 2})");
  writeBytes(dir.file("gpt2_124M.bin"), llmcHeader());
  writeBytes(dir.file("random.bin"), "not a checkpoint");
  writeBytes(dir.file("Cat.PNG"), "");
  writeBytes(dir.file("readme.txt"), "hello");
  writeBytes(dir.file(".hidden.json"), R"({"tscope_session": 1})");

  const FolderListing all = listFolder(dir.path().string(), {});
  EXPECT_EQ(all.problem, "");
  EXPECT_EQ(names(all), (std::vector<std::string>{"brown-small:model", "notes:folder", "attention.json:lesson", "Cat.PNG:image", "class.json:session",
                                                  "gpt2_124M.bin:model", "other.json:file", "random.bin:file", "readme.txt:file"}));
  EXPECT_EQ(all.hidden, 1);
  EXPECT_EQ(all.entries[8].bytes, 5u);
  EXPECT_EQ(all.entries[0].path, (dir.path() / "brown-small").string());
  EXPECT_TRUE(all.entries[0].folder);
  EXPECT_TRUE(all.entries[1].folder);
  EXPECT_FALSE(all.entries[5].folder);  // gpt2_124M.bin: a model, a file

  // Only sessions asked for: folders stay (to walk into), other files are counted as hidden.
  const FolderListing sessions = listFolder(dir.path().string(), {FileKind::Session});
  EXPECT_EQ(names(sessions), (std::vector<std::string>{"brown-small:model", "notes:folder", "class.json:session"}));
  EXPECT_EQ(sessions.hidden, 7);  // six files of other kinds and the dot file
  EXPECT_EQ(names(listFolder(dir.path().string(), {FileKind::Session}, true)).back(), "class.json:session");
  EXPECT_EQ(names(listFolder(dir.path().string(), {FileKind::Session}, true))[2], ".hidden.json:session");

  EXPECT_EQ(classifyPath(dir.file("brown-small")), FileKind::Model);
  EXPECT_EQ(classifyPath(dir.file("missing")), FileKind::Other);
}

TEST(FileKinds, AFifoIsNotOpenedAndABadFolderIsOneLine) {
  ScratchDir dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe.json").c_str(), 0600), 0);
  EXPECT_EQ(classifyPath(dir.file("pipe.json")), FileKind::Other);  // would block if it were opened
  EXPECT_EQ(names(listFolder(dir.path().string(), {})), (std::vector<std::string>{"pipe.json:file"}));

  const FolderListing missing = listFolder(dir.file("nowhere"), {});
  EXPECT_TRUE(missing.entries.empty());
  EXPECT_EQ(missing.problem, dir.file("nowhere") + ": no such folder");
  writeBytes(dir.file("plain.txt"), "x");
  EXPECT_EQ(listFolder(dir.file("plain.txt"), {}).problem, dir.file("plain.txt") + ": not a folder");
  if (::geteuid() != 0) {  // root reads any folder
    std::filesystem::create_directories(dir.file("locked"));
    ::chmod(dir.file("locked").c_str(), 0);
    EXPECT_NE(listFolder(dir.file("locked"), {}).problem.find("cannot be read"), std::string::npos);
    ::chmod(dir.file("locked").c_str(), 0700);
  }
}

TEST(FileKinds, FoldersAreNormalisedAndTheParentStopsAtTheRoot) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("a/b"));
  EXPECT_EQ(listFolder(dir.file("a/b/../b/"), {}).folder, dir.file("a/b"));
  EXPECT_EQ(parentFolder(dir.file("a/b")), dir.file("a"));
  EXPECT_EQ(parentFolder(dir.file("a/b") + "/"), dir.file("a"));
  EXPECT_EQ(parentFolder("/"), "/");
  EXPECT_EQ(parentFolder("/tmp"), "/");
}

TEST(FileKinds, RecentFilesPutTheLatestFirstWithoutRepeats) {
  std::vector<std::string> recent;
  for (int i = 0; i < 15; ++i) recent = withRecent(recent, "f" + std::to_string(i), 12);
  EXPECT_EQ(recent.size(), 12u);
  EXPECT_EQ(recent.front(), "f14");
  EXPECT_EQ(recent.back(), "f3");
  recent = withRecent(recent, "f10", 12);
  EXPECT_EQ(recent.front(), "f10");
  EXPECT_EQ(std::count(recent.begin(), recent.end(), "f10"), 1);
  EXPECT_EQ(recent.size(), 12u);
}

TEST(FileKinds, ModelFoldersAreTheFoldersWithAConfig) {
  const std::string shipped = std::string(TSCOPE_SOURCE_DIR) + "/assets/models";
  const std::vector<std::string> models = modelFolders(shipped);
  EXPECT_NE(std::find(models.begin(), models.end(), shipped + "/brown-small"), models.end());
  EXPECT_NE(std::find(models.begin(), models.end(), shipped + "/induction-2l"), models.end());
  EXPECT_EQ(std::find(models.begin(), models.end(), shipped + "/configs"), models.end());  // a folder without config.json
  EXPECT_TRUE(std::is_sorted(models.begin(), models.end()));
  EXPECT_TRUE(modelFolders(shipped + "/no-such-folder").empty());
}

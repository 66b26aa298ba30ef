// The user's preferences file (user_preferences.h): a round trip keeps every field; a missing file
// is the defaults with no line, a corrupt or out-of-range one the defaults with one line naming it;
// the window opens fitted to the screen's work area, a saved place kept on it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/session/user_preferences.h"
#include "model/core/error.h"
#include "tests/test_files.h"

using namespace tscope;
using namespace tscope::session;

TEST(UserPreferences, ARoundTripKeepsEveryFieldAndTheFileIsWrittenWhole) {
  tscope::testing::ScratchDir dir;
  UserPreferences prefs;
  prefs.preferences.fontScale = 1.5f;
  prefs.preferences.projector = true;
  prefs.preferences.mapMemoryMiB = 64;
  prefs.window = WindowPlace{12, 34, 1000, 700, true};
  prefs.model = "/models/brown-moe";
  prefs.prompt = "a prompt with \"quotes\" and a\nnewline";
  prefs.panel = PanelId::Residual;
  prefs.recentFiles = {"/models/brown-moe", "/home/me/class.json"};
  const std::string path = (dir.path() / "nested" / "tscope" / "preferences.json").string();
  saveUserPreferences(path, prefs);  // makes the directories
  std::string warning;
  const std::optional<UserPreferences> back = loadUserPreferences(path, warning);
  ASSERT_TRUE(back.has_value()) << warning;
  EXPECT_EQ(*back, prefs);
  EXPECT_EQ(warning, "");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(loadUserPreferences((dir.path() / "none.json").string(), warning).has_value());
  EXPECT_EQ(warning, "");  // no file: the defaults, nothing to say
}

TEST(UserPreferences, ABadFileIsTheDefaultsAndOneLineNamingIt) {
  tscope::testing::ScratchDir dir;
  const std::string path = (dir.path() / "preferences.json").string();
  for (const char* text : {"{not json", "[]", "{\"model\": \"m\"}", "{\"tscope_preferences\": 1, \"font_scale\": 40}",
                           "{\"tscope_preferences\": 1, \"map_memory_mib\": 1}",
                           "{\"tscope_preferences\": 1, \"window\": {\"width\": 100, \"height\": 100}}", "{\"tscope_preferences\": 1, \"window\": 3}",
                           "{\"tscope_preferences\": 1, \"prompt\": 7}", "{\"tscope_preferences\": 1, \"recent_files\": \"a\"}",
                           "{\"tscope_preferences\": 1, \"recent_files\": [\"a\", 3]}", "{\"tscope_preferences\": 1, \"recent_files\": [\"\"]}"}) {
    std::ofstream(path) << text;
    std::string warning;
    EXPECT_FALSE(loadUserPreferences(path, warning).has_value()) << text;
    EXPECT_NE(warning.find(path), std::string::npos) << text << ": " << warning;
    EXPECT_EQ(warning.find('\n'), std::string::npos) << warning;
  }
  std::filesystem::create_directory(dir.path() / "a_directory");
  std::string warning;
  EXPECT_FALSE(loadUserPreferences((dir.path() / "a_directory").string(), warning).has_value());
  EXPECT_NE(warning.find("a_directory"), std::string::npos) << warning;
  // An unknown panel name is not an error: the default panel.
  const UserPreferences unknown = userPreferencesFromJsonText("p.json", "{\"tscope_preferences\": 1, \"panel\": \"gone\"}");
  EXPECT_FALSE(unknown.panel.has_value());
  // A longer recent list than is kept (a hand-edited file) is cut, not refused.
  nlohmann::json many = {{"tscope_preferences", 1}, {"recent_files", nlohmann::json::array()}};
  for (int i = 0; i < 40; ++i) many["recent_files"].push_back("f" + std::to_string(i));
  EXPECT_EQ(userPreferencesFromJsonText("p.json", many.dump()).recentFiles.size(), kRecentFilesKept);
}

TEST(UserPreferences, TheWindowFitsTheScreenItOpensOn) {
  // No saved place: at most 1600x1000, centred; maximized below 1440x900.
  EXPECT_EQ(fitWindow(std::nullopt, {0, 0, 2560, 1440, false}), (WindowPlace{480, 220, 1600, 1000, false}));
  EXPECT_EQ(fitWindow(std::nullopt, {0, 27, 1280, 693, false}), (WindowPlace{0, 27, 1280, 693, true}));
  EXPECT_EQ(fitWindow(std::nullopt, {0, 0, 1024, 768, false}), (WindowPlace{0, 0, 1024, 768, true}));
  EXPECT_EQ(fitWindow(std::nullopt, {0, 0, 1440, 900, false}).maximized, false);
  // A saved place is kept where it fits, shrunk and moved onto a smaller screen.
  EXPECT_EQ(fitWindow(WindowPlace{100, 50, 1200, 800, false}, {0, 0, 1920, 1080, false}), (WindowPlace{100, 50, 1200, 800, false}));
  EXPECT_EQ(fitWindow(WindowPlace{900, 600, 1600, 1000, true}, {0, 0, 1280, 720, false}), (WindowPlace{0, 0, 1280, 720, true}));
  EXPECT_EQ(fitWindow(WindowPlace{-500, 2000, 800, 600, false}, {1920, 0, 1280, 1024, false}), (WindowPlace{1920, 424, 800, 600, false}));
}

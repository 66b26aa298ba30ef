// Every character of the shipped lessons (captions, formulas, questions) is one the UI font is
// rasterised with (app/gui/glyph_ranges.h): a character outside those ranges is drawn as '?' on the
// projector, as ⌈ ⌉ were in a capacity formula.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/gui/glyph_ranges.h"

namespace tscope::gui {
namespace {

// The code points of UTF-8 text (the lesson parser has already refused invalid UTF-8 in CI's other tests).
std::vector<unsigned> codePoints(const std::string& text) {
  std::vector<unsigned> out;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    const int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    unsigned cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    out.push_back(cp);
    i += 1 + extra;
  }
  return out;
}

TEST(LessonGlyphs, EveryCharacterOfTheShippedLessonsIsInTheFont) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TSCOPE_SOURCE_DIR) + "/assets/lessons")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    for (unsigned cp : codePoints(text.str()))
      if (cp >= 0x20 && !fontHasGlyph(cp))
        ADD_FAILURE() << entry.path().filename() << ": U+" << std::hex << std::uppercase << cp << " is not in the UI font's glyph ranges";
  }
  EXPECT_GT(files, 0) << "no shipped lessons";
}

TEST(LessonGlyphs, TheRangesHoldWhatTheyShouldAndNotMore) {
  for (unsigned cp : {0x41u, 0x3B1u, 0x221Au, 0x2308u, 0x2113u, 0x1D40u}) EXPECT_TRUE(fontHasGlyph(cp)) << std::hex << cp;
  for (unsigned cp : {0x4E2Du, 0x1F600u, 0x0400u}) EXPECT_FALSE(fontHasGlyph(cp)) << std::hex << cp;
}

}  // namespace
}  // namespace tscope::gui

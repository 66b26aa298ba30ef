// The Unicode ranges the UI font is rasterised with (platform.cpp), in one place so that a test can
// check that every character of the shipped lessons is drawn, not shown as '?'.
#pragma once

namespace tscope::gui {

// Pairs of first and last code points, then 0 (ImGui's glyph range format, 16-bit code points):
// Latin-1; Greek; the phonetic block's superscript T; punctuation, super- and subscripts;
// letterlike symbols (ℓ, ℝ); arrows and mathematical operators; miscellaneous technical (⌈ ⌉).
inline constexpr unsigned short kFontGlyphRanges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x1D00, 0x1DBF, 0x2000, 0x209F,
                                                      0x2100, 0x214F, 0x2190, 0x22FF, 0x2300, 0x23FF, 0};

inline bool fontHasGlyph(unsigned codePoint) {
  for (int i = 0; kFontGlyphRanges[i] != 0; i += 2)
    if (codePoint >= kFontGlyphRanges[i] && codePoint <= kFontGlyphRanges[i + 1]) return true;
  return false;
}

}  // namespace tscope::gui

// Internal: strict UTF-8 decoding that never loses a byte (each invalid byte is its own unit) and
// the character classes the pre-tokenizers' regexes use (\p{L}, \p{N}, \s over the tables in
// unicode_tables.inc), and the text edits the tokenizer.json tokenizers share. Defined in tokenizer.cpp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tscope::unicode {

// One unit of text: a valid UTF-8 code point, or a single byte that is not part of one.
struct Utf8Unit {
  char32_t codePoint = 0;  // meaningful only when valid
  int length = 1;          // bytes
  bool valid = false;
};
// Strict UTF-8 (RFC 3629) at text[pos] (pos < size): no overlongs, no surrogates, nothing above U+10FFFF.
Utf8Unit decodeUtf8Unit(std::string_view text, size_t pos);

// Letter = \p{L}, Number = \p{N}, Space = White_Space (\s); Other is everything else, invalid bytes included.
enum class CharClass : unsigned char { Letter, Number, Space, Other };
struct ClassifiedUnit {
  CharClass charClass;
  int length;  // bytes
};
ClassifiedUnit classifyUnitAt(std::string_view text, size_t pos);

// `text` without its leading / trailing White_Space characters (Unicode, not only ASCII).
std::string_view trimLeadingSpace(std::string_view text);
std::string_view trimTrailingSpace(std::string_view text);
// Every occurrence of `from` (not empty: an empty one changes nothing) replaced by `to`, left to right.
void replaceAll(std::string& text, std::string_view from, std::string_view to);

}  // namespace tscope::unicode

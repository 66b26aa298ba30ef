// Tokenizer pieces shared by both kinds: UTF-8 splitting that never loses a byte (each invalid byte
// is its own unit), GPT-2's pre-tokenization regex written out by hand over those units (std::regex
// cannot do \p{L}), and finding the tokenizer files in a model directory.
#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>

#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {
namespace {

struct CodePointRange {
  char32_t first, last;  // inclusive
};
#include "model/tokenize/unicode_tables.inc"

// One unit of text: a valid UTF-8 code point, or a single byte that is not part of one.
struct Utf8Unit {
  char32_t codePoint = 0;  // meaningful only when valid
  int length = 1;          // bytes
  bool valid = false;
};

bool isContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF.
Utf8Unit decodeUtf8Unit(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  const size_t avail = text.size() - pos;
  if (lead < 0x80) return {lead, 1, true};
  int length = 0;
  char32_t codePoint = 0;
  unsigned char secondMin = 0x80, secondMax = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, codePoint = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, codePoint = lead & 0x0F;
    if (lead == 0xE0) secondMin = 0xA0;  // overlong below U+0800
    if (lead == 0xED) secondMax = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, codePoint = lead & 0x07;
    if (lead == 0xF0) secondMin = 0x90;  // overlong below U+10000
    if (lead == 0xF4) secondMax = 0x8F;  // above U+10FFFF
  } else {
    return {};  // stray continuation byte, C0/C1 overlong lead, or F5..FF
  }
  if (avail < static_cast<size_t>(length)) return {};
  if (byte(pos + 1) < secondMin || byte(pos + 1) > secondMax) return {};
  for (int i = 1; i < length; ++i) {
    if (!isContinuation(byte(pos + i))) return {};
    codePoint = (codePoint << 6) | (byte(pos + i) & 0x3F);
  }
  return {codePoint, length, true};
}

// The character classes of GPT-2's pattern. Other = [^\s\p{L}\p{N}], which includes invalid bytes.
enum class CharClass : unsigned char { Letter, Number, Space, Other };

template <size_t N>
bool inRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](char32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

CharClass classifyCodePoint(char32_t cp) {
  if (inRanges(kWhiteSpaceRanges, cp)) return CharClass::Space;
  if (inRanges(kLetterRanges, cp)) return CharClass::Letter;
  if (inRanges(kNumberRanges, cp)) return CharClass::Number;
  return CharClass::Other;
}

const std::array<CharClass, 128> kAsciiClasses = [] {
  std::array<CharClass, 128> classes{};
  for (char32_t cp = 0; cp < 128; ++cp) classes[cp] = classifyCodePoint(cp);
  return classes;
}();

struct ClassifiedUnit {
  CharClass charClass;
  int length;
};

ClassifiedUnit classifyUnitAt(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {kAsciiClasses[lead], 1};
  Utf8Unit unit = decodeUtf8Unit(text, pos);
  return {unit.valid ? classifyCodePoint(unit.codePoint) : CharClass::Other, unit.length};
}

// End of the run of units of class `runClass` that starts at `pos` (the unit at pos is in the run).
size_t endOfRun(std::string_view text, size_t pos, CharClass runClass) {
  while (pos < text.size()) {
    ClassifiedUnit unit = classifyUnitAt(text, pos);
    if (unit.charClass != runClass) break;
    pos += unit.length;
  }
  return pos;
}

// The end of the match of `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
// that starts at `pos`, trying the alternatives in order as a backtracking regex engine would.
size_t endOfPreToken(std::string_view text, size_t pos) {
  // 's 't 're 've 'm 'll 'd (case-sensitive, ASCII apostrophe only).
  if (text[pos] == '\'') {
    std::string_view rest = text.substr(pos + 1);
    for (std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"})
      if (rest.starts_with(suffix)) return pos + 1 + suffix.size();
  }
  ClassifiedUnit first = classifyUnitAt(text, pos);
  // ` ?X+` for X in letters, numbers, other: the class of the first unit after an optional space
  // decides which of the three alternatives can match, so they never compete.
  if (text[pos] == ' ' && pos + 1 < text.size()) {
    ClassifiedUnit next = classifyUnitAt(text, pos + 1);
    if (next.charClass != CharClass::Space) return endOfRun(text, pos + 1, next.charClass);
  }
  if (first.charClass != CharClass::Space) return endOfRun(text, pos, first.charClass);
  // `\s+(?!\S)`: the whole white-space run if it reaches the end of the text, else the run less
  // its last unit (so that unit can lead the next word); a one-unit run falls through to `\s+`.
  size_t lastUnitStart = pos;
  size_t end = pos;
  while (end < text.size()) {
    ClassifiedUnit unit = classifyUnitAt(text, end);
    if (unit.charClass != CharClass::Space) break;
    lastUnitStart = end;
    end += unit.length;
  }
  if (end == text.size() || lastUnitStart == pos) return end;
  return lastUnitStart;
}

}  // namespace

std::vector<std::string_view> gpt2PreTokenizeViews(std::string_view text) {
  std::vector<std::string_view> words;
  words.reserve(text.size() / 4 + 1);
  for (size_t pos = 0; pos < text.size();) {
    size_t end = endOfPreToken(text, pos);
    words.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

std::vector<std::string> gpt2PreTokenize(std::string_view text) {
  std::vector<std::string> words;
  for (std::string_view word : gpt2PreTokenizeViews(text)) words.emplace_back(word);
  return words;
}

const char* gpt2PreTokenizerUnicodeVersion() { return kUnicodeTablesVersion; }

size_t utf8CharacterLength(std::string_view text, size_t pos) { return decodeUtf8Unit(text, pos).length; }

std::vector<std::string> splitUtf8Characters(std::string_view text) {
  std::vector<std::string> characters;
  characters.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    int length = decodeUtf8Unit(text, pos).length;
    characters.emplace_back(text.substr(pos, length));
    pos += length;
  }
  return characters;
}

std::string printableBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    Utf8Unit unit = decodeUtf8Unit(bytes, pos);
    if (unit.valid) {
      out.append(bytes.substr(pos, unit.length));
    } else {
      const auto byte = static_cast<unsigned char>(bytes[pos]);
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
    pos += unit.length;
  }
  return out;
}

std::unique_ptr<Tokenizer> loadTokenizerFromDir(const std::string& dir, const std::string& kind) {
  namespace fs = std::filesystem;
  auto has = [&](const char* name) { return fs::is_regular_file(fs::path(dir) / name); };
  auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
  if (kind == "gpt2-bpe") {
    if (has("vocab.json") && has("merges.txt")) return loadGpt2Tokenizer(path("vocab.json"), path("merges.txt"));
    if (has("encoder.json") && has("vocab.bpe")) return loadGpt2Tokenizer(path("encoder.json"), path("vocab.bpe"));
    if (has("vocab.json")) throw Error(dir + ": has vocab.json but no merges.txt (GPT-2 BPE needs both)");
    if (has("encoder.json")) throw Error(dir + ": has encoder.json but no vocab.bpe (GPT-2 BPE needs both)");
    throw Error(dir + ": no GPT-2 tokenizer files (need vocab.json + merges.txt, or encoder.json + vocab.bpe)");
  }
  if (kind == "char") {
    if (has("chars.json")) return loadCharTokenizer(path("chars.json"));
    throw Error(dir + ": no chars.json (the character tokenizer's file)");
  }
  throw Error("unknown tokenizer kind \"" + kind + "\" (expected \"gpt2-bpe\" or \"char\")");
}

}  // namespace tscope

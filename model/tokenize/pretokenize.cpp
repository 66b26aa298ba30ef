// The pre-tokenizer patterns of pretokenize.h as hand-written matchers: at each position the
// regex's alternatives are tried in order, as a backtracking engine would, over UTF-8 units
// classified by unicode_text.h. Each matcher returns the end of the match that starts at `pos`.
#include "model/tokenize/pretokenize.h"

#include "model/tokenize/tokenizer.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {
namespace {

using unicode::CharClass;
using unicode::ClassifiedUnit;
using unicode::classifyUnitAt;

constexpr std::string_view kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool isLineBreak(char c) { return c == '\r' || c == '\n'; }

// The end of a contraction 's 't 're 've 'm 'll 'd at pos (0 if none); case-insensitive when asked.
size_t endOfContraction(std::string_view text, size_t pos, bool ignoreCase) {
  if (text[pos] != '\'') return 0;
  auto lower = [&](char c) { return ignoreCase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
    if (pos + 1 + suffix.size() > text.size()) continue;
    bool match = true;
    for (size_t i = 0; i < suffix.size() && match; ++i) match = lower(text[pos + 1 + i]) == suffix[i];
    if (match) return pos + 1 + suffix.size();
  }
  return 0;
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
size_t endOfGpt2PreToken(std::string_view text, size_t pos) {
  // 's 't 're 've 'm 'll 'd (case-sensitive, ASCII apostrophe only).
  if (size_t end = endOfContraction(text, pos, false)) return end;
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

// Llama 3 / Qwen2: `(?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+`.
size_t endOfLlama3PreToken(std::string_view text, size_t pos, int maxDigits) {
  if (size_t end = endOfContraction(text, pos, true)) return end;
  const ClassifiedUnit first = classifyUnitAt(text, pos);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (first.charClass == CharClass::Letter) return endOfRun(text, pos, CharClass::Letter);
  const bool canLead = first.charClass != CharClass::Number && !isLineBreak(text[pos]);
  if (canLead && pos + first.length < text.size() && classifyUnitAt(text, pos + first.length).charClass == CharClass::Letter)
    return endOfRun(text, pos + first.length, CharClass::Letter);
  // \p{N}{1,maxDigits}
  if (first.charClass == CharClass::Number) {
    size_t end = pos;
    for (int digits = 0; digits < maxDigits && end < text.size(); ++digits) {
      const ClassifiedUnit unit = classifyUnitAt(text, end);
      if (unit.charClass != CharClass::Number) break;
      end += unit.length;
    }
    return end;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  size_t otherStart = pos;
  if (text[pos] == ' ' && pos + 1 < text.size() && classifyUnitAt(text, pos + 1).charClass == CharClass::Other) otherStart = pos + 1;
  if (classifyUnitAt(text, otherStart).charClass == CharClass::Other) {
    size_t end = endOfRun(text, otherStart, CharClass::Other);
    while (end < text.size() && isLineBreak(text[end])) ++end;
    return end;
  }
  // White space from here on: the run [pos, runEnd), its last unit, and its last line break.
  size_t runEnd = pos, lastUnitStart = pos, lastBreakEnd = 0;
  while (runEnd < text.size()) {
    const ClassifiedUnit unit = classifyUnitAt(text, runEnd);
    if (unit.charClass != CharClass::Space) break;
    if (isLineBreak(text[runEnd])) lastBreakEnd = runEnd + 1;
    lastUnitStart = runEnd;
    runEnd += unit.length;
  }
  // `\s*[\r\n]+`: \s* gives back units until a line break follows, then [\r\n]+ takes the breaks
  // from there; the last break of the run is where that first succeeds.
  if (lastBreakEnd != 0) return lastBreakEnd;
  // `\s+(?!\S)` then `\s+`, as in GPT-2's pattern.
  if (runEnd == text.size() || lastUnitStart == pos) return runEnd;
  return lastUnitStart;
}

size_t endOfPreToken(std::string_view text, size_t pos, SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::Gpt2: return endOfGpt2PreToken(text, pos);
    case SplitPattern::Llama3: return endOfLlama3PreToken(text, pos, 3);
    case SplitPattern::Qwen2: return endOfLlama3PreToken(text, pos, 1);
  }
  return text.size();
}

}  // namespace

std::optional<SplitPattern> knownSplitPattern(std::string_view regex) {
  for (SplitPattern pattern : {SplitPattern::Gpt2, SplitPattern::Llama3, SplitPattern::Qwen2})
    if (regex == splitPatternRegex(pattern)) return pattern;
  return std::nullopt;
}

std::string_view splitPatternRegex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::Gpt2: return kGpt2Regex;
    case SplitPattern::Llama3: return kLlama3Regex;
    case SplitPattern::Qwen2: return kQwen2Regex;
  }
  return {};
}

std::vector<std::string_view> preTokenizeViews(std::string_view text, SplitPattern pattern) {
  std::vector<std::string_view> words;
  words.reserve(text.size() / 4 + 1);
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = endOfPreToken(text, pos, pattern);
    words.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

std::vector<std::string_view> gpt2PreTokenizeViews(std::string_view text) { return preTokenizeViews(text, SplitPattern::Gpt2); }

std::vector<std::string> gpt2PreTokenize(std::string_view text) {
  std::vector<std::string> words;
  for (std::string_view word : gpt2PreTokenizeViews(text)) words.emplace_back(word);
  return words;
}

}  // namespace tscope

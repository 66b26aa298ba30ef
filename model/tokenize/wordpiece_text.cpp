// BERT's normalizer and pre-tokenizer (wordpiece_text.h) over the classes of bert_tables.inc. The
// steps follow HuggingFace's BertNormalizer in order: clean_text, handle_chinese_chars,
// strip_accents (NFD, then drop Mn), lowercase (char::to_lowercase, character by character: a
// final sigma becomes "σ" as in the tokenizers library, not "ς" as Python's str.lower would give).
#include "model/tokenize/wordpiece_text.h"

#include <algorithm>
#include <iterator>

#include "model/tokenize/bpe_core.h"
#include "model/tokenize/nfc.h"
#include "model/tokenize/unicode_text.h"

namespace tscope::wordpiece {
namespace {

struct CodePointRange {
  char32_t first, last;  // inclusive
};
struct LowercaseRun {
  char32_t first, last;
  int32_t delta;   // lowercase = code point + delta
  int32_t stride;  // every stride-th code point from first
};
#include "model/tokenize/bert_tables.inc"

template <size_t N>
bool inRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp, [](char32_t value, const CodePointRange& r) { return value < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

constexpr int32_t kReplacement = 0xFFFD;

// The text as code points, each invalid byte read as U+FFFD (a lossy decoder's reading).
std::vector<int32_t> decode(std::string_view text) {
  std::vector<int32_t> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Unit unit = unicode::decodeUtf8Unit(text, pos);
    chars.push_back(unit.valid ? static_cast<int32_t>(unit.codePoint) : kReplacement);
    pos += unit.length;
  }
  return chars;
}

std::string encode(const std::vector<int32_t>& chars) {
  std::string out;
  out.reserve(chars.size());
  for (int32_t c : chars) {
    if (c < 0x80) out += static_cast<char>(c);
    else out += bpe::encodeUtf8(static_cast<char32_t>(c));
  }
  return out;
}

bool isSpaceAt(std::string_view text, size_t pos, int& length) {
  const unicode::ClassifiedUnit unit = unicode::classifyUnitAt(text, pos);
  length = unit.length;
  return unit.charClass == unicode::CharClass::Space;
}

}  // namespace

bool isBertWhiteSpace(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return true;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  const std::string bytes = bpe::encodeUtf8(cp);
  return unicode::classifyUnitAt(bytes, 0).charClass == unicode::CharClass::Space;
}

bool isBertControl(char32_t cp) { return cp != '\t' && cp != '\n' && cp != '\r' && inRanges(kOtherRanges, cp); }

bool isBertPunctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return true;
  return cp >= 0x80 && inRanges(kPunctuationRanges, cp);
}

// transformers' BasicTokenizer._is_chinese_char. The tokenizers library's is_chinese_char starts
// its sixth range at 0x2B920 instead of 0x2B820; these are the Python ranges.
bool isChineseChar(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool isNonspacingMark(char32_t cp) { return cp >= 0x300 && inRanges(kNonspacingMarkRanges, cp); }

std::u32string lowercase(char32_t cp) {
  if (cp < 0x80) return std::u32string(1, cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
  if (cp == 0x130) return U"i\u0307";  // the one character whose lowercase is two
  auto it = std::upper_bound(std::begin(kLowercaseRuns), std::end(kLowercaseRuns), cp,
                             [](char32_t value, const LowercaseRun& r) { return value < r.first; });
  if (it != std::begin(kLowercaseRuns)) {
    const LowercaseRun& run = *std::prev(it);
    if (cp <= run.last && (cp - run.first) % static_cast<char32_t>(run.stride) == 0)
      return std::u32string(1, static_cast<char32_t>(static_cast<int32_t>(cp) + run.delta));
  }
  return std::u32string(1, cp);
}

const char* bertUnicodeVersion() { return kBertUnicodeVersion; }

std::string bertNormalize(std::string_view text, const BertNormalizerOptions& options) {
  std::vector<int32_t> chars = decode(text), next;
  next.reserve(chars.size());
  auto swap = [&] {
    chars.swap(next);
    next.clear();
  };
  if (options.cleanText) {
    for (int32_t c : chars) {
      if (c == 0 || c == kReplacement || isBertControl(static_cast<char32_t>(c))) continue;
      next.push_back(isBertWhiteSpace(static_cast<char32_t>(c)) ? ' ' : c);
    }
    swap();
  }
  if (options.handleChineseChars) {
    for (int32_t c : chars) {
      if (isChineseChar(static_cast<char32_t>(c))) next.insert(next.end(), {' ', c, ' '});
      else next.push_back(c);
    }
    swap();
  }
  if (options.stripsAccents()) {
    for (int32_t c : decode(toNfd(encode(chars))))
      if (!isNonspacingMark(static_cast<char32_t>(c))) next.push_back(c);
    swap();
  }
  if (options.lowercase) {
    for (int32_t c : chars)
      for (char32_t low : lowercase(static_cast<char32_t>(c))) next.push_back(static_cast<int32_t>(low));
    swap();
  }
  return encode(chars);
}

std::vector<std::string_view> bertPreTokenize(std::string_view text) {
  std::vector<std::string_view> words;
  size_t start = 0;
  auto flush = [&](size_t end) {
    if (end > start) words.push_back(text.substr(start, end - start));
  };
  for (size_t pos = 0; pos < text.size();) {
    int length = 1;
    if (isSpaceAt(text, pos, length)) {
      flush(pos);
      start = pos + length;
    } else {
      const unicode::Utf8Unit unit = unicode::decodeUtf8Unit(text, pos);
      if (unit.valid && isBertPunctuation(unit.codePoint)) {
        flush(pos);
        words.push_back(text.substr(pos, length));
        start = pos + length;
      }
    }
    pos += length;
  }
  flush(text.size());
  return words;
}

}  // namespace tscope::wordpiece

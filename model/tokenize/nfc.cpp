// NFC as in UAX #15: decompose every character fully (Hangul syllables by arithmetic, the rest by
// the canonical mappings applied recursively), sort each run of non-starters by combining class
// (stable), then compose each character with the last starter unless something between blocks it.
// An invalid UTF-8 byte is carried as -1 - byte: a starter that composes with nothing.
#include "model/tokenize/nfc.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "model/tokenize/bpe_core.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {
namespace {

struct CombiningClassRange {
  char32_t first, last;
  unsigned char combiningClass;
};
struct CanonicalPair {
  char32_t first, second, codePoint;  // codePoint <-> first second (second 0: a singleton)
};
#include "model/tokenize/nfc_decompositions.inc"
#include "model/tokenize/nfc_tables.inc"

constexpr int32_t kHangulBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int combiningClass(int32_t cp) {
  if (cp < 0x300) return 0;
  auto it = std::upper_bound(std::begin(kCombiningClasses), std::end(kCombiningClasses), static_cast<char32_t>(cp),
                             [](char32_t value, const CombiningClassRange& r) { return value < r.first; });
  return it != std::begin(kCombiningClasses) && static_cast<char32_t>(cp) <= std::prev(it)->last ? std::prev(it)->combiningClass : 0;
}

// The primary composites ordered by code point, for decomposing them.
const std::vector<CanonicalPair>& compositesByCodePoint() {
  static const std::vector<CanonicalPair> sorted = [] {
    std::vector<CanonicalPair> pairs(std::begin(kCompositions), std::end(kCompositions));
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.codePoint < b.codePoint; });
    return pairs;
  }();
  return sorted;
}

const CanonicalPair* findMapping(int32_t cp) {
  auto byCodePoint = [](const CanonicalPair& p, char32_t value) { return p.codePoint < value; };
  const auto value = static_cast<char32_t>(cp);
  auto other = std::lower_bound(std::begin(kOtherDecompositions), std::end(kOtherDecompositions), value, byCodePoint);
  if (other != std::end(kOtherDecompositions) && other->codePoint == value) return other;
  const auto& composites = compositesByCodePoint();
  auto primary = std::lower_bound(composites.begin(), composites.end(), value, byCodePoint);
  return primary != composites.end() && primary->codePoint == value ? &*primary : nullptr;
}

void decompose(int32_t cp, std::vector<int32_t>& out) {
  if (cp >= kHangulBase && cp < kHangulBase + kSCount) {
    const int32_t index = cp - kHangulBase;
    out.push_back(kLBase + index / kNCount);
    out.push_back(kVBase + (index % kNCount) / kTCount);
    if (index % kTCount) out.push_back(kTBase + index % kTCount);
    return;
  }
  const CanonicalPair* mapping = cp >= 0xC0 ? findMapping(cp) : nullptr;
  if (!mapping) return out.push_back(cp);
  decompose(static_cast<int32_t>(mapping->first), out);
  if (mapping->second) decompose(static_cast<int32_t>(mapping->second), out);
}

// The composite of (first, second), or -1.
int32_t compose(int32_t first, int32_t second) {
  if (first < 0 || second < 0) return -1;
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kHangulBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kHangulBase && first < kHangulBase + kSCount && (first - kHangulBase) % kTCount == 0 && second > kTBase && second < kTBase + kTCount)
    return first + (second - kTBase);
  const CanonicalPair key{static_cast<char32_t>(first), static_cast<char32_t>(second), 0};
  auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), key,
                             [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second < b.second; });
  return it != std::end(kCompositions) && it->first == key.first && it->second == key.second ? static_cast<int32_t>(it->codePoint) : -1;
}

bool isAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// The canonical decomposition of the text in canonical order (NFD), with each character's
// combining class; an invalid byte b is -1 - b.
void decomposeOrdered(std::string_view text, std::vector<int32_t>& chars, std::vector<int>& classes) {
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Unit unit = unicode::decodeUtf8Unit(text, pos);
    if (unit.valid) decompose(static_cast<int32_t>(unit.codePoint), chars);
    else chars.push_back(-1 - static_cast<unsigned char>(text[pos]));
    pos += unit.length;
  }
  classes.resize(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) classes[i] = chars[i] < 0 ? 0 : combiningClass(chars[i]);
  for (size_t start = 0; start < chars.size();) {  // canonical ordering of each run of non-starters
    if (classes[start] == 0) {
      ++start;
      continue;
    }
    size_t end = start;
    while (end < chars.size() && classes[end] != 0) ++end;
    std::vector<std::pair<int, int32_t>> run;
    for (size_t i = start; i < end; ++i) run.emplace_back(classes[i], chars[i]);
    std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = start; i < end; ++i) std::tie(classes[i], chars[i]) = run[i - start];
    start = end;
  }
}

std::string encodeChars(const std::vector<int32_t>& chars, size_t reserve) {
  std::string out;
  out.reserve(reserve);
  for (int32_t c : chars) out += c < 0 ? std::string(1, static_cast<char>(-1 - c)) : bpe::encodeUtf8(static_cast<char32_t>(c));
  return out;
}

}  // namespace

std::string toNfd(std::string_view text) {
  if (isAscii(text)) return std::string(text);
  std::vector<int32_t> chars;
  std::vector<int> classes;
  decomposeOrdered(text, chars, classes);
  return encodeChars(chars, text.size() + text.size() / 2);
}

std::string toNfc(std::string_view text) {
  if (isAscii(text)) return std::string(text);
  std::vector<int32_t> chars;  // decomposed
  std::vector<int> classes;
  decomposeOrdered(text, chars, classes);
  std::vector<int32_t> composed;
  int starter = -1, lastClass = 0;  // index in `composed` of the last starter; class of the last kept char
  for (size_t i = 0; i < chars.size(); ++i) {
    const int cls = classes[i];
    if (starter >= 0) {
      const bool adjacent = starter == static_cast<int>(composed.size()) - 1;
      if (adjacent || lastClass < cls) {
        const int32_t composite = compose(composed[starter], chars[i]);
        if (composite >= 0) {
          composed[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) starter = static_cast<int>(composed.size());
    lastClass = cls;
    composed.push_back(chars[i]);
  }
  return encodeChars(composed, text.size());
}

const char* nfcUnicodeVersion() { return kNfcUnicodeVersion; }

}  // namespace tscope

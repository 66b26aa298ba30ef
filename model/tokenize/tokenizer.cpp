// Tokenizer pieces shared by every kind: UTF-8 splitting that never loses a byte (each invalid byte
// is its own unit), the Unicode character classes the pre-tokenizers use (unicode_text.h), and
// finding the tokenizer files in a model directory.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "model/core/error.h"
#include "model/core/file_check.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"
#include "model/tokenize/tokenizer_wordpiece.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {
namespace unicode {
namespace {

struct CodePointRange {
  char32_t first, last;  // inclusive
};
#include "model/tokenize/unicode_tables.inc"

bool isContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

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

namespace {

template <size_t N>
bool inRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp, [](char32_t value, const CodePointRange& r) { return value < r.first; });
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

}  // namespace

ClassifiedUnit classifyUnitAt(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {kAsciiClasses[lead], 1};
  Utf8Unit unit = decodeUtf8Unit(text, pos);
  return {unit.valid ? classifyCodePoint(unit.codePoint) : CharClass::Other, unit.length};
}

namespace {
bool isSpaceAt(std::string_view text, size_t pos) { return classifyUnitAt(text, pos).charClass == CharClass::Space; }
}  // namespace

std::string_view trimLeadingSpace(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size() && isSpaceAt(text, pos)) pos += classifyUnitAt(text, pos).length;
  return text.substr(pos);
}

std::string_view trimTrailingSpace(std::string_view text) {
  size_t end = 0;  // end of the last non-space unit
  for (size_t pos = 0; pos < text.size();) {
    const auto unit = classifyUnitAt(text, pos);
    pos += unit.length;
    if (unit.charClass != CharClass::Space) end = pos;
  }
  return text.substr(0, end);
}

void replaceAll(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) out.append(text, pos, hit - pos).append(to);
  out.append(text, pos);
  text = std::move(out);
}

}  // namespace unicode

using unicode::decodeUtf8Unit;
using unicode::Utf8Unit;

const char* gpt2PreTokenizerUnicodeVersion() { return unicode::kUnicodeTablesVersion; }

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

std::string tokenizerKindName(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::Gpt2Bpe: return "gpt2-bpe";
    case TokenizerKind::HfBpe: return "hf-bpe";
    case TokenizerKind::WordPiece: return "wordpiece";
    case TokenizerKind::Char: return "char";
    case TokenizerKind::Labels: return "labels";
    case TokenizerKind::Spm: return "spm-bpe";
  }
  throw Error("tokenizerKindName: not a TokenizerKind (" + std::to_string(static_cast<int>(kind)) + ")");
}

std::unique_ptr<Tokenizer> loadTokenizerFromDir(const std::string& dir, const std::string& kind) {
  namespace fs = std::filesystem;
  auto has = [&](const char* name) {  // never throws: a looping link counts as there and is refused when read
    return somethingAt((fs::path(dir) / name).string());
  };
  auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
  if (kind == "gpt2-bpe") {
    if (has("vocab.json") && has("merges.txt")) return loadGpt2Tokenizer(path("vocab.json"), path("merges.txt"));
    if (has("encoder.json") && has("vocab.bpe")) return loadGpt2Tokenizer(path("encoder.json"), path("vocab.bpe"));
    if (has("tokenizer.json")) return loadHfTokenizer(path("tokenizer.json"));
    if (has("vocab.json")) throw Error(dir + ": has vocab.json but no merges.txt (GPT-2 BPE needs both)");
    if (has("encoder.json")) throw Error(dir + ": has encoder.json but no vocab.bpe (GPT-2 BPE needs both)");
    throw Error(dir + ": no GPT-2 tokenizer files (need vocab.json + merges.txt, encoder.json + vocab.bpe, or tokenizer.json)");
  }
  if (kind == "hf-bpe" || kind == "wordpiece") {
    if (has("tokenizer.json")) {
      auto tokenizer = loadHfTokenizer(path("tokenizer.json"));  // WordPiece or BPE, as the file says
      if (kind == "wordpiece" && tokenizer->kind() != TokenizerKind::WordPiece)
        throw Error(path("tokenizer.json") + ": the model is " + tokenizer->description() + ", not WordPiece");
      return tokenizer;
    }
    if (has("vocab.txt") && !has("vocab.json")) return loadWordPieceVocab(path("vocab.txt"));
    throw Error(dir + (kind == "wordpiece" ? ": no tokenizer.json or vocab.txt (BERT's WordPiece files)"
                                           : ": no tokenizer.json (the HuggingFace tokenizer's file)"));
  }
  if (kind == "char") {
    if (has("chars.json")) return loadCharTokenizer(path("chars.json"));
    throw Error(dir + ": no chars.json (the character tokenizer's file)");
  }
  if (kind == "labels") {
    if (!has("labels.json")) throw Error(dir + ": no labels.json (an image model's class names)");
    std::ifstream in(path("labels.json"), std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    if (!in && !in.eof()) throw Error(path("labels.json") + ": read error");
    return labelTokenizerFromJsonText(path("labels.json"), contents.str());
  }
  throw Error("unknown tokenizer kind \"" + kind + "\" (expected \"gpt2-bpe\", \"hf-bpe\", \"wordpiece\", \"char\" or \"labels\")");
}

namespace {

// A tokenizer whose model has more embedding rows than it has tokens (see padTokenizer).
class PaddedTokenizer : public Tokenizer {
 public:
  PaddedTokenizer(std::unique_ptr<Tokenizer> inner, int vocabSize) : inner_(std::move(inner)), vocabSize_(vocabSize) {}
  TokenizerKind kind() const override { return inner_->kind(); }
  std::string description() const override { return inner_->description(); }
  int vocabSize() const override { return vocabSize_; }
  std::vector<int> encode(std::string_view text) const override { return inner_->encode(text); }
  std::string decode(std::span<const int> ids) const override {
    std::vector<int> known;
    for (int id : ids) {
      if (id < 0 || id >= vocabSize_)
        throw Error("token id " + std::to_string(id) + " is outside the vocab (0.." + std::to_string(vocabSize_ - 1) + ")");
      if (id < inner_->vocabSize()) known.push_back(id);
    }
    return inner_->decode(known);
  }
  std::string tokenBytes(int id) const override { return padded(id) ? "" : inner_->tokenBytes(id); }
  std::string tokenText(int id) const override { return padded(id) ? "<unused " + std::to_string(id) + ">" : inner_->tokenText(id); }
  int eotId() const override { return inner_->eotId(); }
  int bosId() const override { return inner_->bosId(); }

 private:
  bool padded(int id) const { return id >= inner_->vocabSize() && id < vocabSize_; }
  std::unique_ptr<Tokenizer> inner_;
  int vocabSize_;
};

}  // namespace

std::unique_ptr<Tokenizer> padTokenizer(std::unique_ptr<Tokenizer> tokenizer, int vocabSize) {
  if (!tokenizer || vocabSize <= tokenizer->vocabSize()) return tokenizer;
  return std::make_unique<PaddedTokenizer>(std::move(tokenizer), vocabSize);
}

std::vector<std::string> Tokenizer::decodeEach(std::span<const int> ids) const {
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (int id : ids) pieces.push_back(decode(std::span<const int>(&id, 1)));
  return pieces;
}

}  // namespace tscope

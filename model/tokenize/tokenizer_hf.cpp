// The tokenizer.json BPE tokenizer: added tokens are split out of the raw text first (leftmost,
// longest), each other segment is normalized, pre-tokenized (byte-level with a regex split, or
// Metaspace, or whole) and BPE-merged word by word; words repeated within one encode() call are
// merged once. SentencePiece style: characters missing from the vocab become <0xNN> byte tokens.
#include <algorithm>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/nfc.h"
#include "model/tokenize/tokenizer_hf.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {

using unicode::replaceAll;
using unicode::trimLeadingSpace;
using unicode::trimTrailingSpace;
namespace {

class HfBpeTokenizer final : public bpe::ByteTableTokenizer {
 public:
  explicit HfBpeTokenizer(HfTokenizerSpec spec) : spec_(std::move(spec)) {
    const int vocab = static_cast<int>(spec_.pieceOfId.size());
    bytesOfId_.resize(vocab);
    idOfByte_.fill(-1);
    byteTokenId_.fill(-1);
    const auto byteOfCharacter = bpe::byteLevelBytesOfCharacters();
    std::vector<bool> isAdded(vocab, false);
    for (const HfAddedToken& token : spec_.addedTokens) isAdded[token.id] = true;
    for (int id = 0; id < vocab; ++id) {
      const std::string& piece = spec_.pieceOfId[id];
      idOfPiece_.emplace(piece, id);
      if (isAdded[id]) continue;  // decodes to its content (below)
      if (spec_.byteLevel) {
        for (const std::string& character : splitUtf8Characters(piece)) {
          auto it = byteOfCharacter.find(character);
          if (it == byteOfCharacter.end())
            throw Error(spec_.name + ": token \"" + printableBytes(piece) + "\" (id " + std::to_string(id) +
                        ") has a character outside the byte-level alphabet");
          bytesOfId_[id] += static_cast<char>(it->second);
        }
        if (bytesOfId_[id].size() == 1) idOfByte_[static_cast<unsigned char>(bytesOfId_[id][0])] = id;
        idOfBytes_.emplace(bytesOfId_[id], id);
      } else {
        const int byte = bpe::byteOfFallbackPiece(piece);
        if (byte >= 0) byteTokenId_[byte] = id;
        std::string bytes = piece;
        if (byte >= 0 && spec_.decodeByteFallback) bytes = std::string(1, static_cast<char>(byte));
        else
          for (const auto& [from, to] : spec_.decodeReplace) replaceAll(bytes, from, to);
        bytesOfId_[id] = std::move(bytes);
      }
    }
    for (int b = 0; b < 256 && spec_.byteLevel; ++b)
      if (idOfByte_[b] < 0) throw Error(spec_.name + ": byte-level vocab has no token for byte " + std::to_string(b));
    for (const HfAddedToken& token : spec_.addedTokens) {
      bytesOfId_[token.id] = token.content;
      addedByFirstByte_[static_cast<unsigned char>(token.content[0])].push_back(&token);
      if (eotId_ < 0 && (token.content == "<|endoftext|>" || token.content == "<|end_of_text|>" || token.content == "</s>")) eotId_ = token.id;
    }
    for (auto& [byte, tokens] : addedByFirstByte_)
      std::stable_sort(tokens.begin(), tokens.end(),
                       [](const HfAddedToken* a, const HfAddedToken* b) { return a->content.size() > b->content.size(); });
  }

  HfBpeTokenizer(const HfBpeTokenizer&) = delete;  // addedByFirstByte_ points into spec_
  HfBpeTokenizer& operator=(const HfBpeTokenizer&) = delete;

  TokenizerKind kind() const override { return TokenizerKind::HfBpe; }

  std::string description() const override {
    // SentencePiece style: U+2581 for spaces (Metaspace, or Llama 2's normalizer) and <0xNN> byte tokens.
    const bool sentencePiece = !spec_.byteLevel && (spec_.metaspace || spec_.byteFallback);
    std::string text = spec_.byteLevel ? "byte-level BPE"
                       : sentencePiece ? std::string("SentencePiece-style BPE") + (spec_.byteFallback ? " with byte fallback" : "")
                                       : "BPE";
    if (spec_.byteLevel && spec_.split) {
      const SplitPattern split = *spec_.split;
      return text + " (tokenizer.json, " + (split == SplitPattern::Gpt2 ? "GPT-2" : split == SplitPattern::Llama3 ? "Llama 3" : "Qwen2") + " split)";
    }
    return text + " (tokenizer.json)";
  }
  int bosId() const override { return spec_.bosId; }

  std::string decode(std::span<const int> ids) const override {
    std::string text = ByteTableTokenizer::decode(ids);
    for (int i = 0; i < spec_.decodeStripLeadingSpaces && !text.empty() && text[0] == ' '; ++i) text.erase(0, 1);
    return text;
  }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    ids.reserve(text.size() / 3 + 1);
    int section = 0;  // index of the text segment between added tokens (Metaspace's "first")
    const HfAddedToken* previousAdded = nullptr;
    size_t segmentStart = 0;
    auto flushSegment = [&](size_t end, const HfAddedToken* nextAdded) {
      std::string_view segment = text.substr(segmentStart, end - segmentStart);
      if (previousAdded && previousAdded->rstrip) segment = trimLeadingSpace(segment);
      if (nextAdded && nextAdded->lstrip) segment = trimTrailingSpace(segment);
      if (!segment.empty()) encodeSegment(segment, section++ == 0, ids);
    };
    for (size_t pos = 0; pos < text.size();) {
      const HfAddedToken* added = addedTokenAt(text, pos);
      if (!added) {
        ++pos;
        continue;
      }
      flushSegment(pos, added);
      ids.push_back(added->id);
      previousAdded = added;
      pos += added->content.size();
      segmentStart = pos;
    }
    flushSegment(text.size(), nullptr);
    return ids;
  }

 private:
  const HfAddedToken* addedTokenAt(std::string_view text, size_t pos) const {
    auto it = addedByFirstByte_.find(static_cast<unsigned char>(text[pos]));
    if (it == addedByFirstByte_.end()) return nullptr;
    for (const HfAddedToken* token : it->second)
      if (text.substr(pos).starts_with(token->content)) return token;
    return nullptr;
  }

  // Normalizer, pre-tokenizer and model on one segment of text between added tokens.
  void encodeSegment(std::string_view segment, bool firstSection, std::vector<int>& ids) const {
    std::string text(segment);
    for (const HfNormalizerStep& step : spec_.normalizer) {
      if (step.kind == HfNormalizerStep::Kind::Prepend && !text.empty()) text = step.to + text;
      if (step.kind == HfNormalizerStep::Kind::Replace) replaceAll(text, step.from, step.to);
      if (step.kind == HfNormalizerStep::Kind::Nfc) text = toNfc(text);
    }
    if (text.empty()) return;
    std::vector<std::string_view> words;
    if (spec_.byteLevel) {
      if (spec_.addPrefixSpace && text[0] != ' ') text.insert(0, 1, ' ');
      words = spec_.split ? preTokenizeViews(text, *spec_.split) : std::vector<std::string_view>{text};
    } else if (spec_.metaspace) {
      const std::string& mark = spec_.metaspaceReplacement;
      replaceAll(text, " ", mark);
      const bool prepend = spec_.metaspacePrepend == MetaspacePrepend::Always || (spec_.metaspacePrepend == MetaspacePrepend::First && firstSection);
      if (prepend && !text.starts_with(mark)) text = mark + text;
      words = spec_.metaspaceSplit ? splitBeforeMark(text, mark) : std::vector<std::string_view>{text};
    } else {
      words = {text};
    }
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;  // word -> range in cachedIds
    std::vector<int> cachedIds;
    bpe::MergeScratch scratch;
    for (std::string_view word : words) {
      auto [it, inserted] = cache.try_emplace(word, static_cast<uint32_t>(cachedIds.size()), 0);
      if (inserted) {
        encodeWord(word, scratch, cachedIds);
        it->second.second = static_cast<uint32_t>(cachedIds.size()) - it->second.first;
      }
      ids.insert(ids.end(), cachedIds.begin() + it->second.first, cachedIds.begin() + it->second.first + it->second.second);
    }
  }

  // Metaspace's split: each word starts at a mark (the text before the first mark is a word too).
  static std::vector<std::string_view> splitBeforeMark(std::string_view text, const std::string& mark) {
    std::vector<std::string_view> words;
    size_t start = 0;
    for (size_t hit = text.find(mark, 1); hit != std::string_view::npos; hit = text.find(mark, hit + mark.size())) {
      words.push_back(text.substr(start, hit - start));
      start = hit;
    }
    words.push_back(text.substr(start));
    return words;
  }

  void encodeWord(std::string_view word, bpe::MergeScratch& scratch, std::vector<int>& out) const {
    if (spec_.byteLevel) {
      if (spec_.ignoreMerges)
        if (auto it = idOfBytes_.find(std::string(word)); it != idOfBytes_.end()) return out.push_back(it->second);
      scratch.ids.resize(word.size());
      for (size_t i = 0; i < word.size(); ++i) scratch.ids[i] = idOfByte_[static_cast<unsigned char>(word[i])];
      spec_.merges.apply(scratch);
      return bpe::appendMergedIds(scratch, out);
    }
    if (spec_.ignoreMerges)
      if (auto it = idOfPiece_.find(std::string(word)); it != idOfPiece_.end()) return out.push_back(it->second);
    // SentencePiece style: runs of characters in the vocab are merged; the others fall back.
    scratch.ids.clear();
    auto flushRun = [&] {
      spec_.merges.apply(scratch);
      bpe::appendMergedIds(scratch, out);
      scratch.ids.clear();
    };
    for (size_t pos = 0; pos < word.size();) {
      const size_t length = utf8CharacterLength(word, pos);
      auto it = idOfPiece_.find(std::string(word.substr(pos, length)));
      if (it != idOfPiece_.end()) {
        scratch.ids.push_back(it->second);
      } else {
        flushRun();
        appendUnknown(word.substr(pos, length), out);
      }
      pos += length;
    }
    flushRun();
  }

  void appendUnknown(std::string_view character, std::vector<int>& out) const {
    bool allBytes = spec_.byteFallback;
    for (char c : character) allBytes = allBytes && byteTokenId_[static_cast<unsigned char>(c)] >= 0;
    if (allBytes) {
      for (char c : character) out.push_back(byteTokenId_[static_cast<unsigned char>(c)]);
    } else if (spec_.unkId >= 0 && !(spec_.fuseUnk && !out.empty() && out.back() == spec_.unkId)) {
      out.push_back(spec_.unkId);
    }
  }

  HfTokenizerSpec spec_;
  std::unordered_map<std::string, int> idOfPiece_;                                        // token string -> id (SentencePiece lookups)
  std::unordered_map<std::string, int> idOfBytes_;                                        // byte-level: raw bytes -> id (ignore_merges)
  std::array<int, 256> idOfByte_{};                                                       // byte-level: single-byte tokens
  std::array<int, 256> byteTokenId_{};                                                    // <0xNN> tokens (byte fallback)
  std::unordered_map<unsigned char, std::vector<const HfAddedToken*>> addedByFirstByte_;  // longest first
};

}  // namespace

std::unique_ptr<Tokenizer> makeHfBpeTokenizer(HfTokenizerSpec spec) { return std::make_unique<HfBpeTokenizer>(std::move(spec)); }

}  // namespace tscope

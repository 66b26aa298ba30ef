// The WordPiece tokenizer (tokenizer_wordpiece.h) and its vocab.txt reader. Encoding: the special
// tokens matched in the raw text, the normalizer on each segment between them, the tokens marked
// `normalized` matched in what it gives, then BertPreTokenizer and WordPiece word by word. Decoding
// follows the tokenizers library's WordPiece decoder: a continuation loses its prefix, every other
// token after the first gets a space in front, and cleanup works on each token so decoded.
#include "model/tokenize/tokenizer_wordpiece.h"

#include <algorithm>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/bpe_core.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {

using unicode::replaceAll;
using unicode::trimLeadingSpace;
using unicode::trimTrailingSpace;
namespace {

constexpr size_t kMaxFileBytes = size_t(1) << 30;  // 1 GiB
constexpr size_t kMaxVocab = size_t(1) << 22;      // 4M tokens
constexpr size_t kMaxTokenBytes = size_t(1) << 16;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using PieceIds = std::unordered_map<std::string, int, StringHash, std::equal_to<>>;

// The tokenizers library's decoders::wordpiece::cleanup, on one decoded token.
void cleanup(std::string& token) {
  static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  if (token.find(' ') == std::string::npos) return;
  for (const auto& [from, to] : kReplacements) replaceAll(token, from, to);
}

// Added tokens found in a text: at each position the longest one that starts there.
class AddedMatcher {
 public:
  struct Entry {
    std::string content;
    const HfAddedToken* token;
  };
  void add(std::string content, const HfAddedToken* token) {
    if (content.empty()) return;
    const auto first = static_cast<unsigned char>(content[0]);
    entries_[first].push_back({std::move(content), token});
  }
  void sort() {
    for (auto& [byte, list] : entries_)
      std::stable_sort(list.begin(), list.end(), [](const Entry& a, const Entry& b) { return a.content.size() > b.content.size(); });
  }
  bool empty() const { return entries_.empty(); }
  const Entry* at(std::string_view text, size_t pos) const {
    auto it = entries_.find(static_cast<unsigned char>(text[pos]));
    if (it == entries_.end()) return nullptr;
    for (const Entry& entry : it->second)
      if (text.substr(pos).starts_with(entry.content)) return &entry;
    return nullptr;
  }

  // Calls onText for each stretch between matches (lstrip / rstrip trimmed) and appends each match's id.
  template <typename OnText>
  void split(std::string_view text, std::vector<int>& ids, OnText onText) const {
    if (empty()) return onText(text);
    const HfAddedToken* previous = nullptr;
    size_t start = 0;
    auto flush = [&](size_t end, const HfAddedToken* next) {
      std::string_view segment = text.substr(start, end - start);
      if (previous && previous->rstrip) segment = trimLeadingSpace(segment);
      if (next && next->lstrip) segment = trimTrailingSpace(segment);
      if (!segment.empty()) onText(segment);
    };
    for (size_t pos = 0; pos < text.size();) {
      const Entry* match = at(text, pos);
      if (!match) {
        ++pos;
        continue;
      }
      flush(pos, match->token);
      ids.push_back(match->token->id);
      previous = match->token;
      pos += match->content.size();
      start = pos;
    }
    flush(text.size(), nullptr);
  }

 private:
  std::unordered_map<unsigned char, std::vector<Entry>> entries_;  // longest first
};

class WordPieceTokenizer final : public Tokenizer {
 public:
  explicit WordPieceTokenizer(WordPieceSpec spec) : spec_(std::move(spec)) {
    const auto fail = [&](const std::string& problem) { throw Error(spec_.name + ": " + problem); };
    if (spec_.pieceOfId.empty()) fail("empty vocab");
    if (spec_.pieceOfId.size() > kMaxVocab) fail("more than 4M tokens");
    const int modelVocab = static_cast<int>(spec_.pieceOfId.size());
    for (int id = 0; id < modelVocab; ++id) {
      const std::string& piece = spec_.pieceOfId[id];
      if (piece.empty() || piece.size() > kMaxTokenBytes) fail("token " + std::to_string(id) + " is empty or longer than 64 KiB");
      if (!idOfPiece_.emplace(piece, id).second)
        fail("duplicate token \"" + printableBytes(piece.substr(0, 40)) + "\" (ids " + std::to_string(idOfPiece_.at(piece)) + " and " +
             std::to_string(id) + ")");
    }
    if (spec_.unkId < 0 || spec_.unkId >= modelVocab) fail("no [UNK] token: the unknown token must be in the vocab");
    if (spec_.maxInputCharsPerWord < 0) fail("max_input_chars_per_word is negative");
    // Added tokens: an id in the vocab keeps the vocab's string; ids past it extend the vocab, without gaps.
    std::vector<const HfAddedToken*> beyond;
    for (const HfAddedToken& token : spec_.addedTokens) {
      if (token.content.empty() || token.content.size() > kMaxTokenBytes)
        fail("added token " + std::to_string(token.id) + " has an empty or huge content");
      if (token.id < 0 || static_cast<size_t>(token.id) >= kMaxVocab) fail("added token id " + std::to_string(token.id) + " is out of range");
      if (token.id >= modelVocab) beyond.push_back(&token);
    }
    std::sort(beyond.begin(), beyond.end(), [](auto* a, auto* b) { return a->id < b->id; });
    for (const HfAddedToken* token : beyond) {
      const auto next = static_cast<int>(spec_.pieceOfId.size());
      if (token->id < next) fail("two added tokens have id " + std::to_string(token->id));
      if (token->id > next) fail("no token has id " + std::to_string(next) + " (ids must be 0..N-1)");
      spec_.pieceOfId.push_back(token->content);
    }
    for (const HfAddedToken& token : spec_.addedTokens) {
      if (!token.normalized || !spec_.normalizer) raw_.add(token.content, &token);
      else normalized_.add(wordpiece::bertNormalize(token.content, *spec_.normalizer), &token);
    }
    raw_.sort();
    normalized_.sort();
  }

  WordPieceTokenizer(const WordPieceTokenizer&) = delete;  // the matchers point into spec_
  WordPieceTokenizer& operator=(const WordPieceTokenizer&) = delete;

  TokenizerKind kind() const override { return TokenizerKind::WordPiece; }
  std::string description() const override {
    const bool uncased = spec_.normalizer && spec_.normalizer->lowercase;
    return std::string("WordPiece (BERT") + (uncased ? ", uncased" : "") + ")";
  }
  int vocabSize() const override { return static_cast<int>(spec_.pieceOfId.size()); }
  std::string tokenBytes(int id) const override { return spec_.pieceOfId.at(checkedId(id)); }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    ids.reserve(text.size() / 4 + 1);
    std::string buffer;
    raw_.split(text, ids, [&](std::string_view segment) {
      if (!spec_.normalizer) return encodeNormalized(segment, ids, buffer);
      const std::string normalized = wordpiece::bertNormalize(segment, *spec_.normalizer);
      normalized_.split(normalized, ids, [&](std::string_view part) { encodeNormalized(part, ids, buffer); });
    });
    return ids;
  }

  std::string decode(std::span<const int> ids) const override {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string token = spec_.pieceOfId[checkedId(ids[i])];
      if (!spec_.wordPieceDecoder) {
        text += (i ? " " : "") + token;
        continue;
      }
      if (i != 0) {
        if (token.starts_with(spec_.decodePrefix)) token.erase(0, spec_.decodePrefix.size());
        else token.insert(0, 1, ' ');
      }
      if (spec_.decodeCleanup) cleanup(token);
      text += token;
    }
    return text;
  }

 private:
  int checkedId(int id) const {
    if (id < 0 || id >= vocabSize())
      throw Error("token id " + std::to_string(id) + " is outside the vocab (0.." + std::to_string(vocabSize() - 1) + ")");
    return id;
  }

  void encodeNormalized(std::string_view text, std::vector<int>& ids, std::string& buffer) const {
    if (!spec_.bertPreTokenizer) return encodeWord(text, ids, buffer);
    for (std::string_view word : wordpiece::bertPreTokenize(text)) encodeWord(word, ids, buffer);
  }

  // Greedy longest match first over the word's characters (an invalid byte counts as one).
  void encodeWord(std::string_view word, std::vector<int>& ids, std::string& buffer) const {
    if (word.empty()) return;
    std::vector<size_t> bounds;  // character starts, then the end
    for (size_t pos = 0; pos < word.size(); pos += utf8CharacterLength(word, pos)) bounds.push_back(pos);
    const size_t characters = bounds.size();
    bounds.push_back(word.size());
    if (characters > static_cast<size_t>(spec_.maxInputCharsPerWord)) return ids.push_back(spec_.unkId);
    const size_t mark = ids.size();
    for (size_t start = 0; start < characters;) {
      int found = -1;
      size_t end = characters;
      for (; end > start; --end) {
        const std::string_view piece = word.substr(bounds[start], bounds[end] - bounds[start]);
        auto it = start == 0 ? idOfPiece_.find(piece) : idOfPiece_.find(buffer.assign(spec_.continuingSubwordPrefix).append(piece));
        if (it != idOfPiece_.end()) {
          found = it->second;
          break;
        }
      }
      if (found < 0) {
        ids.resize(mark);
        return ids.push_back(spec_.unkId);
      }
      ids.push_back(found);
      start = end;
    }
  }

  WordPieceSpec spec_;
  PieceIds idOfPiece_;  // the model's vocab only: added tokens past it are never WordPiece pieces
  AddedMatcher raw_, normalized_;
};

}  // namespace

std::unique_ptr<Tokenizer> makeWordPieceTokenizer(WordPieceSpec spec) { return std::make_unique<WordPieceTokenizer>(std::move(spec)); }

std::unique_ptr<Tokenizer> wordPieceTokenizerFromVocabText(const std::string& name, const std::string& vocabTxt) {
  const auto fail = [&](const std::string& problem) { throw Error(name + ": " + problem); };
  if (vocabTxt.size() > kMaxFileBytes) fail("larger than 1 GiB");
  WordPieceSpec spec;
  spec.name = name;
  spec.normalizer = wordpiece::BertNormalizerOptions{};
  std::unordered_map<std::string_view, size_t> lineOf;
  std::string_view text = vocabTxt;
  for (size_t start = 0, line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view token = text.substr(start, end - start);
    if (token.ends_with('\r')) token.remove_suffix(1);
    start = end + 1;
    if (token.empty()) fail("line " + std::to_string(line) + " is empty (one token a line)");
    if (token.size() > kMaxTokenBytes) fail("line " + std::to_string(line) + " is longer than 64 KiB");
    if (spec.pieceOfId.size() >= kMaxVocab) fail("more than 4M tokens");
    if (auto [it, inserted] = lineOf.emplace(token, line); !inserted)
      fail("line " + std::to_string(line) + ": \"" + printableBytes(token.substr(0, 40)) + "\" is already line " + std::to_string(it->second));
    spec.pieceOfId.emplace_back(token);
  }
  if (spec.pieceOfId.empty()) fail("empty vocab (no tokens)");
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    auto it = lineOf.find(special);
    if (it == lineOf.end()) continue;
    const int id = static_cast<int>(it->second - 1);
    spec.addedTokens.push_back({special, id, true, false, false, false});
    if (std::string_view(special) == "[UNK]") spec.unkId = id;
  }
  if (spec.unkId < 0) fail("no [UNK] token (WordPiece's unknown token)");
  return makeWordPieceTokenizer(std::move(spec));
}

std::unique_ptr<Tokenizer> loadWordPieceVocab(const std::string& vocabTxtPath) {
  return wordPieceTokenizerFromVocabText(vocabTxtPath, bpe::readWholeFile(vocabTxtPath, kMaxFileBytes));
}

}  // namespace tscope

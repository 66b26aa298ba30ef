// SentencePiece's score-based BPE (tokenizer_spm.h), written from karpathy/llama2.c's run.c
// (encode: the dummy prefix, characters looked up whole or spelled as byte tokens, then the best
// scoring adjacent pair merged until none is a piece; decode: <0xNN> to the byte, no leading space
// after BOS) and llama.cpp's llm_tokenizer_spm (the same merge order as a priority queue over the
// adjacent pairs, ties to the leftmost: O(n log n) where run.c rescans every pair after each merge).
// Two deliberate differences from run.c: text is cut into strict UTF-8 characters (run.c glues any
// run of up to four bytes that look like continuations onto the byte before them, so "a\x80" fell
// back to two byte tokens and "\xC3\xA9\xA9" to three), each byte that is not part of a valid
// character becoming its byte token; and a byte-fallback token never merges with its neighbours
// (run.c would look up the concatenation "<0x41>b", which no SentencePiece vocabulary holds).
#include "model/tokenize/tokenizer_spm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/bpe_core.h"
#include "model/tokenize/unicode_text.h"

namespace tscope {

namespace {

using Type = SpmTokenType;

struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view piece) const { return std::hash<std::string_view>{}(piece); }
};

// One symbol of the text being merged: a piece spelled by bytes [start, start + length) of the
// normalized text, in a linked list of the live symbols (length 0 once merged into its left neighbour).
struct Symbol {
  int id;
  size_t start, length;
  int prev, next;
};

// A pair (left, its next) that would merge into `id`, as it was when pushed.
struct Candidate {
  float score;
  int left, right;
  size_t leftLength, rightLength;
  int id;
  // Lower priority: a lower score, or the same score further right.
  bool operator<(const Candidate& o) const { return score != o.score ? score < o.score : left > o.left; }
};

class ScoreBpeTokenizer final : public bpe::ByteTableTokenizer {
 public:
  ScoreBpeTokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int> types, ScoreBpeOptions options)
      : scores_(std::move(scores)), options_(std::move(options)) {
    const std::string& name = options_.name;
    const int vocab = static_cast<int>(pieces.size());
    if (pieces.empty()) throw Error(name + ": the vocabulary has no tokens");
    if (scores_.size() != pieces.size())
      throw Error(name + ": " + std::to_string(scores_.size()) + " scores for " + std::to_string(vocab) + " tokens");
    if (!types.empty() && types.size() != pieces.size())
      throw Error(name + ": " + std::to_string(types.size()) + " token types for " + std::to_string(vocab) + " tokens");
    if (options_.spaceMarker.empty()) throw Error(name + ": the space marker is empty");
    for (auto [what, id] : {std::pair{"BOS", options_.bosId}, std::pair{"EOS", options_.eosId}, std::pair{"unknown token", options_.unkId},
                            std::pair{"stop", options_.stopId}})
      if (id < -1 || id >= vocab)
        throw Error(name + ": the " + what + " id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")");
    types_ = types.empty() ? inferredTypes(pieces) : checkedTypes(types);
    bytesOfId_.resize(vocab);
    byteTokenId_.fill(-1);
    for (int id = 0; id < vocab; ++id) {
      const std::string& piece = pieces[id];
      if (std::isnan(scores_[id])) throw Error(name + ": token " + std::to_string(id) + " (\"" + printableBytes(piece) + "\") has a NaN score");
      if (types_[id] == Type::Byte) {
        const int byte = bpe::byteOfFallbackPiece(piece);
        if (byte < 0)
          throw Error(name + ": token " + std::to_string(id) + " (\"" + printableBytes(piece) + "\") is a byte token but not spelled <0xNN>");
        if (byteTokenId_[byte] < 0) byteTokenId_[byte] = id;
        bytesOfId_[id] = std::string(1, static_cast<char>(byte));
        continue;
      }
      const bool matched = types_[id] == Type::Normal || types_[id] == Type::UserDefined || types_[id] == Type::Undefined;
      if (matched && !piece.empty()) idOfPiece_.try_emplace(piece, id);  // a piece spelled twice: its lowest id
      bytesOfId_[id] = piece;
      if (matched || types_[id] == Type::Unused) unicode::replaceAll(bytesOfId_[id], options_.spaceMarker, " ");
    }
    for (int byte = 0; byte < 256; ++byte)
      if (byteTokenId_[byte] < 0 && options_.unkId < 0)
        throw Error(name + ": no byte token <0x" + hex(byte) + "> and no unknown token: some text could not be encoded");
    eotId_ = options_.stopId >= 0 ? options_.stopId : options_.eosId;
  }

  TokenizerKind kind() const override { return TokenizerKind::Spm; }
  std::string description() const override {
    const bool byteFallback = std::count(byteTokenId_.begin(), byteTokenId_.end(), -1) == 0;
    const std::string text = std::string("SentencePiece BPE with scores") + (byteFallback ? " and byte fallback" : "");
    return options_.source.empty() ? text : text + " (" + options_.source + ")";
  }
  int bosId() const override { return options_.bosId; }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    if (text.empty()) return ids;
    std::string normalized = options_.addDummyPrefix ? " " : "";
    normalized += text;
    if (options_.spaceMarker != " ") unicode::replaceAll(normalized, " ", options_.spaceMarker);
    ids.reserve(normalized.size() / 3 + 1);
    std::vector<Symbol> run;  // the characters since the last byte-fallback token
    for (size_t pos = 0; pos < normalized.size();) {
      const size_t length = unicode::decodeUtf8Unit(normalized, pos).length;
      const auto it = idOfPiece_.find(std::string_view(normalized).substr(pos, length));
      if (it != idOfPiece_.end()) {
        const int index = static_cast<int>(run.size());
        run.push_back({it->second, pos, length, index - 1, -1});
        if (index > 0) run[index - 1].next = index;
      } else {
        mergeInto(normalized, run, ids);
        run.clear();
        appendUnknown(std::string_view(normalized).substr(pos, length), ids);
      }
      pos += length;
    }
    mergeInto(normalized, run, ids);
    return ids;
  }

  std::string decode(std::span<const int> ids) const override {
    std::string text;
    int previous = -1;
    for (int id : ids) {
      checkId(id);
      std::string_view bytes = bytesOfId_[id];
      if (previous >= 0 && previous == options_.bosId && options_.addDummyPrefix && bytes.starts_with(' ')) bytes.remove_prefix(1);
      text += bytes;
      previous = id;
    }
    return text;
  }

 private:
  static std::string hex(int byte) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    return {kDigits[byte >> 4], kDigits[byte & 15]};
  }

  std::vector<Type> inferredTypes(const std::vector<std::string>& pieces) const {
    std::vector<Type> types(pieces.size(), Type::Normal);
    for (size_t id = 0; id < pieces.size(); ++id)
      if (bpe::byteOfFallbackPiece(pieces[id]) >= 0) types[id] = Type::Byte;
    for (int id : {options_.bosId, options_.eosId})
      if (id >= 0) types[id] = Type::Control;
    if (options_.unkId >= 0) types[options_.unkId] = Type::Unknown;
    return types;
  }

  std::vector<Type> checkedTypes(const std::vector<int>& types) const {
    std::vector<Type> out(types.size());
    for (size_t id = 0; id < types.size(); ++id) {
      if (types[id] < 0 || types[id] > 6)
        throw Error(options_.name + ": token " + std::to_string(id) + " has type " + std::to_string(types[id]) + " (token types are 0..6)");
      out[id] = static_cast<Type>(types[id]);
    }
    return out;
  }

  // A character no piece spells: its byte tokens when every byte has one, else the unknown token.
  void appendUnknown(std::string_view character, std::vector<int>& out) const {
    bool allBytes = true;
    for (char c : character) allBytes = allBytes && byteTokenId_[static_cast<unsigned char>(c)] >= 0;
    if (allBytes) {
      for (char c : character) out.push_back(byteTokenId_[static_cast<unsigned char>(c)]);
    } else {
      out.push_back(options_.unkId);  // the constructor made sure there is one
    }
  }

  // Merges `run` (consecutive characters of `text`) by score and appends the ids left.
  void mergeInto(const std::string& text, std::vector<Symbol>& run, std::vector<int>& out) const {
    if (run.empty()) return;
    std::priority_queue<Candidate> queue;
    auto pushPair = [&](int left) {
      if (left < 0 || run[left].next < 0) return;
      const Symbol &a = run[left], &b = run[a.next];
      const auto it = idOfPiece_.find(std::string_view(text).substr(a.start, a.length + b.length));
      if (it != idOfPiece_.end()) queue.push({scores_[it->second], left, a.next, a.length, b.length, it->second});
    };
    for (int i = 0; i + 1 < static_cast<int>(run.size()); ++i) pushPair(i);
    while (!queue.empty()) {
      const Candidate c = queue.top();
      queue.pop();
      Symbol &left = run[c.left], &right = run[c.right];
      // Stale: either side has merged since the pair was pushed.
      if (left.length != c.leftLength || left.next != c.right || right.length != c.rightLength) continue;
      left.id = c.id;
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (left.next >= 0) run[left.next].prev = c.left;
      pushPair(left.prev);
      pushPair(c.left);
    }
    for (int i = 0; i >= 0; i = run[i].next) out.push_back(run[i].id);
  }

  std::vector<float> scores_;
  std::vector<Type> types_;
  ScoreBpeOptions options_;
  std::unordered_map<std::string, int, PieceHash, std::equal_to<>> idOfPiece_;  // the pieces text may spell -> id
  std::array<int, 256> byteTokenId_{};                                          // <0xNN> tokens, -1 where none
};

int32_t readInt32(std::string_view bytes, size_t pos) {
  int32_t value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  return value;
}

}  // namespace

std::unique_ptr<Tokenizer> makeScoreBpeTokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int> types,
                                                 const ScoreBpeOptions& options) {
  return std::make_unique<ScoreBpeTokenizer>(std::move(pieces), std::move(scores), std::move(types), options);
}

std::unique_ptr<Tokenizer> llama2cTokenizerFromBytes(const std::string& name, std::string_view bytes, int vocabSize) {
  if (vocabSize < 3)
    throw Error(name + ": a model of " + std::to_string(vocabSize) + " tokens is too small for llama2.c's tokenizer (ids 0..2 are <unk>, <s>, </s>)");
  if (bytes.size() < 4) throw Error(name + ": truncated llama2.c tokenizer (" + std::to_string(bytes.size()) + " bytes, the header needs 4)");
  const uint32_t maxLength = static_cast<uint32_t>(readInt32(bytes, 0));
  std::vector<std::string> pieces;
  std::vector<float> scores;
  pieces.reserve(std::min<size_t>(vocabSize, bytes.size() / 8));
  size_t pos = 4;
  for (int id = 0; id < vocabSize; ++id) {
    const auto token = [&] { return "token " + std::to_string(id) + " of " + std::to_string(vocabSize); };
    if (bytes.size() - pos < 8)
      throw Error(name + ": truncated: " + token() + " needs its score and length at byte " + std::to_string(pos) + " but the file has " +
                  std::to_string(bytes.size()) + " bytes");
    float score;
    std::memcpy(&score, bytes.data() + pos, sizeof score);
    const int32_t length = readInt32(bytes, pos + 4);
    pos += 8;
    if (length < 0) throw Error(name + ": " + token() + " has a negative length (" + std::to_string(length) + ")");
    if (static_cast<uint32_t>(length) > maxLength)
      throw Error(name + ": " + token() + " is " + std::to_string(length) + " bytes long, more than the header's max_token_length " +
                  std::to_string(maxLength));
    if (bytes.size() - pos < static_cast<size_t>(length))
      throw Error(name + ": " + token() + "'s " + std::to_string(length) + " bytes at byte " + std::to_string(pos) +
                  " run past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
    pieces.emplace_back(bytes.substr(pos, length));
    scores.push_back(score);
    pos += length;
  }
  if (pos != bytes.size())
    throw Error(name + ": " + std::to_string(bytes.size() - pos) + " bytes after the " + std::to_string(vocabSize) +
                " tokens the model's vocab_size asks for: the tokenizer of a larger vocabulary? (a model with its own vocabulary reads tok" +
                std::to_string(vocabSize) + ".bin)");
  // tokenizer.py writes BOS and EOS as "\n<s>\n" and "\n</s>\n" (run.c prints them on lines of their own).
  if (pieces[1] == "\n<s>\n") pieces[1] = "<s>";
  if (pieces[2] == "\n</s>\n") pieces[2] = "</s>";
  ScoreBpeOptions options;
  options.name = name;
  options.spaceMarker = " ";
  options.bosId = 1;
  options.eosId = 2;
  options.unkId = 0;
  options.stopId = 1;  // run.c's generate: "the BOS (1) token delimits sequences"
  options.source = "llama2.c tokenizer.bin";
  return makeScoreBpeTokenizer(std::move(pieces), std::move(scores), {}, options);
}

std::unique_ptr<Tokenizer> loadLlama2cTokenizer(const std::string& path, int vocabSize) {
  return llama2cTokenizerFromBytes(path, bpe::readWholeFile(path, size_t(1) << 30), vocabSize);
}

}  // namespace tscope

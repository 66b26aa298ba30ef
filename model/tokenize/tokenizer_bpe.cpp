// GPT-2's byte-level BPE, giving the same ids as OpenAI's encoder.py: pre-tokenize, map each word's
// bytes to single-byte tokens, then apply merges lowest rank first. Merges run on a linked list with
// a heap of candidate pairs (O(n log n) per word, so a 1 MB run of spaces is fine); words repeated
// within one encode() call are looked up in a per-call cache.
#include <array>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to U+0100..U+0143, so every token string in vocab.json is printable.
std::array<char32_t, 256> gpt2ByteToCodePoint() {
  std::array<char32_t, 256> map{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  char32_t shifted = 256;
  for (int b = 0; b < 256; ++b) map[b] = printable[b] ? static_cast<char32_t>(b) : shifted++;
  return map;
}

// UTF-8 of a code point below U+0800 (all GPT-2's byte alphabet needs).
std::string encodeUtf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    throw Error("internal: GPT-2's byte alphabet ends at U+0143");
  }
  return out;
}

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return contents.str();
}

uint64_t pairKey(int left, int right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

class Gpt2BpeTokenizer final : public Tokenizer {
 public:
  // The contents of vocab.json and merges.txt; the paths name them in error messages.
  Gpt2BpeTokenizer(const std::string& vocabPath, const std::string& vocabText, const std::string& mergesPath,
                   const std::string& mergesText) {
    auto idOfTokenString = loadVocab(vocabPath, vocabText);
    loadMerges(mergesPath, mergesText, idOfTokenString);
  }

  std::string kind() const override { return "gpt2-bpe"; }
  int vocabSize() const override { return static_cast<int>(bytesOfId_.size()); }
  int eotId() const override { return eotId_; }

  std::string tokenBytes(int id) const override {
    checkId(id);
    return bytesOfId_[id];
  }
  std::string tokenText(int id) const override { return printableBytes(tokenBytes(id)); }

  std::string decode(std::span<const int> ids) const override {
    std::string text;
    for (int id : ids) {
      checkId(id);
      text += bytesOfId_[id];
    }
    return text;
  }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    ids.reserve(text.size() / 3 + 1);
    struct CachedWord {
      uint32_t first, count;  // range in cachedIds
    };
    std::unordered_map<std::string_view, CachedWord> cache;  // views into `text`
    std::vector<int> cachedIds;
    MergeScratch scratch;
    for (std::string_view word : gpt2PreTokenizeViews(text)) {
      if (word.size() == 1) {
        ids.push_back(idOfByte_[static_cast<unsigned char>(word[0])]);
        continue;
      }
      auto [it, inserted] = cache.try_emplace(word, CachedWord{static_cast<uint32_t>(cachedIds.size()), 0});
      if (inserted) {
        applyMerges(word, scratch, nullptr);
        for (int pos = 0; pos != -1; pos = scratch.next[pos]) cachedIds.push_back(scratch.ids[pos]);
        it->second.count = static_cast<uint32_t>(cachedIds.size()) - it->second.first;
      }
      ids.insert(ids.end(), cachedIds.begin() + it->second.first,
                 cachedIds.begin() + it->second.first + it->second.count);
    }
    return ids;
  }

  std::vector<BpeStep> mergeSteps(std::string_view word) const {
    MergeScratch scratch;
    std::vector<BpeStep> steps;
    auto currentPieces = [&] {
      std::vector<std::string> pieces;
      if (!word.empty())
        for (int pos = 0; pos != -1; pos = scratch.next[pos]) pieces.push_back(bytesOfId_[scratch.ids[pos]]);
      return pieces;
    };
    applyMerges(word, scratch, [&](const Merge& merge, int leftId, int rightId) {
      if (merge.rank < 0)
        steps.push_back({currentPieces(), "", "", -1});  // the initial split into bytes
      else
        steps.push_back({currentPieces(), bytesOfId_[leftId], bytesOfId_[rightId], merge.rank});
    });
    return steps;
  }

 private:
  struct Merge {
    int rank;      // line order in merges.txt: lower merges first
    int resultId;  // the token the pair becomes
  };
  // Working state of one word's merges, kept between words to avoid reallocating.
  struct MergeScratch {
    std::vector<int> ids;   // token id per symbol; -1 once merged into its left neighbour
    std::vector<int> prev;  // linked list over live symbols (-1 = none)
    std::vector<int> next;
  };
  struct Candidate {
    int rank, pos, leftId, rightId;  // the pair (symbol pos, its next) as it was when pushed
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  // Called once before any merge (with rank -1) and after each rank's merges are all applied.
  using MergeObserver = std::function<void(const Merge&, int leftId, int rightId)>;

  // GPT-2's bpe(): repeatedly take the lowest-rank adjacent pair and merge every occurrence of it
  // left to right. Candidates of one rank are popped in position order, which is that scan; a merge
  // only creates pairs containing the new token, never the pair being merged, so ranks don't mix.
  void applyMerges(std::string_view word, MergeScratch& s, const MergeObserver& observer) const {
    const int n = static_cast<int>(word.size());
    s.ids.resize(n), s.prev.resize(n), s.next.resize(n);
    for (int i = 0; i < n; ++i) {
      s.ids[i] = idOfByte_[static_cast<unsigned char>(word[i])];
      s.prev[i] = i - 1;
      s.next[i] = i + 1 < n ? i + 1 : -1;
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates;
    auto pushPair = [&](int pos) {
      if (pos < 0 || s.next[pos] < 0) return;
      int leftId = s.ids[pos], rightId = s.ids[s.next[pos]];
      auto it = mergeOfPair_.find(pairKey(leftId, rightId));
      if (it != mergeOfPair_.end()) candidates.push({it->second.rank, pos, leftId, rightId});
    };
    auto stillValid = [&](const Candidate& c) {
      return s.ids[c.pos] == c.leftId && s.next[c.pos] >= 0 && s.ids[s.next[c.pos]] == c.rightId;
    };
    for (int i = 0; i + 1 < n; ++i) pushPair(i);
    if (observer) observer(Merge{-1, -1}, -1, -1);
    std::vector<Candidate> sameRank;
    while (!candidates.empty()) {
      if (!stillValid(candidates.top())) {
        candidates.pop();
        continue;
      }
      const Candidate top = candidates.top();
      sameRank.clear();
      while (!candidates.empty() && candidates.top().rank == top.rank) {
        sameRank.push_back(candidates.top());
        candidates.pop();
      }
      const Merge& merge = mergeOfPair_.at(pairKey(top.leftId, top.rightId));
      for (const Candidate& c : sameRank) {
        if (!stillValid(c)) continue;  // its left symbol was taken by the merge just before it
        int right = s.next[c.pos];
        s.ids[c.pos] = merge.resultId;
        s.ids[right] = -1;
        s.next[c.pos] = s.next[right];
        if (s.next[right] >= 0) s.prev[s.next[right]] = c.pos;
        pushPair(s.prev[c.pos]);
        pushPair(c.pos);
      }
      if (observer) observer(merge, top.leftId, top.rightId);
    }
  }

  // Reads vocab.json / encoder.json ({"token string": id}); returns token string -> id for the merges.
  std::unordered_map<std::string, int> loadVocab(const std::string& path, const std::string& text) {
    nlohmann::json vocab;
    try {
      vocab = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": bad JSON: " + e.what());
    }
    if (!vocab.is_object()) throw Error(path + ": expected a JSON object of \"token\": id");
    const auto byteToCodePoint = gpt2ByteToCodePoint();
    std::unordered_map<std::string, unsigned char> byteOfAlphabetCharacter;  // UTF-8 of U+0021..U+0143
    for (int b = 0; b < 256; ++b) byteOfAlphabetCharacter[encodeUtf8(byteToCodePoint[b])] = static_cast<unsigned char>(b);

    std::unordered_map<std::string, int> idOfTokenString;
    bytesOfId_.assign(vocab.size(), std::string());
    std::vector<bool> seen(vocab.size(), false);
    for (const auto& [tokenString, value] : vocab.items()) {
      if (!value.is_number_integer())
        throw Error(path + ": id of token \"" + tokenString + "\" is not an integer: " + value.dump());
      const int64_t id = value.get<int64_t>();
      if (id < 0 || id >= static_cast<int64_t>(vocab.size()))
        throw Error(path + ": id " + std::to_string(id) + " of token \"" + tokenString + "\" is outside 0.." +
                    std::to_string(vocab.size() - 1) + " (ids must be 0..N-1 for N tokens)");
      if (seen[id]) throw Error(path + ": duplicate id " + std::to_string(id) + " (token \"" + tokenString + "\")");
      seen[id] = true;
      // A token string spells its bytes in GPT-2's alphabet, one character per byte.
      std::string bytes;
      for (const std::string& character : splitUtf8Characters(tokenString)) {
        auto it = byteOfAlphabetCharacter.find(character);
        if (it == byteOfAlphabetCharacter.end())
          throw Error(path + ": token \"" + tokenString + "\" has a character outside GPT-2's byte alphabet");
        bytes += static_cast<char>(it->second);
      }
      if (tokenString == "<|endoftext|>") eotId_ = static_cast<int>(id);
      bytesOfId_[id] = std::move(bytes);
      idOfTokenString.emplace(tokenString, static_cast<int>(id));
    }
    for (int b = 0; b < 256; ++b) {
      auto it = idOfTokenString.find(encodeUtf8(byteToCodePoint[b]));
      if (it == idOfTokenString.end())
        throw Error(path + ": no token for byte " + std::to_string(b) + " (a byte-level vocab needs all 256)");
      idOfByte_[b] = it->second;
    }
    return idOfTokenString;
  }

  // Reads merges.txt / vocab.bpe: an optional "#version" line, then one "left right" pair per line.
  void loadMerges(const std::string& path, const std::string& text, const std::unordered_map<std::string, int>& idOfTokenString) {
    std::istringstream lines(text);
    std::string line;
    int lineNumber = 0, rank = 0;
    auto idOf = [&](const std::string& tokenString) {
      auto it = idOfTokenString.find(tokenString);
      if (it == idOfTokenString.end())
        throw Error(path + ":" + std::to_string(lineNumber) + ": merge uses token \"" + tokenString +
                    "\" that is not in the vocab");
      return it->second;
    };
    while (std::getline(lines, line)) {
      ++lineNumber;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (lineNumber == 1 && line.starts_with("#version")) continue;
      if (line.empty()) continue;
      std::istringstream fields(line);
      std::vector<std::string> parts;
      for (std::string part; fields >> part;) parts.push_back(part);
      if (parts.size() != 2)
        throw Error(path + ":" + std::to_string(lineNumber) + ": expected two tokens separated by a space, got " +
                    std::to_string(parts.size()) + " in \"" + line + "\"");
      const int leftId = idOf(parts[0]), rightId = idOf(parts[1]);
      auto result = idOfTokenString.find(parts[0] + parts[1]);
      if (result == idOfTokenString.end())
        throw Error(path + ":" + std::to_string(lineNumber) + ": merge result \"" + parts[0] + parts[1] +
                    "\" is not in the vocab");
      // Like encoder.py's dict(zip(merges, range)), a repeated pair keeps its last rank.
      mergeOfPair_[pairKey(leftId, rightId)] = Merge{rank++, result->second};
    }
  }

  void checkId(int id) const {
    if (id < 0 || id >= vocabSize())
      throw Error("token id " + std::to_string(id) + " is outside the vocab (0.." + std::to_string(vocabSize() - 1) +
                  ")");
  }

  std::vector<std::string> bytesOfId_;  // (V) the raw bytes of each token
  std::array<int, 256> idOfByte_{};     // single-byte tokens, where every word starts
  std::unordered_map<uint64_t, Merge> mergeOfPair_;
  int eotId_ = -1;
};

std::unique_ptr<Tokenizer> loadGpt2Tokenizer(const std::string& vocabJsonPath, const std::string& mergesPath) {
  return gpt2TokenizerFromText(vocabJsonPath, readWholeFile(vocabJsonPath), mergesPath, readWholeFile(mergesPath));
}

std::unique_ptr<Tokenizer> gpt2TokenizerFromText(const std::string& vocabJsonName, const std::string& vocabJson,
                                                 const std::string& mergesName, const std::string& merges) {
  return std::make_unique<Gpt2BpeTokenizer>(vocabJsonName, vocabJson, mergesName, merges);
}

std::vector<BpeStep> bpeMergeSteps(const Tokenizer& tokenizer, std::string_view word) {
  const auto* bpe = dynamic_cast<const Gpt2BpeTokenizer*>(&tokenizer);
  if (!bpe) throw Error("BPE merge steps need a GPT-2 BPE tokenizer, not a \"" + tokenizer.kind() + "\" one");
  return bpe->mergeSteps(word);
}

}  // namespace tscope

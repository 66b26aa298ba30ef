// GPT-2's byte-level BPE, giving the same ids as OpenAI's encoder.py: pre-tokenize, map each word's
// bytes to single-byte tokens, then apply merges lowest rank first. Merges run on a linked list with
// a heap of candidate pairs (O(n log n) per word, so a 1 MB run of spaces is fine); words repeated
// within one encode() call are looked up in a per-call cache.
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/bpe_core.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

class Gpt2BpeTokenizer final : public bpe::ByteTableTokenizer {
 public:
  // The contents of vocab.json and merges.txt; the paths name them in error messages.
  Gpt2BpeTokenizer(const std::string& vocabPath, const std::string& vocabText, const std::string& mergesPath, const std::string& mergesText) {
    auto idOfTokenString = loadVocab(vocabPath, vocabText);
    loadMerges(mergesPath, mergesText, idOfTokenString);
  }

  TokenizerKind kind() const override { return TokenizerKind::Gpt2Bpe; }
  std::string description() const override { return "GPT-2 byte-level BPE"; }
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
        bpe::appendMergedIds(scratch, cachedIds);
        it->second.count = static_cast<uint32_t>(cachedIds.size()) - it->second.first;
      }
      ids.insert(ids.end(), cachedIds.begin() + it->second.first, cachedIds.begin() + it->second.first + it->second.count);
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
    applyMerges(word, scratch, [&](const bpe::MergeTable::Merge& merge, int leftId, int rightId) {
      if (merge.rank < 0) steps.push_back({currentPieces(), "", "", -1});  // the initial split into bytes
      else steps.push_back({currentPieces(), bytesOfId_[leftId], bytesOfId_[rightId], merge.rank});
    });
    return steps;
  }

 private:
  using MergeScratch = bpe::MergeScratch;

  // The word's bytes as single-byte tokens, then the merges.
  void applyMerges(std::string_view word, MergeScratch& s, const bpe::MergeTable::Observer& observer) const {
    s.ids.resize(word.size());
    for (size_t i = 0; i < word.size(); ++i) s.ids[i] = idOfByte_[static_cast<unsigned char>(word[i])];
    merges_.apply(s, observer);
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
    const auto byteToCodePoint = bpe::byteLevelCodePoints();
    const auto byteOfAlphabetCharacter = bpe::byteLevelBytesOfCharacters();  // UTF-8 of U+0021..U+0143

    std::unordered_map<std::string, int> idOfTokenString;
    bytesOfId_.assign(vocab.size(), std::string());
    std::vector<bool> seen(vocab.size(), false);
    for (const auto& [tokenString, value] : vocab.items()) {
      if (!value.is_number_integer()) throw Error(path + ": id of token \"" + tokenString + "\" is not an integer: " + value.dump());
      const int64_t id = value.get<int64_t>();
      if (id < 0 || id >= static_cast<int64_t>(vocab.size()))
        throw Error(path + ": id " + std::to_string(id) + " of token \"" + tokenString + "\" is outside 0.." + std::to_string(vocab.size() - 1) +
                    " (ids must be 0..N-1 for N tokens)");
      if (seen[id]) throw Error(path + ": duplicate id " + std::to_string(id) + " (token \"" + tokenString + "\")");
      seen[id] = true;
      // A token string spells its bytes in GPT-2's alphabet, one character per byte.
      std::string bytes;
      for (const std::string& character : splitUtf8Characters(tokenString)) {
        auto it = byteOfAlphabetCharacter.find(character);
        if (it == byteOfAlphabetCharacter.end()) throw Error(path + ": token \"" + tokenString + "\" has a character outside GPT-2's byte alphabet");
        bytes += static_cast<char>(it->second);
      }
      if (tokenString == "<|endoftext|>") eotId_ = static_cast<int>(id);
      bytesOfId_[id] = std::move(bytes);
      idOfTokenString.emplace(tokenString, static_cast<int>(id));
    }
    for (int b = 0; b < 256; ++b) {
      auto it = idOfTokenString.find(bpe::encodeUtf8(byteToCodePoint[b]));
      if (it == idOfTokenString.end()) throw Error(path + ": no token for byte " + std::to_string(b) + " (a byte-level vocab needs all 256)");
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
        throw Error(path + ":" + std::to_string(lineNumber) + ": merge uses token \"" + tokenString + "\" that is not in the vocab");
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
        throw Error(path + ":" + std::to_string(lineNumber) + ": expected two tokens separated by a space, got " + std::to_string(parts.size()) +
                    " in \"" + line + "\"");
      const int leftId = idOf(parts[0]), rightId = idOf(parts[1]);
      auto result = idOfTokenString.find(parts[0] + parts[1]);
      if (result == idOfTokenString.end())
        throw Error(path + ":" + std::to_string(lineNumber) + ": merge result \"" + parts[0] + parts[1] + "\" is not in the vocab");
      // Like encoder.py's dict(zip(merges, range)), a repeated pair keeps its last rank.
      merges_.add(leftId, rightId, result->second, rank++);
    }
  }

  std::array<int, 256> idOfByte_{};  // single-byte tokens, where every word starts
  bpe::MergeTable merges_;
};

std::unique_ptr<Tokenizer> loadGpt2Tokenizer(const std::string& vocabJsonPath, const std::string& mergesPath) {
  return gpt2TokenizerFromText(vocabJsonPath, bpe::readWholeFile(vocabJsonPath), mergesPath, bpe::readWholeFile(mergesPath));
}

std::unique_ptr<Tokenizer> gpt2TokenizerFromText(const std::string& vocabJsonName, const std::string& vocabJson, const std::string& mergesName,
                                                 const std::string& merges) {
  return std::make_unique<Gpt2BpeTokenizer>(vocabJsonName, vocabJson, mergesName, merges);
}

std::vector<BpeStep> bpeMergeSteps(const Tokenizer& tokenizer, std::string_view word) {
  const auto* bpe = dynamic_cast<const Gpt2BpeTokenizer*>(&tokenizer);
  if (!bpe) throw Error("BPE merge steps need a GPT-2 BPE tokenizer, not a \"" + tokenizer.kindName() + "\" one");
  return bpe->mergeSteps(word);
}

}  // namespace tscope

// BPE training (GPT-2's algorithm) over the distinct pre-tokenized words with their counts. Fast
// path: pair counts are kept up to date incrementally, an index lists the words each pair occurs
// in, and a lazy max-heap (stale entries skipped on pop) finds the most frequent pair.
#include "model/tokenize/bpe_train.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "model/core/error.h"
#include "model/io/npy.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {
namespace {

// GPT-2's bytes_to_unicode() as a list: the byte order that gives ids 0..255 in encoder.json, and
// the printable character each byte is written as in vocab.json / merges.txt.
struct Gpt2ByteAlphabet {
  std::array<unsigned char, 256> byteOfId{};     // id 0..255 -> byte
  std::array<std::string, 256> characterOfByte;  // byte -> UTF-8 of its alphabet character
};

std::string utf8OfCodePoint(uint32_t cp) {  // below U+0800, all the alphabet needs
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

const Gpt2ByteAlphabet& gpt2ByteAlphabet() {
  static const Gpt2ByteAlphabet alphabet = [] {
    Gpt2ByteAlphabet a;
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int id = 0;
    for (int b = 0; b < 256; ++b)
      if (printable(b)) a.byteOfId[id++] = static_cast<unsigned char>(b), a.characterOfByte[b] = utf8OfCodePoint(b);
    uint32_t shifted = 256;
    for (int b = 0; b < 256; ++b)
      if (!printable(b)) a.byteOfId[id++] = static_cast<unsigned char>(b), a.characterOfByte[b] = utf8OfCodePoint(shifted++);
    return a;
  }();
  return alphabet;
}

std::string inGpt2Alphabet(const std::string& bytes) {
  std::string text;
  for (unsigned char b : bytes) text += gpt2ByteAlphabet().characterOfByte[b];
  return text;
}

const char* const kEndOfText = "<|endoftext|>";

uint64_t pairKey(int left, int right) { return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right); }
int leftOf(uint64_t key) { return static_cast<int>(key >> 32); }
int rightOf(uint64_t key) { return static_cast<int>(key & 0xFFFFFFFFu); }

struct Word {
  std::vector<int> symbols;  // token ids, concatenating to the word's bytes
  long count = 0;            // occurrences in the corpus
};

class BpeTrainer {
 public:
  BpeTrainer(std::string_view corpus, BpeTrainingResult& result) : result_(result) {
    const auto& alphabet = gpt2ByteAlphabet();
    std::array<int, 256> idOfByte{};
    for (int id = 0; id < 256; ++id) {
      const unsigned char b = alphabet.byteOfId[id];
      idOfByte[b] = id;
      result_.tokens.emplace_back(1, static_cast<char>(b));
      idOfBytes_.emplace(result_.tokens.back(), id);
    }
    std::unordered_map<std::string_view, long> countOfWord;  // views into `corpus`
    for (std::string_view word : gpt2PreTokenizeViews(corpus))
      if (word.size() >= 2) ++countOfWord[word];  // a single byte has no pair to merge
    words_.reserve(countOfWord.size());
    for (const auto& [text, count] : countOfWord) {
      Word word{{}, count};
      for (char c : text) word.symbols.push_back(idOfByte[static_cast<unsigned char>(c)]);
      words_.push_back(std::move(word));
    }
    for (int w = 0; w < static_cast<int>(words_.size()); ++w) {
      const auto& symbols = words_[w].symbols;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const uint64_t pair = pairKey(symbols[i], symbols[i + 1]);
        pairCounts_[pair] += words_[w].count;
        noteWordHasPair(pair, w);
      }
    }
    for (const auto& [pair, count] : pairCounts_) heap_.push({count, pair});
    lastVisit_.assign(words_.size(), -1);
  }

  // Learns one merge; false when no pair is left.
  bool mergeMostFrequentPair() {
    uint64_t pair = 0;
    long count = 0;
    for (;;) {
      if (heap_.empty()) return false;
      const Candidate top = heap_.top();
      heap_.pop();
      auto it = pairCounts_.find(top.pair);
      if (it != pairCounts_.end() && it->second == top.count) {  // else a stale entry
        pair = top.pair, count = top.count;
        break;
      }
    }
    const int left = leftOf(pair), right = rightOf(pair);
    std::string mergedBytes = result_.tokens[left] + result_.tokens[right];
    auto [existing, isNew] = idOfBytes_.try_emplace(mergedBytes, static_cast<int>(result_.tokens.size()));
    const int mergedId = existing->second;
    if (isNew) result_.tokens.push_back(std::move(mergedBytes));
    const int mergeIndex = static_cast<int>(result_.merges.size());
    result_.merges.emplace_back(result_.tokens[left], result_.tokens[right]);
    result_.mergeCounts.push_back(count);

    // Each word holding the pair: remove its old pairs' counts, merge left to right, add the new.
    delta_.clear();
    std::vector<int> candidates = std::move(wordsWithPair_[pair]);
    wordsWithPair_.erase(pair);
    for (int w : candidates) {
      if (lastVisit_[w] == mergeIndex) continue;  // listed twice
      lastVisit_[w] = mergeIndex;
      Word& word = words_[w];
      std::vector<int>& s = word.symbols;
      std::vector<int> merged;
      merged.reserve(s.size());
      bool changed = false;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          merged.push_back(mergedId);
          ++i;
          changed = true;
        } else {
          merged.push_back(s[i]);
        }
      }
      if (!changed) continue;  // the pair left this word in an earlier merge
      for (size_t i = 0; i + 1 < s.size(); ++i) delta_[pairKey(s[i], s[i + 1])] -= word.count;
      for (size_t i = 0; i + 1 < merged.size(); ++i) {
        const uint64_t newPair = pairKey(merged[i], merged[i + 1]);
        delta_[newPair] += word.count;
        // Only pairs with the new token are new to this word; the others were already indexed.
        if (merged[i] == mergedId || merged[i + 1] == mergedId) noteWordHasPair(newPair, w);
      }
      s = std::move(merged);
    }
    for (const auto& [changedPair, change] : delta_) {
      if (change == 0) continue;
      long& total = pairCounts_[changedPair];
      total += change;
      if (total > 0) {
        heap_.push({total, changedPair});
      } else {
        pairCounts_.erase(changedPair);
      }
    }
    return true;
  }

 private:
  struct Candidate {
    long count;
    uint64_t pair;
  };
  // Heap order: higher count first; on equal counts the pair with the smaller (left, right) bytes.
  struct LowerPriority {
    const std::vector<std::string>* tokens;
    bool operator()(const Candidate& a, const Candidate& b) const {
      if (a.count != b.count) return a.count < b.count;
      const std::string &aLeft = (*tokens)[leftOf(a.pair)], &bLeft = (*tokens)[leftOf(b.pair)];
      if (aLeft != bLeft) return aLeft > bLeft;
      return (*tokens)[rightOf(a.pair)] > (*tokens)[rightOf(b.pair)];
    }
  };

  void noteWordHasPair(uint64_t pair, int w) {
    std::vector<int>& list = wordsWithPair_[pair];
    if (list.empty() || list.back() != w) list.push_back(w);
  }

  BpeTrainingResult& result_;
  std::unordered_map<std::string, int> idOfBytes_;  // token bytes -> id
  std::vector<Word> words_;                         // distinct words of two bytes or more
  std::unordered_map<uint64_t, long> pairCounts_;   // pair -> occurrences (absent when 0)
  // pair -> words it occurs in; may list a word twice or one that has lost the pair since.
  std::unordered_map<uint64_t, std::vector<int>> wordsWithPair_;
  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> heap_{LowerPriority{&result_.tokens}};
  std::unordered_map<uint64_t, long> delta_;  // per merge: change of each pair's count
  std::vector<int> lastVisit_;                // per word: the last merge index that processed it
};

}  // namespace

BpeTrainingResult trainBpe(std::string_view corpus, int vocabSize, const std::function<void(int, int)>& progress) {
  if (vocabSize < 257)
    throw Error("BPE vocab size " + std::to_string(vocabSize) + " is too small: it must be at least 257 (256 single bytes + <|endoftext|>)");
  BpeTrainingResult result;
  BpeTrainer trainer(corpus, result);
  const int wanted = vocabSize - 257;
  for (int learned = 0; learned < wanted && trainer.mergeMostFrequentPair();) {
    const int nowLearned = static_cast<int>(result.tokens.size()) - 256;
    if (nowLearned != learned && progress) progress(nowLearned, wanted);  // not for a reused token
    learned = nowLearned;
  }
  result.tokens.emplace_back(kEndOfText);
  return result;
}

void writeGpt2TokenizerFiles(const BpeTrainingResult& result, const std::string& dir) {
  // Check it is a byte-level vocab loadGpt2Tokenizer accepts, so a bad result fails here, not there.
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  std::array<bool, 256> haveByte{};
  for (size_t id = 0; id < result.tokens.size(); ++id) {
    const std::string& bytes = result.tokens[id];
    if (bytes.empty()) throw Error("BPE vocab: token " + std::to_string(id) + " is empty");
    if (bytes.size() == 1) haveByte[static_cast<unsigned char>(bytes[0])] = true;
    const std::string key = inGpt2Alphabet(bytes);
    if (vocab.contains(key)) throw Error("BPE vocab: token " + std::to_string(id) + " \"" + key + "\" appears twice");
    vocab[key] = id;
  }
  for (int b = 0; b < 256; ++b)
    if (!haveByte[b]) throw Error("BPE vocab: no token for byte " + std::to_string(b) + " (a byte-level vocab needs all 256)");
  std::string merges = "#version: 0.2\n";
  for (size_t rank = 0; rank < result.merges.size(); ++rank) {
    const auto& [left, right] = result.merges[rank];
    const std::string leftKey = inGpt2Alphabet(left), rightKey = inGpt2Alphabet(right);
    if (!vocab.contains(leftKey) || !vocab.contains(rightKey) || !vocab.contains(leftKey + rightKey))
      throw Error("BPE merges: merge " + std::to_string(rank) + " \"" + leftKey + " " + rightKey +
                  "\" uses or makes a token that is not in the vocab");
    merges += leftKey + " " + rightKey + "\n";
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(dir + ": cannot create directory: " + error.message());
  const std::filesystem::path root(dir);
  writeFileAtomically((root / "merges.txt").string(), merges);
  writeFileAtomically((root / "vocab.json").string(), vocab.dump() + "\n");
}

}  // namespace tscope

// Internal pieces shared by the BPE tokenizers (GPT-2's vocab.json + merges.txt, HuggingFace's
// tokenizer.json and the score-based SentencePiece one): the byte-level alphabet, <0xNN> byte pieces, UTF-8 encoding, reading a file, and the merge
// loop (a linked list of symbols with a heap of candidate pairs, O(n log n) per word).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/tokenize/tokenizer.h"

namespace tscope::bpe {

// What the BPE tokenizers share: each id stands for a byte string (bytesOfId_), which tokenBytes
// returns and decode concatenates, and an end-of-text id; ids outside the table throw tscope::Error.
class ByteTableTokenizer : public Tokenizer {
 public:
  int vocabSize() const override { return static_cast<int>(bytesOfId_.size()); }
  int eotId() const override { return eotId_; }
  std::string tokenBytes(int id) const override;
  std::string tokenText(int id) const override;  // printableBytes of the bytes
  std::string decode(std::span<const int> ids) const override;

 protected:
  void checkId(int id) const;
  std::vector<std::string> bytesOfId_;  // (V) the raw bytes of each token
  int eotId_ = -1;
};

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to U+0100..U+0143, so every byte-level token string is printable.
std::array<char32_t, 256> byteLevelCodePoints();
// The inverse of that map: UTF-8 of each alphabet character -> its byte.
std::unordered_map<std::string, unsigned char> byteLevelBytesOfCharacters();
// The byte a SentencePiece byte-fallback piece stands for: "<0x41>" -> 0x41 (two upper-case hex
// digits, as SentencePiece writes them), or -1 for any other piece.
int byteOfFallbackPiece(std::string_view piece);
// UTF-8 of a code point (U+0000..U+10FFFF).
std::string encodeUtf8(char32_t codePoint);
// The whole file; throws tscope::Error naming it when it cannot be read or exceeds maxBytes.
std::string readWholeFile(const std::string& path, size_t maxBytes = size_t(1) << 31);

// Working state of one word's merges, kept between words to avoid reallocating.
struct MergeScratch {
  std::vector<int> ids;   // token id per symbol, filled by the caller; -1 once merged into its left neighbour
  std::vector<int> prev;  // linked list over live symbols (-1 = none)
  std::vector<int> next;
};

// The merge table: (left id, right id) -> (rank, result id).
class MergeTable {
 public:
  struct Merge {
    int rank;      // order in the merges list: lower merges first
    int resultId;  // the token the pair becomes
  };
  // Called once before any merge (with rank -1) and after each rank's merges are all applied.
  using Observer = std::function<void(const Merge&, int leftId, int rightId)>;

  // A repeated pair keeps the rank given last (as encoder.py's dict and HF's map do).
  void add(int leftId, int rightId, int resultId, int rank) { mergeOfPair_[pairKey(leftId, rightId)] = {rank, resultId}; }
  size_t size() const { return mergeOfPair_.size(); }

  // Repeatedly takes the lowest-rank adjacent pair and merges every occurrence of it left to right
  // (GPT-2's bpe(), HF's Word::merge_all). scratch.ids holds the initial symbols; afterwards the
  // live symbols are reached from 0 through scratch.next (nothing when ids is empty).
  void apply(MergeScratch& scratch, const Observer& observer = {}) const;

 private:
  static uint64_t pairKey(int left, int right) { return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right); }
  std::unordered_map<uint64_t, Merge> mergeOfPair_;
};

// Appends the ids left in `scratch` after MergeTable::apply.
inline void appendMergedIds(const MergeScratch& scratch, std::vector<int>& out) {
  if (scratch.ids.empty()) return;
  for (int pos = 0; pos != -1; pos = scratch.next[pos]) out.push_back(scratch.ids[pos]);
}

}  // namespace tscope::bpe

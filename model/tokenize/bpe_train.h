// BPE training, the GPT-2 way: learn byte-pair merges from a corpus up to a chosen vocabulary size
// and write them as GPT-2's vocab.json + merges.txt, which loadGpt2Tokenizer reads back.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tscope {

struct BpeTrainingResult {
  // (V) the bytes of each id. Ids 0..255 are the single bytes in GPT-2's encoder.json order (the
  // order of bytes_to_unicode: '!'..'~', 0xA1..0xAC, 0xAE..0xFF, then the other 68 bytes); then one
  // id per learned token in merge order; the last id is "<|endoftext|>".
  std::vector<std::string> tokens;
  // The learned merges in order (rank = index), each as the two tokens' bytes.
  std::vector<std::pair<std::string, std::string>> merges;
  // (per merge) how many times the pair occurred in the corpus when it was merged, for display.
  std::vector<long> mergeCounts;
};

// Pre-tokenizes `corpus` with gpt2PreTokenize, then repeatedly merges the most frequent adjacent
// pair (ties: the smaller (left bytes, right bytes) pair first) until the vocabulary, counting the
// end-of-text token, has `vocabSize` tokens. Stops early, with fewer tokens, when no pair occurs
// any more (a small corpus). A merge whose bytes equal an existing token reuses that token's id.
// `progress(done, total)` is called after each merge that adds a token, with tokens learned so
// far and the number wanted (vocabSize - 257). Throws tscope::Error when vocabSize < 257 (256 bytes + end-of-text).
BpeTrainingResult trainBpe(std::string_view corpus, int vocabSize, const std::function<void(int done, int total)>& progress = {});

// Writes `dir`/vocab.json ({"token in GPT-2's byte alphabet": id}, in id order) and `dir`/merges.txt
// ("#version: 0.2" then "left right" per merge), each atomically; creates `dir` if needed.
// Throws tscope::Error on a file error or a result that is not a byte-level vocab.
void writeGpt2TokenizerFiles(const BpeTrainingResult& result, const std::string& dir);

}  // namespace tscope

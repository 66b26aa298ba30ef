// The WordPiece tokenizer on a small hand-written vocab.txt: the algorithm (longest match first,
// "##" continuations, [UNK] for a word too long or with an unmatched part), BERT's normalizer and
// pre-tokenizer, special tokens in the text, decoding, the tokenizer.json form, directories, and
// every load error (one line naming the file and the problem).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/tokenize/special_tokens.h"
#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_json.h"
#include "model/tokenize/tokenizer_wordpiece.h"
#include "model/tokenize/wordpiece_text.h"
#include "tests/test_files.h"

using tscope::Tokenizer;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
namespace wp = tscope::wordpiece;

namespace {

// id:                            0      1      2      3      4       5    6      7       8     9      10     11     12  13  14
const std::vector<std::string> kVocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "able", "the", "cafe", ",",
                                         ".", "!",
                                         // 15   16       17        18       19     20   21     22          23       24       25   26   27
                                         "##s", "straw", "##berr", "##ies", "##ie", "a", "##a", "\u6211", "hello", "world", "'", "s", "?"};

std::string vocabText() {
  std::string text;
  for (const std::string& token : kVocab) text += token + "\n";
  return text;
}

std::unique_ptr<Tokenizer> small() { return tscope::wordPieceTokenizerFromVocabText("vocab.txt", vocabText()); }

using Ids = std::vector<int>;

TEST(WordPiece, LongestMatchFirstWithContinuations) {
  const auto t = small();
  EXPECT_EQ(t->kind(), tscope::TokenizerKind::WordPiece);
  EXPECT_EQ(t->kindName(), "wordpiece");
  EXPECT_EQ(tscope::tokenizerKindName(tscope::TokenizerKind::WordPiece), "wordpiece");
  EXPECT_EQ(t->vocabSize(), static_cast<int>(kVocab.size()));
  EXPECT_EQ(t->encode("unaffable"), (Ids{5, 6, 7}));
  EXPECT_EQ(t->encode("affable"), (Ids{8, 7}));             // a word start never takes a ## piece
  EXPECT_EQ(t->encode("strawberries"), (Ids{16, 17, 18}));  // ##ies before ##ie: the longest piece
  EXPECT_EQ(t->encode("strawberrie"), (Ids{16, 17, 19}));
  EXPECT_EQ(t->encode("the cafes"), (Ids{10, 11, 15}));
}

TEST(WordPiece, UnknownWordsBecomeOneUnk) {
  const auto t = small();
  EXPECT_EQ(t->encode("unaffablex"), (Ids{1}));  // one unmatched part: the whole word is [UNK]
  EXPECT_EQ(t->encode("xyz the"), (Ids{1, 10}));
  EXPECT_EQ(t->encode("#"), (Ids{1}));
  EXPECT_EQ(t->encode(std::string(100, 'a')).size(), 100u);  // a, then 99 times ##a
  EXPECT_EQ(t->encode(std::string(101, 'a')), (Ids{1}));     // over max_input_chars_per_word
  EXPECT_EQ(t->encode(std::string(150, 'a') + " the"), (Ids{1, 10}));
  EXPECT_EQ(t->encode(std::string(100, 'a') + "\u00e9"), (Ids{1}));  // 101 characters (é stripped to e: no ##e piece)
}

TEST(WordPiece, NormalizesLikeBert) {
  const auto t = small();
  EXPECT_EQ(t->encode("THE Caf\u00e9 CAF\u00c9"), (Ids{10, 11, 11}));  // lowercase, accents stripped (NFD, Mn dropped)
  EXPECT_EQ(t->encode("cafe\u0301"), (Ids{11}));
  EXPECT_EQ(t->encode("hello,world!the."), (Ids{23, 12, 24, 14, 10, 13}));      // each punctuation character is a word
  EXPECT_EQ(t->encode("hello\u6211world"), (Ids{23, 22, 24}));                  // CJK ideographs are words
  EXPECT_EQ(t->encode("hel\x01lo\x7f wor\xe2\x80\x8bld \xff"), (Ids{23, 24}));  // controls, Cf and invalid bytes dropped
  EXPECT_EQ(t->encode("the\u00a0the\u3000the\tthe\nthe\u2028the"), (Ids{10, 10, 10, 10, 10, 10}));
  EXPECT_EQ(t->encode(""), Ids{});
  EXPECT_EQ(t->encode(" \t\r\n\x0b"), Ids{});
  EXPECT_EQ(t->encode("?!"), (Ids{27, 14}));
}

TEST(WordPiece, NormalizerAndPreTokenizerSteps) {
  const wp::BertNormalizerOptions uncased;
  EXPECT_EQ(wp::bertNormalize("\u039f\u03a3 \u0130", uncased), "\u03bf\u03c3 i");  // σ, not final ς; İ -> i + U+0307 -> i
  EXPECT_EQ(wp::bertNormalize("\ufb01 \u2026", uncased), "\ufb01 \u2026");         // no compatibility mapping
  EXPECT_EQ(wp::bertNormalize("\ud55c", uncased), "\u1112\u1161\u11ab");           // Hangul: NFD jamo stay
  EXPECT_EQ(wp::bertNormalize("a\u4e00b", uncased), "a \u4e00 b");
  EXPECT_EQ(wp::bertNormalize("x\xff\xc0y", uncased), "xy");
  wp::BertNormalizerOptions cased;
  cased.lowercase = false;
  EXPECT_EQ(wp::bertNormalize("Caf\u00e9", cased), "Caf\u00e9");  // strip_accents unset follows lowercase
  cased.stripAccents = true;
  EXPECT_EQ(wp::bertNormalize("Caf\u00e9", cased), "Cafe");
  wp::BertNormalizerOptions raw;
  raw.cleanText = raw.handleChineseChars = raw.lowercase = false;
  EXPECT_EQ(wp::bertNormalize("A\x01\xff\u4e00", raw), "A\x01\ufffd\u4e00");  // an invalid byte reads as U+FFFD
  const auto words = wp::bertPreTokenize("  Hi,there...\u00bfok? $5 ");
  EXPECT_EQ(std::vector<std::string>(words.begin(), words.end()),
            (std::vector<std::string>{"Hi", ",", "there", ".", ".", ".", "\u00bf", "ok", "?", "$", "5"}));
  for (char32_t cp : {U'$', U'+', U'<', U'=', U'>', U'^', U'`', U'|', U'~', U'\u2014', U'\u3001', U'\U00010100'})
    EXPECT_TRUE(wp::isBertPunctuation(cp)) << static_cast<uint32_t>(cp);
  for (char32_t cp : {U'a', U'5', U'\u00a9', U'\u20ac'}) EXPECT_FALSE(wp::isBertPunctuation(cp)) << static_cast<uint32_t>(cp);
  EXPECT_TRUE(wp::isChineseChar(0x2B820));  // transformers' range (the tokenizers library starts at 0x2B920)
  EXPECT_FALSE(wp::isChineseChar(0x3042));  // Hiragana is not
  EXPECT_TRUE(wp::isBertControl(0x200B));
  EXPECT_FALSE(wp::isBertControl('\t'));
  EXPECT_TRUE(wp::isBertWhiteSpace(0x2029));
  EXPECT_TRUE(wp::isNonspacingMark(0x0301));
  EXPECT_STREQ(wp::bertUnicodeVersion(), "14.0.0");
}

TEST(WordPiece, SpecialTokensInTheText) {
  const auto t = small();
  EXPECT_EQ(t->encode("[CLS] hello [MASK] world[SEP]"), (Ids{2, 23, 4, 24, 3}));
  EXPECT_EQ(t->encode("the[MASK][MASK]."), (Ids{10, 4, 4, 13}));
  EXPECT_EQ(t->encode("[mask]"), (Ids{1, 1, 1}));  // matched case-sensitively before normalization: "[" is not in this vocab
  const tscope::MaskedLmTokens special = tscope::findMaskedLmTokens(*t);
  EXPECT_EQ(special.pad, 0);
  EXPECT_EQ(special.cls, 2);
  EXPECT_EQ(special.sep, 3);
  EXPECT_EQ(special.mask, 4);
}

TEST(WordPiece, DecodesLikeTheWordPieceDecoder) {
  const auto t = small();
  EXPECT_EQ(t->decode(t->encode("Hello, world! Unaffable strawberries.")), "hello, world! unaffable strawberries.");
  EXPECT_EQ(t->decode(Ids{2, 23, 4, 3}), "[CLS] hello [MASK] [SEP]");
  EXPECT_EQ(t->decode(Ids{15, 10}), "##s the");  // the first token keeps its prefix, as HF's decoder does
  EXPECT_EQ(t->decode(Ids{23, 25, 26}), "hello ' s");
  EXPECT_EQ(t->decode(Ids{}), "");
  EXPECT_EQ(t->tokenBytes(6), "##aff");
  EXPECT_EQ(t->tokenText(6), "##aff");
  EXPECT_THROW(t->decode(Ids{static_cast<int>(kVocab.size())}), tscope::Error);
  EXPECT_THROW(t->decode(Ids{-1}), tscope::Error);
  for (const char* text : {"the cafe", "hello, world!", "unaffable strawberries"}) EXPECT_EQ(t->decode(t->encode(text)), text);
}

// A BERT-style tokenizer.json over the small vocab.
nlohmann::json tokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < kVocab.size(); ++i) vocab[kVocab[i]] = i;
  nlohmann::json added = nlohmann::json::array();
  for (int id : {0, 1, 2, 3, 4})
    added.push_back({{"id", id},
                     {"content", kVocab[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor", {{"type", "TemplateProcessing"}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
}

std::unique_ptr<Tokenizer> fromJson(const nlohmann::json& j) { return tscope::hfTokenizerFromText("tokenizer.json", j.dump()); }

TEST(WordPiece, TokenizerJsonGivesTheVocabTxtIds) {
  const auto json = fromJson(tokenizerJson());
  const auto txt = small();
  EXPECT_EQ(json->kind(), tscope::TokenizerKind::WordPiece);
  for (const char* text : {"Hello, world! [MASK] unaffable", "THE CAF\u00c9s \u6211", "xyz strawberrie"}) {
    EXPECT_EQ(json->encode(text), txt->encode(text)) << text;
    EXPECT_EQ(json->decode(json->encode(text)), txt->decode(txt->encode(text))) << text;
  }
  auto edited = [](auto edit) {
    nlohmann::json j = tokenizerJson();
    edit(j);
    return fromJson(j);
  };
  EXPECT_EQ(edited([](auto& j) { j["normalizer"]["lowercase"] = false; })->encode("The the"), (Ids{1, 10}));  // cased
  EXPECT_EQ(edited([](auto& j) { j["model"]["max_input_chars_per_word"] = 3; })->encode("cafe the"), (Ids{1, 10}));
  EXPECT_EQ(edited([](auto& j) { j["normalizer"] = nullptr; })->encode("the\u00a0the"), (Ids{10, 10}));  // the pre-tokenizer splits any White_Space
  EXPECT_EQ(edited([](auto& j) { j["pre_tokenizer"] = nullptr; })->encode("the the"), (Ids{1}));         // one word
  EXPECT_EQ(edited([](auto& j) { j["decoder"]["cleanup"] = false; })->decode(Ids{23, 12}), "hello ,");
  EXPECT_EQ(edited([](auto& j) { j["decoder"] = nullptr; })->decode(Ids{5, 6}), "un ##aff");  // no decoder: joined by spaces
  // A non-special added token (normalized: true) is matched after the normalizer; one past the vocab extends it.
  const auto added = edited([](auto& j) { j["added_tokens"].push_back({{"id", 28}, {"content", "Xyz"}, {"special", false}}); });
  EXPECT_EQ(added->vocabSize(), 29);
  EXPECT_EQ(added->encode("the XYZ thexyz"), (Ids{10, 28, 10, 28}));
  EXPECT_EQ(added->tokenBytes(28), "Xyz");
}

TEST(WordPiece, DirectoriesPickWordPiece) {
  const tscope::testing::ScratchDir dir("tscope_wordpiece");
  tscope::testing::writeBytes(dir.file("vocab.txt"), vocabText());
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "wordpiece")->encode("unaffable"), (Ids{5, 6, 7}));
  EXPECT_EQ(tscope::loadTokenizerFromDir(dir.path().string(), "hf-bpe")->kind(), tscope::TokenizerKind::WordPiece);  // only a vocab.txt
  EXPECT_EQ(tscope::loadWordPieceVocab(dir.file("vocab.txt"))->vocabSize(), static_cast<int>(kVocab.size()));
  const tscope::testing::ScratchDir jsonDir("tscope_wordpiece_json");
  tscope::testing::writeBytes(jsonDir.file("tokenizer.json"), tokenizerJson().dump());
  for (const char* kind : {"wordpiece", "hf-bpe", "gpt2-bpe"})
    EXPECT_EQ(tscope::loadTokenizerFromDir(jsonDir.path().string(), kind)->kind(), tscope::TokenizerKind::WordPiece) << kind;
  const tscope::testing::ScratchDir empty("tscope_wordpiece_empty");
  expectMentions(errorMessage([&] { tscope::loadTokenizerFromDir(empty.path().string(), "wordpiece"); }), {"no tokenizer.json or vocab.txt"});
  expectMentions(errorMessage([&] { tscope::loadTokenizerFromDir(empty.path().string(), "bert"); }), {"\"wordpiece\""});
  EXPECT_THROW(tscope::loadWordPieceVocab(empty.file("vocab.txt")), tscope::Error);
}

TEST(WordPiece, MalformedVocabTxtNamesTheProblem) {
  auto error = [](const std::string& text) { return errorMessage([&] { tscope::wordPieceTokenizerFromVocabText("vocab.txt", text); }); };
  expectMentions(error(""), {"vocab.txt: empty vocab"});
  expectMentions(error("[UNK]\n\nthe\n"), {"vocab.txt: line 2 is empty"});
  expectMentions(error("[UNK]\nthe\nthe\n"), {"vocab.txt: line 3", "\"the\" is already line 2"});
  expectMentions(error("the\na\n"), {"vocab.txt: no [UNK] token"});
  expectMentions(error("[UNK]\n" + std::string(70000, 'x') + "\n"), {"vocab.txt: line 2 is longer than 64 KiB"});
  EXPECT_EQ(tscope::wordPieceTokenizerFromVocabText("v", "[UNK]\r\nthe\r\nx")->encode("the x"), (Ids{1, 2}));  // CRLF, no final newline
}

TEST(WordPiece, MalformedTokenizerJsonNamesTheProblem) {
  auto broken = [](auto edit) {
    nlohmann::json j = tokenizerJson();
    edit(j);
    return errorMessage([&] { fromJson(j); });
  };
  expectMentions(broken([](auto& j) { j["model"]["vocab"] = nlohmann::json::object(); }), {"tokenizer.json: empty vocab"});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["the"] = 99; }), {"tokenizer.json: id 99 of token \"the\" is outside 0..27"});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["the"] = -1; }), {"is outside 0.."});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["the"] = 11; }), {"duplicate id 11"});
  expectMentions(broken([](auto& j) { j["model"]["vocab"]["the"] = "10"; }), {"id of token \"the\" is not an integer"});
  expectMentions(broken([](auto& j) { j["model"]["unk_token"] = "<unk>"; }), {"model.unk_token \"<unk>\" is not in the vocab"});
  expectMentions(broken([](auto& j) { j["model"].erase("vocab"); }), {"missing \"vocab\" in model"});
  expectMentions(broken([](auto& j) { j["model"]["max_input_chars_per_word"] = -1; }), {"max_input_chars_per_word is not an integer in 0.."});
  expectMentions(broken([](auto& j) { j["model"]["continuing_subword_prefix"] = 5; }), {"continuing_subword_prefix is not a string"});
  expectMentions(broken([](auto& j) { j["normalizer"] = {{"type", "NFC"}}; }), {"normalizer \"NFC\" is not supported with WordPiece"});
  expectMentions(broken([](auto& j) { j["normalizer"]["lowercase"] = "yes"; }), {"\"lowercase\" is not true or false"});
  expectMentions(broken([](auto& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }), {"pre_tokenizer \"Whitespace\" is not supported"});
  expectMentions(broken([](auto& j) { j["decoder"] = {{"type", "ByteLevel"}}; }), {"decoder \"ByteLevel\" is not supported"});
  expectMentions(broken([](auto& j) { j["added_tokens"].push_back({{"id", 30}, {"content", "<x>"}}); }), {"no token has id 28"});
  expectMentions(broken([](auto& j) {
                   j["added_tokens"].push_back({{"id", 28}, {"content", "<x>"}});
                   j["added_tokens"].push_back({{"id", 28}, {"content", "<y>"}});
                 }),
                 {"two added tokens have id 28"});
  expectMentions(broken([](auto& j) {
                   j["added_tokens"].push_back({{"id", 28}, {"content", ""}});
                 }),
                 {"added token 28 has an empty or huge content"});
  expectMentions(broken([](auto& j) { j["model"]["type"] = "Unigram"; }), {"model type \"Unigram\" is not supported (only BPE and WordPiece)"});
}

}  // namespace

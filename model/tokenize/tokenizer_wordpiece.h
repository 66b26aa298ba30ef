// BERT's WordPiece tokenizer ("wordpiece"), as HuggingFace's tokenizers runs it: special tokens
// written in the text are split out first (leftmost, longest, before any normalization), then
// BertNormalizer and BertPreTokenizer (wordpiece_text.h), then WordPiece on each word: greedy
// longest match first, pieces after the first spelled with the "##" prefix, and a word of more than
// 100 characters or with a part no piece matches becomes [UNK] whole. Loaded from a tokenizer.json
// whose model is WordPiece (tokenizer_json.h dispatches here) or from a bare vocab.txt (one token a
// line, id = line number) with bert-base-uncased's settings. tokenBytes is the vocab's text
// ("##ing" for a continuation), so findMaskedLmTokens finds [CLS], [SEP], [MASK] and [PAD].
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/tokenize/tokenizer.h"
#include "model/tokenize/tokenizer_hf.h"
#include "model/tokenize/wordpiece_text.h"

namespace tscope {

struct WordPieceSpec {
  std::string name;                    // the file, for messages and the description
  std::vector<std::string> pieceOfId;  // (V) the vocab's strings
  int unkId = -1;                      // required
  std::string continuingSubwordPrefix = "##";
  int maxInputCharsPerWord = 100;
  std::optional<wordpiece::BertNormalizerOptions> normalizer;  // none: the text as it is
  bool bertPreTokenizer = true;                                // false: each segment is one word
  std::vector<HfAddedToken> addedTokens;                       // `normalized` ones are matched after the normalizer
  // Decoder: WordPiece (the prefix dropped from continuations, a space before every other token,
  // each token cleaned up when decodeCleanup), or none (tokens joined by spaces).
  bool wordPieceDecoder = true;
  std::string decodePrefix = "##";
  bool decodeCleanup = true;
};

// Checks the spec (ids in range, [UNK] set) and builds the tokenizer; throws tscope::Error naming spec.name.
std::unique_ptr<Tokenizer> makeWordPieceTokenizer(WordPieceSpec spec);

// vocab.txt: one token a line (a final newline, and a '\r' before each newline, are allowed), with
// bert-base-uncased's pipeline (lowercase, strip accents, CJK split, the five special tokens
// [PAD] [UNK] [CLS] [SEP] [MASK] that the vocab has). Empty lines, duplicates and a vocab without
// [UNK] are errors naming the file and the line.
std::unique_ptr<Tokenizer> wordPieceTokenizerFromVocabText(const std::string& name, const std::string& vocabTxt);
std::unique_ptr<Tokenizer> loadWordPieceVocab(const std::string& vocabTxtPath);

}  // namespace tscope

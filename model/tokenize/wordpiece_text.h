// Internal: BERT's text steps before WordPiece, as HuggingFace's tokenizers define them
// (normalizers/bert.rs, pre_tokenizers/bert.rs; transformers' BasicTokenizer is the same):
// BertNormalizer (clean_text, handle_chinese_chars, strip_accents, lowercase) and BertPreTokenizer
// (split on white space, every punctuation character its own word). Character classes are those of
// bert_tables.inc (Unicode 14.0). The normalizer reads each invalid UTF-8 byte as U+FFFD, as a
// lossy decoder would hand it to HF: clean_text drops it; without clean_text it stays a U+FFFD.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope::wordpiece {

struct BertNormalizerOptions {
  bool cleanText = true;             // drop NUL, U+FFFD and "other" characters (C*), map white space to ' '
  bool handleChineseChars = true;    // a space on each side of every CJK ideograph
  std::optional<bool> stripAccents;  // NFD, then drop nonspacing marks (Mn); unset: follows lowercase
  bool lowercase = true;             // the full lowercase mapping, character by character
  bool stripsAccents() const { return stripAccents.value_or(lowercase); }
};

std::string bertNormalize(std::string_view text, const BertNormalizerOptions& options);
// The words, as views into `text`: white space removed, each punctuation character alone.
std::vector<std::string_view> bertPreTokenize(std::string_view text);

// The classes, by code point (exposed for the tests).
bool isBertWhiteSpace(char32_t cp);   // \t \n \r and White_Space
bool isBertControl(char32_t cp);      // C* except \t \n \r
bool isBertPunctuation(char32_t cp);  // ASCII 33-47, 58-64, 91-96, 123-126, and P*
bool isChineseChar(char32_t cp);      // transformers' _is_chinese_char ranges
bool isNonspacingMark(char32_t cp);   // Mn
std::u32string lowercase(char32_t cp);
const char* bertUnicodeVersion();

}  // namespace tscope::wordpiece

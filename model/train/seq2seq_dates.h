// A sequence-to-sequence task for encoder-decoder models: English spelled-out dates to ISO dates
// ("the twelfth of march nineteen ninety one" -> "1991-03-12"), character level, with the source
// span each target character comes from, so a test can score where cross-attention looks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/generate/sampling.h"

namespace tscope {

// --- Vocabulary ----------------------------------------------------------------------------------
// Source and target share one character vocabulary, in this fixed order (id = index):
//   0 "<unk>", 1 "^" (decoder start), 2 "$" (end of target), 3 " ", 4 "-", 5..30 "a".."z",
//   31..40 "0".."9"   (41 ids).
// makeCharTokenizer(dateTaskCharacters()) gives exactly these ids (the list starts with "<unk>").
std::vector<std::string> dateTaskCharacters();
constexpr int kDateUnknownId = 0;
constexpr int kDateDecoderStartId = 1;
constexpr int kDateEndId = 2;
constexpr int kDateVocabSize = 41;
// The id of one character of a source or target (kDateUnknownId for a character not listed).
int dateCharacterId(char character);
std::vector<int> dateCharacterIds(std::string_view text);

// --- Spelling ------------------------------------------------------------------------------------
// Dates from 1900-01-01 to 2099-12-31, valid in the Gregorian calendar (2000 is a leap year, 1900
// and 2100 are not). Source words, single spaces, lower case:
//   day as an ordinal: "first" .. "twentieth", "twenty first" .. "thirty first";
//   order: "the <day> of <month> <year>", or "<month> <day> <year>" with kDateStyleMonthFirst;
//   year: 1900 "nineteen hundred", 1901-1909 "nineteen oh five", 1910-1999 "nineteen ninety one",
//         2000 "two thousand", 2001-2009 "two thousand five" ("two thousand and five" with
//         kDateStyleYearAnd), 2010-2019 "twenty twelve" (or with kDateStyleYearThousand "two
//         thousand twelve" / "two thousand and twelve"), 2020-2099 "twenty twenty four".
// A style is a bit set of the flags below; a flag that does not apply to a date changes nothing.
constexpr int kDateStyleMonthFirst = 1;    // "march twelfth ..." instead of "the twelfth of march ..."
constexpr int kDateStyleYearAnd = 2;       // "two thousand and five" instead of "two thousand five"
constexpr int kDateStyleYearThousand = 4;  // 2010-2019 as "two thousand (and) twelve", not "twenty twelve"
constexpr int kDateStyleCount = 8;         // styles are 0 .. kDateStyleCount - 1
constexpr int kDateFirstYear = 1900, kDateLastYear = 2099;
constexpr int kDateTargetLength = 10;  // "YYYY-MM-DD"
// Source lengths in characters under randomDateExample: min 20 ("may first twenty ten"), median 39,
// 5th-95th percentile 30..48, max 58 ("the twenty seventh of september two thousand and seventeen").
constexpr int kDateMaxSourceLength = 58;  // no date in any style is longer (a test checks them all)

// A half-open byte range [offset, offset + length) of the source. Every character of the task is
// one byte and one token, so byte offsets are also source token positions. length 0: no span.
struct AlignmentSpan {
  size_t offset = 0;
  size_t length = 0;
  bool empty() const { return length == 0; }
};

// Which source words each target character comes from (alignment[t] for target[t]; 10 entries).
// The rule: each two-digit group of "YYYY-MM-DD" comes from the words that spell that group, and
// both of its characters get the span of those words (from the first to the last, the spaces
// between included; never "the", "of" or "and"):
//   "19" <- "nineteen"; "20" <- "twenty" or "two thousand";
//   "91" <- "ninety one", "12" <- "twelve", "05" <- "oh five" (1905) or "five" (2005: its "0" is
//   the tens place the lone unit word implies), "00" <- "hundred" (1900) or "two thousand" (2000,
//   whose whole year is those two words);
//   month "03" <- "march" (the padding "0" included: the month word alone decides it);
//   day "12" <- "twelfth", "22" <- "twenty second", "05" <- "fifth" (padding "0" included likewise).
// The two "-" come from nothing specific: their spans are empty and they are not measured.
// In a Seq2SeqBatch, alignment[t] belongs to decoder step t: the step whose input is "^" (t = 0) or
// target[t - 1] and which predicts target[t]; so a cross-attention map (T, S) is read at row t.
struct DateExample {
  std::string source;                    // "the twelfth of march nineteen ninety one"
  std::string target;                    // "1991-03-12"
  std::vector<AlignmentSpan> alignment;  // (target.size()) source span of each target character
};

// True for a real calendar date in [1900-01-01, 2099-12-31].
bool isValidDate(int year, int month, int day);
// Throws tscope::Error naming the problem for an invalid date or a style outside [0, kDateStyleCount).
DateExample spellDate(int year, int month, int day, int style);

// --- Split and sampling --------------------------------------------------------------------------
// The held-out dates (held out in every spelling, so training never sees them): those whose
// splitmix64 hash of year * 10000 + month * 100 + day falls in the lowest 5% (hash % 1000 < 50):
// 3,658 of the 73,049 dates (5.01%). The same on every platform.
bool isHeldOutDate(int year, int month, int day);

// A date drawn uniformly from the training dates (heldOut false) or the held-out dates (heldOut
// true), spelled in a style drawn uniformly from [0, kDateStyleCount).
DateExample randomDateExample(Rng& rng, bool heldOut);

// A batch of B examples for an encoder-decoder. Every source in a batch has the same length S (the
// encoder has no padding mask): the first example's length is S, and each later row draws until its
// source has S characters (at most kDateBatchTriesPerRow draws; after that, the row repeats a
// row drawn earlier in the batch: about 0.1% of rows, nearly all in batches whose first example has
// one of the rare lengths below 25 or above 51).
// inputs = "^" + target, targets = target + "$" (T = 11), every target position scored.
constexpr int kDateBatchTriesPerRow = 2000;
struct Seq2SeqBatch {
  int batch = 0;                // B
  int sourceSteps = 0;          // S
  int targetSteps = 0;          // T = kDateTargetLength + 1
  std::vector<int> sources;     // (B, S) source character ids
  std::vector<int> inputs;      // (B, T) decoder inputs: kDateDecoderStartId, then the target
  std::vector<int> targets;     // (B, T) the target, then kDateEndId
  std::vector<uint8_t> scored;  // (B, T) 1 where the loss counts targets[b, t] (all of them)
};
// Throws tscope::Error if batch < 1.
Seq2SeqBatch makeDatesBatch(int batch, Rng& rng, bool heldOut);

}  // namespace tscope

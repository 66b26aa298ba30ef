// The spelled-out dates task (seq2seq_dates.h): English words for every date of 1900-2099, the ISO
// target, the source span of each target character, a hash split and equal-length batches. The
// source is built word by word, so each group's span is recorded as its words are appended.
#include "model/train/seq2seq_dates.h"

#include <array>

#include "model/core/error.h"

namespace tscope {
namespace {

constexpr std::array<const char*, 20> kCardinalsBelowTwenty = {"",         "one",     "two",     "three",     "four",     "five",    "six",
                                                               "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",  "thirteen",
                                                               "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::array<const char*, 10> kTens = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};
constexpr std::array<const char*, 20> kOrdinalsBelowTwenty = {
    "",      "first",    "second",  "third",      "fourth",     "fifth",     "sixth",     "seventh",     "eighth",     "ninth",
    "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth"};
constexpr std::array<const char*, 13> kMonths = {"",     "january", "february",  "march",   "april",    "may",     "june",
                                                 "july", "august",  "september", "october", "november", "december"};

// 1..99 in words: "twelve", "twenty", "ninety one".
std::string cardinal(int n) {
  if (n < 20) return kCardinalsBelowTwenty[n];
  std::string words = kTens[n / 10];
  if (n % 10 != 0) words += std::string(" ") + kCardinalsBelowTwenty[n % 10];
  return words;
}

// 1..31 as an ordinal: "first", "twentieth", "twenty second".
std::string ordinal(int n) {
  if (n < 20) return kOrdinalsBelowTwenty[n];
  if (n % 10 == 0) return n == 20 ? "twentieth" : "thirtieth";
  return std::string(kTens[n / 10]) + " " + kOrdinalsBelowTwenty[n % 10];
}

// The source text, grown one phrase at a time; each append returns the phrase's span.
struct SourceBuilder {
  std::string text;
  AlignmentSpan append(const std::string& phrase) {
    if (!text.empty()) text += ' ';
    AlignmentSpan span{text.size(), phrase.size()};
    text += phrase;
    return span;
  }
};

// From the start of `first` to the end of `last`.
AlignmentSpan join(AlignmentSpan first, AlignmentSpan last) { return {first.offset, last.offset + last.length - first.offset}; }

struct YearSpans {
  AlignmentSpan century;  // of the first two digits
  AlignmentSpan rest;     // of the last two digits
};

YearSpans appendYear(SourceBuilder& source, int year, int style) {
  const int rest = year % 100;
  if (year < 2000) {
    const AlignmentSpan century = source.append("nineteen");
    if (rest == 0) return {century, source.append("hundred")};
    if (rest < 10) {
      const AlignmentSpan oh = source.append("oh");
      return {century, join(oh, source.append(cardinal(rest)))};
    }
    return {century, source.append(cardinal(rest))};
  }
  const bool thousand = rest < 10 || (rest < 20 && (style & kDateStyleYearThousand));
  if (!thousand) {
    const AlignmentSpan century = source.append("twenty");
    return {century, source.append(cardinal(rest))};
  }
  const AlignmentSpan century = source.append("two thousand");
  if (rest == 0) return {century, century};
  if (style & kDateStyleYearAnd) source.append("and");
  return {century, source.append(cardinal(rest))};
}

bool isLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int daysInMonth(int year, int month) {
  constexpr std::array<int, 13> kDays = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && isLeapYear(year) ? 29 : kDays[month];
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct CalendarDate {
  int year, month, day;
};

// Every valid date of the range, in order, split into training and held-out lists once.
struct DateLists {
  std::vector<CalendarDate> training, heldOut;
  DateLists() {
    for (int year = kDateFirstYear; year <= kDateLastYear; ++year)
      for (int month = 1; month <= 12; ++month)
        for (int day = 1; day <= daysInMonth(year, month); ++day)
          (isHeldOutDate(year, month, day) ? heldOut : training).push_back({year, month, day});
  }
};

const DateLists& dateLists() {
  static const DateLists lists;  // immutable after construction (thread-safe initialisation)
  return lists;
}

size_t randomBelow(Rng& rng, size_t n) { return static_cast<size_t>(rng.next() % n); }

std::string twoDigits(int n) { return {static_cast<char>('0' + n / 10), static_cast<char>('0' + n % 10)}; }

}  // namespace

std::vector<std::string> dateTaskCharacters() {
  std::vector<std::string> characters = {"<unk>", "^", "$", " ", "-"};
  for (char c = 'a'; c <= 'z'; ++c) characters.emplace_back(1, c);
  for (char c = '0'; c <= '9'; ++c) characters.emplace_back(1, c);
  return characters;
}

int dateCharacterId(char character) {
  static const std::array<int, 256> idOfByte = [] {
    std::array<int, 256> ids{};  // kDateUnknownId everywhere else
    const std::vector<std::string> characters = dateTaskCharacters();
    for (size_t id = 1; id < characters.size(); ++id) ids[static_cast<unsigned char>(characters[id][0])] = static_cast<int>(id);
    return ids;
  }();
  return idOfByte[static_cast<unsigned char>(character)];
}

std::vector<int> dateCharacterIds(std::string_view text) {
  std::vector<int> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(dateCharacterId(c));
  return ids;
}

bool isValidDate(int year, int month, int day) {
  return year >= kDateFirstYear && year <= kDateLastYear && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

DateExample spellDate(int year, int month, int day, int style) {
  if (!isValidDate(year, month, day))
    throw Error("spellDate: " + std::to_string(year) + "-" + std::to_string(month) + "-" + std::to_string(day) + " is not a calendar date in " +
                std::to_string(kDateFirstYear) + ".." + std::to_string(kDateLastYear));
  if (style < 0 || style >= kDateStyleCount)
    throw Error("spellDate: style " + std::to_string(style) + " is outside 0.." + std::to_string(kDateStyleCount - 1));
  SourceBuilder source;
  AlignmentSpan daySpan, monthSpan;
  if (style & kDateStyleMonthFirst) {
    monthSpan = source.append(kMonths[month]);
    daySpan = source.append(ordinal(day));
  } else {
    source.append("the");
    daySpan = source.append(ordinal(day));
    source.append("of");
    monthSpan = source.append(kMonths[month]);
  }
  const YearSpans yearSpans = appendYear(source, year, style);

  DateExample example;
  example.source = std::move(source.text);
  example.target = twoDigits(year / 100) + twoDigits(year % 100) + "-" + twoDigits(month) + "-" + twoDigits(day);
  const AlignmentSpan none;
  example.alignment = {yearSpans.century, yearSpans.century, yearSpans.rest, yearSpans.rest, none, monthSpan, monthSpan, none, daySpan, daySpan};
  return example;
}

bool isHeldOutDate(int year, int month, int day) {
  const uint64_t key = static_cast<uint64_t>(year) * 10000 + static_cast<uint64_t>(month) * 100 + static_cast<uint64_t>(day);
  return splitmix64(key) % 1000 < 50;
}

DateExample randomDateExample(Rng& rng, bool heldOut) {
  const std::vector<CalendarDate>& dates = heldOut ? dateLists().heldOut : dateLists().training;
  const CalendarDate date = dates[randomBelow(rng, dates.size())];
  const int style = static_cast<int>(randomBelow(rng, kDateStyleCount));
  return spellDate(date.year, date.month, date.day, style);
}

Seq2SeqBatch makeDatesBatch(int batch, Rng& rng, bool heldOut) {
  if (batch < 1) throw Error("makeDatesBatch: batch must be at least 1, got " + std::to_string(batch));
  std::vector<DateExample> rows;
  rows.reserve(static_cast<size_t>(batch));
  rows.push_back(randomDateExample(rng, heldOut));
  const size_t sourceLength = rows[0].source.size();
  size_t drawnRows = 1;
  for (int b = 1; b < batch; ++b) {
    bool found = false;
    for (int attempt = 0; attempt < kDateBatchTriesPerRow && !found; ++attempt) {
      DateExample candidate = randomDateExample(rng, heldOut);
      if (candidate.source.size() == sourceLength) {
        rows.push_back(std::move(candidate));
        ++drawnRows;
        found = true;
      }
    }
    if (!found) rows.push_back(rows[static_cast<size_t>(b) % drawnRows]);  // a rare length: repeat a drawn row
  }

  Seq2SeqBatch out;
  out.batch = batch;
  out.sourceSteps = static_cast<int>(sourceLength);
  out.targetSteps = kDateTargetLength + 1;
  const size_t S = sourceLength, T = static_cast<size_t>(out.targetSteps);
  out.sources.reserve(batch * S);
  out.inputs.reserve(batch * T);
  out.targets.reserve(batch * T);
  for (const DateExample& row : rows) {
    const std::vector<int> source = dateCharacterIds(row.source), target = dateCharacterIds(row.target);
    out.sources.insert(out.sources.end(), source.begin(), source.end());
    out.inputs.push_back(kDateDecoderStartId);
    out.inputs.insert(out.inputs.end(), target.begin(), target.end());
    out.targets.insert(out.targets.end(), target.begin(), target.end());
    out.targets.push_back(kDateEndId);
  }
  out.scored.assign(batch * T, 1);
  return out;
}

}  // namespace tscope

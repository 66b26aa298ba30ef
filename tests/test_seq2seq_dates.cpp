// The spelled-out dates task (model/train/seq2seq_dates.h): known dates spelled by hand, every draw
// parsed back by an independent parser and checked against std::chrono's calendar, alignment spans
// read back as words, the held-out split, the shared character vocabulary and equal-length batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>

#include "model/tokenize/tokenizer.h"
#include "model/train/seq2seq_dates.h"

using namespace tscope;

namespace {

// --- An independent reader of the spelled dates (its own word tables, no code shared) ----------

const std::map<std::string, int> kNumberWords = {
    {"one", 1},      {"two", 2},      {"three", 3},      {"four", 4},      {"five", 5},      {"six", 6},       {"seven", 7},
    {"eight", 8},    {"nine", 9},     {"ten", 10},       {"eleven", 11},   {"twelve", 12},   {"thirteen", 13}, {"fourteen", 14},
    {"fifteen", 15}, {"sixteen", 16}, {"seventeen", 17}, {"eighteen", 18}, {"nineteen", 19}, {"twenty", 20},   {"thirty", 30},
    {"forty", 40},   {"fifty", 50},   {"sixty", 60},     {"seventy", 70},  {"eighty", 80},   {"ninety", 90}};
const std::map<std::string, int> kOrdinalWords = {
    {"first", 1},      {"second", 2},     {"third", 3},        {"fourth", 4},      {"fifth", 5},       {"sixth", 6},       {"seventh", 7},
    {"eighth", 8},     {"ninth", 9},      {"tenth", 10},       {"eleventh", 11},   {"twelfth", 12},    {"thirteenth", 13}, {"fourteenth", 14},
    {"fifteenth", 15}, {"sixteenth", 16}, {"seventeenth", 17}, {"eighteenth", 18}, {"nineteenth", 19}, {"twentieth", 20},  {"thirtieth", 30}};
const std::vector<std::string> kMonthWords = {"january", "february", "march",     "april",   "may",      "june",
                                              "july",    "august",   "september", "october", "november", "december"};

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// "ninety one" -> 91, "twelve" -> 12; -1 unless tens-then-unit number words.
int cardinalValue(const std::vector<std::string>& ws) {
  int value = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    auto it = kNumberWords.find(ws[i]);
    if (it == kNumberWords.end() || ws.size() > 2 || (i == 1 && (value < 20 || it->second > 9))) return -1;
    value += it->second;
  }
  return ws.empty() ? -1 : value;
}

// "twelfth" -> 12, "twenty second" -> 22; -1 otherwise.
int ordinalValue(const std::vector<std::string>& ws) {
  if (ws.size() == 1) return kOrdinalWords.contains(ws[0]) ? kOrdinalWords.at(ws[0]) : -1;
  if (ws.size() != 2 || (ws[0] != "twenty" && ws[0] != "thirty") || !kOrdinalWords.contains(ws[1])) return -1;
  const int unit = kOrdinalWords.at(ws[1]);
  return unit <= 9 ? kNumberWords.at(ws[0]) + unit : -1;
}

int monthValue(const std::string& word) {
  auto it = std::find(kMonthWords.begin(), kMonthWords.end(), word);
  return it == kMonthWords.end() ? -1 : static_cast<int>(it - kMonthWords.begin()) + 1;
}

// The value of the last two digits of a year from the words after its century, -1 if malformed.
int yearRestValue(std::vector<std::string> ws, bool afterThousand) {
  if (afterThousand) {
    if (ws.empty()) return 0;
    if (ws[0] == "and") ws.erase(ws.begin());
    return cardinalValue(ws);
  }
  if (ws == std::vector<std::string>{"hundred"}) return 0;
  if (!ws.empty() && ws[0] == "oh") {
    const int unit = cardinalValue({ws.begin() + 1, ws.end()});
    return unit >= 1 && unit <= 9 ? unit : -1;
  }
  const int value = cardinalValue(ws);
  return value >= 10 ? value : -1;
}

int yearValue(const std::vector<std::string>& ws) {
  if (ws.size() >= 2 && ws[0] == "two" && ws[1] == "thousand") {
    const int rest = yearRestValue({ws.begin() + 2, ws.end()}, true);
    return rest < 0 ? -1 : 2000 + rest;
  }
  if (ws.empty() || (ws[0] != "nineteen" && ws[0] != "twenty")) return -1;
  const int rest = yearRestValue({ws.begin() + 1, ws.end()}, false);
  return rest < 0 ? -1 : kNumberWords.at(ws[0]) * 100 + rest;
}

// "the <day> of <month> <year>" or "<month> <day> <year>" -> "YYYY-MM-DD", or nullopt.
std::optional<std::string> parseSpelledDate(const std::string& source) {
  const std::vector<std::string> ws = words(source);
  int month = -1, day = -1;
  size_t i = 0;
  std::vector<std::string> dayWords;
  if (!ws.empty() && ws[0] == "the") {
    for (i = 1; i < ws.size() && ws[i] != "of"; ++i) dayWords.push_back(ws[i]);
    if (i + 1 >= ws.size()) return std::nullopt;
    month = monthValue(ws[i + 1]);
    i += 2;
  } else if (!ws.empty()) {
    month = monthValue(ws[0]);
    for (i = 1; i < ws.size(); ++i) {
      dayWords.push_back(ws[i]);
      if (kOrdinalWords.contains(ws[i])) break;
    }
    ++i;
  }
  day = ordinalValue(dayWords);
  const int year = i <= ws.size() ? yearValue({ws.begin() + static_cast<long>(i), ws.end()}) : -1;
  if (month < 0 || day < 0 || year < 0) return std::nullopt;
  char iso[16];
  std::snprintf(iso, sizeof iso, "%04d-%02d-%02d", year, month, day);
  return std::string(iso);
}

// The date in the target, checked by std::chrono's own calendar.
bool isRealDate(const std::string& iso, int* yearOut = nullptr, int* monthOut = nullptr, int* dayOut = nullptr) {
  int y = 0, m = 0, d = 0;
  if (iso.size() != 10 || std::sscanf(iso.c_str(), "%4d-%2d-%2d", &y, &m, &d) != 3) return false;
  if (yearOut) *yearOut = y, *monthOut = m, *dayOut = d;
  using namespace std::chrono;
  return year_month_day{year{y}, month{static_cast<unsigned>(m)}, day{static_cast<unsigned>(d)}}.ok() && y >= 1900 && y <= 2099;
}

std::string spanText(const DateExample& example, size_t t) { return example.source.substr(example.alignment[t].offset, example.alignment[t].length); }

// Every date of 1900..2099 by std::chrono, independent of the task's own calendar.
template <typename Visit>
void forEveryDate(Visit visit) {
  using namespace std::chrono;
  for (sys_days d = sys_days{year{1900} / January / 1}; d <= sys_days{year{2099} / December / 31}; d += days{1}) {
    const year_month_day ymd{d};
    visit(static_cast<int>(ymd.year()), static_cast<int>(static_cast<unsigned>(ymd.month())), static_cast<int>(static_cast<unsigned>(ymd.day())));
  }
}

}  // namespace

TEST(DateTask, KnownDatesAreSpelledAsSpoken) {
  struct Known {
    int y, m, d, style;
    const char* source;
  };
  const Known known[] = {
      {1991, 3, 12, 0, "the twelfth of march nineteen ninety one"},
      {1991, 3, 12, 1, "march twelfth nineteen ninety one"},
      {2024, 2, 29, 0, "the twenty ninth of february twenty twenty four"},
      {1900, 1, 1, 1, "january first nineteen hundred"},
      {2000, 12, 31, 0, "the thirty first of december two thousand"},
      {2000, 12, 31, 7, "december thirty first two thousand"},
      {2099, 11, 30, 1, "november thirtieth twenty ninety nine"},
      {1905, 7, 4, 0, "the fourth of july nineteen oh five"},
      {2005, 6, 5, 0, "the fifth of june two thousand five"},
      {2005, 6, 5, 2, "the fifth of june two thousand and five"},
      {2005, 6, 5, 3, "june fifth two thousand and five"},
      {1913, 8, 13, 1, "august thirteenth nineteen thirteen"},
      {1919, 9, 11, 1, "september eleventh nineteen nineteen"},
      {2012, 10, 20, 0, "the twentieth of october twenty twelve"},
      {2012, 10, 20, 4, "the twentieth of october two thousand twelve"},
      {2012, 10, 20, 6, "the twentieth of october two thousand and twelve"},
      {2015, 3, 15, 5, "march fifteenth two thousand fifteen"},
      {2020, 1, 2, 6, "the second of january twenty twenty"},
      {2021, 5, 22, 1, "may twenty second twenty twenty one"},
      {1960, 4, 3, 0, "the third of april nineteen sixty"},
      {1944, 6, 6, 0, "the sixth of june nineteen forty four"},
      {1900, 2, 28, 0, "the twenty eighth of february nineteen hundred"},
  };
  for (const Known& k : known) {
    const DateExample example = spellDate(k.y, k.m, k.d, k.style);
    char iso[16];
    std::snprintf(iso, sizeof iso, "%04d-%02d-%02d", k.y, k.m, k.d);
    EXPECT_EQ(example.source, k.source) << iso << " style " << k.style;
    EXPECT_EQ(example.target, iso) << k.source;
    EXPECT_EQ(example.alignment.size(), example.target.size()) << k.source;
  }
}

TEST(DateTask, InvalidDatesAndStylesAreRefused) {
  const int invalid[][3] = {{1900, 2, 29}, {2100, 1, 1},  {1899, 12, 31}, {2023, 2, 29}, {2021, 4, 31},
                            {2021, 13, 1}, {2021, 0, 10}, {2021, 5, 0},   {2021, 5, 32}};
  for (const auto& date : invalid) {
    EXPECT_FALSE(isValidDate(date[0], date[1], date[2])) << date[0] << "-" << date[1] << "-" << date[2];
    EXPECT_THROW(spellDate(date[0], date[1], date[2], 0), std::exception) << date[0] << "-" << date[1] << "-" << date[2];
  }
  EXPECT_TRUE(isValidDate(2000, 2, 29)) << "2000 is a leap year (divisible by 400)";
  EXPECT_TRUE(isValidDate(2024, 2, 29));
  EXPECT_THROW(spellDate(2024, 2, 29, kDateStyleCount), std::exception);
  EXPECT_THROW(spellDate(2024, 2, 29, -1), std::exception);
}

TEST(DateTask, EveryDateAndStyleParsesBackAndFitsTheSourceLength) {
  int dates = 0, valid = 0;
  size_t shortest = 1000, longest = 0;
  forEveryDate([&](int y, int m, int d) {
    ++dates;
    valid += isValidDate(y, m, d);
    for (int style = 0; style < kDateStyleCount; ++style) {
      const DateExample example = spellDate(y, m, d, style);
      const std::optional<std::string> parsed = parseSpelledDate(example.source);
      ASSERT_TRUE(parsed.has_value()) << "unreadable: \"" << example.source << "\"";
      ASSERT_EQ(*parsed, example.target) << "\"" << example.source << "\"";
      shortest = std::min(shortest, example.source.size());
      longest = std::max(longest, example.source.size());
    }
  });
  EXPECT_EQ(dates, 73049) << "days from 1900-01-01 to 2099-12-31 by std::chrono";
  EXPECT_EQ(valid, dates) << "isValidDate refused a real date";
  int accepted = 0;
  for (int y = 1890; y <= 2110; ++y)
    for (int m = 0; m <= 13; ++m)
      for (int d = 0; d <= 32; ++d) accepted += isValidDate(y, m, d);
  EXPECT_EQ(accepted, dates) << "isValidDate accepts dates std::chrono does not have (or misses some)";
  EXPECT_LE(longest, static_cast<size_t>(kDateMaxSourceLength));
  EXPECT_EQ(shortest, 20u) << "\"may first twenty ten\"";
  EXPECT_EQ(longest, 58u) << "\"the twenty seventh of september two thousand and seventeen\"";
}

TEST(DateTask, RandomDrawsAreRealDatesThatParseBack) {
  Rng rng(11);
  std::set<std::string> distinctTargets;
  for (int i = 0; i < 10000; ++i) {
    const DateExample example = randomDateExample(rng, i % 10 == 0);
    ASSERT_TRUE(isRealDate(example.target)) << "not a calendar date: " << example.target;
    const std::optional<std::string> parsed = parseSpelledDate(example.source);
    ASSERT_TRUE(parsed.has_value()) << "unreadable: \"" << example.source << "\"";
    ASSERT_EQ(*parsed, example.target) << "\"" << example.source << "\"";
    distinctTargets.insert(example.target);
  }
  EXPECT_GT(distinctTargets.size(), 8000u) << "10,000 draws over 73,049 dates should rarely repeat";
}

TEST(DateTask, HeldOutSplitIsAboutFivePercentAndDrawsStayOnTheirSide) {
  int heldOut = 0, total = 0;
  forEveryDate([&](int y, int m, int d) {
    ++total;
    heldOut += isHeldOutDate(y, m, d);
    EXPECT_EQ(isHeldOutDate(y, m, d), isHeldOutDate(y, m, d));
  });
  const double fraction = static_cast<double>(heldOut) / total;
  EXPECT_NEAR(fraction, 0.05, 0.005) << heldOut << " of " << total << " dates held out";
  EXPECT_EQ(heldOut, 3658) << "the count seq2seq_dates.h documents";

  Rng rng(3);
  std::set<std::string> heldOutSeen;
  for (int i = 0; i < 20000; ++i) {
    const bool wantHeldOut = i % 4 == 0;
    int y, m, d;
    const DateExample example = randomDateExample(rng, wantHeldOut);
    ASSERT_TRUE(isRealDate(example.target, &y, &m, &d)) << example.target;
    ASSERT_EQ(isHeldOutDate(y, m, d), wantHeldOut) << example.target << " drawn for the " << (wantHeldOut ? "held-out" : "training") << " side";
    if (wantHeldOut) heldOutSeen.insert(example.target);
  }
  EXPECT_GT(heldOutSeen.size(), 2000u) << "5,000 held-out draws should cover most of the 3,658 held-out dates";
}

TEST(DateTask, AlignmentSpansPointAtTheWordsByHand) {
  const auto expectSpans = [](const DateExample& ex, const std::vector<std::string>& expected) {
    ASSERT_EQ(ex.alignment.size(), expected.size()) << ex.source;
    for (size_t t = 0; t < expected.size(); ++t) {
      EXPECT_EQ(spanText(ex, t), expected[t]) << "\"" << ex.source << "\" target[" << t << "] = " << ex.target[t];
      EXPECT_EQ(ex.alignment[t].empty(), expected[t].empty()) << ex.source << " target[" << t << "]";
    }
  };
  expectSpans(spellDate(1991, 3, 12, 0), {"nineteen", "nineteen", "ninety one", "ninety one", "", "march", "march", "", "twelfth", "twelfth"});
  expectSpans(spellDate(2005, 3, 22, 3),
              {"two thousand", "two thousand", "five", "five", "", "march", "march", "", "twenty second", "twenty second"});
  expectSpans(spellDate(1900, 1, 1, 1), {"nineteen", "nineteen", "hundred", "hundred", "", "january", "january", "", "first", "first"});
  expectSpans(spellDate(1905, 7, 4, 0), {"nineteen", "nineteen", "oh five", "oh five", "", "july", "july", "", "fourth", "fourth"});
  expectSpans(spellDate(2000, 12, 31, 0),
              {"two thousand", "two thousand", "two thousand", "two thousand", "", "december", "december", "", "thirty first", "thirty first"});
  expectSpans(spellDate(2024, 2, 29, 1),
              {"twenty", "twenty", "twenty four", "twenty four", "", "february", "february", "", "twenty ninth", "twenty ninth"});
  // The two "twenty"s of "twenty twenty" are told apart by their offsets.
  const DateExample twenties = spellDate(2020, 1, 2, 1);  // "january second twenty twenty"
  EXPECT_EQ(twenties.alignment[0].offset, 15u) << twenties.source;
  EXPECT_EQ(twenties.alignment[2].offset, 22u) << twenties.source;
}

TEST(DateTask, EverySpanSpellsItsOwnDigitGroup) {
  Rng rng(29);
  for (int i = 0; i < 10000; ++i) {
    const DateExample ex = randomDateExample(rng, false);
    ASSERT_EQ(ex.alignment.size(), 10u) << ex.source;
    for (size_t t = 0; t < ex.alignment.size(); ++t) {
      const AlignmentSpan span = ex.alignment[t];
      ASSERT_EQ(span.empty(), t == 4 || t == 7) << ex.source << " target[" << t << "]: only the dashes have no span";
      if (span.empty()) continue;
      ASSERT_LE(span.offset + span.length, ex.source.size()) << ex.source;
      EXPECT_TRUE(span.offset == 0 || ex.source[span.offset - 1] == ' ') << ex.source << " span " << t;
      const size_t end = span.offset + span.length;
      EXPECT_TRUE(end == ex.source.size() || ex.source[end] == ' ') << ex.source << " span " << t;
      const std::vector<std::string> spanWords = words(spanText(ex, t));
      for (const char* filler : {"the", "of", "and"})
        EXPECT_EQ(std::count(spanWords.begin(), spanWords.end(), filler), 0)
            << "\"" << spanText(ex, t) << "\" holds \"" << filler << "\" in " << ex.source;
    }
    const std::string century = spanText(ex, 0), rest = spanText(ex, 2);
    const int centuryValue = century == "two thousand" ? 20 : cardinalValue(words(century));
    const int restValue = rest == "two thousand" ? 0 : yearRestValue(words(rest), century == "two thousand");
    EXPECT_EQ(centuryValue, std::stoi(ex.target.substr(0, 2))) << "\"" << century << "\" in " << ex.source;
    EXPECT_EQ(restValue, std::stoi(ex.target.substr(2, 2))) << "\"" << rest << "\" in " << ex.source;
    EXPECT_EQ(monthValue(spanText(ex, 5)), std::stoi(ex.target.substr(5, 2))) << ex.source;
    EXPECT_EQ(ordinalValue(words(spanText(ex, 8))), std::stoi(ex.target.substr(8, 2))) << ex.source;
    for (size_t t : {1u, 3u, 6u, 9u})
      EXPECT_EQ(ex.alignment[t].offset, ex.alignment[t - 1].offset) << ex.source << ": a group's two digits share a span";
  }
}

TEST(DateTask, VocabularyIsTheCharTokenizersAndCoversEveryCharacter) {
  const std::vector<std::string> characters = dateTaskCharacters();
  ASSERT_EQ(characters.size(), static_cast<size_t>(kDateVocabSize));
  const auto tokenizer = makeCharTokenizer(characters);
  ASSERT_EQ(tokenizer->vocabSize(), kDateVocabSize) << "\"<unk>\" must not be added twice";
  EXPECT_EQ(tokenizer->tokenBytes(kDateUnknownId), "<unk>");
  EXPECT_EQ(tokenizer->tokenBytes(kDateDecoderStartId), "^");
  EXPECT_EQ(tokenizer->tokenBytes(kDateEndId), "$");
  const std::pair<char, int> fixed[] = {{' ', 3}, {'-', 4}, {'a', 5}, {'z', 30}, {'0', 31}, {'9', 40}};
  for (const auto& [c, id] : fixed) EXPECT_EQ(dateCharacterId(c), id) << "'" << c << "'";
  for (int id = 1; id < kDateVocabSize; ++id) EXPECT_EQ(dateCharacterId(tokenizer->tokenBytes(id)[0]), id) << "'" << tokenizer->tokenBytes(id) << "'";
  EXPECT_EQ(dateCharacterId('A'), kDateUnknownId);

  Rng rng(5);
  for (int i = 0; i < 2000; ++i) {
    const DateExample ex = randomDateExample(rng, i % 2 == 1);
    for (const std::string& text : {ex.source, ex.target}) {
      const std::vector<int> ids = dateCharacterIds(text);
      ASSERT_EQ(ids, tokenizer->encode(text)) << "\"" << text << "\"";
      ASSERT_EQ(std::count(ids.begin(), ids.end(), kDateUnknownId), 0) << "a character outside the vocabulary in \"" << text << "\"";
      ASSERT_EQ(tokenizer->decode(ids), text);
    }
  }
}

TEST(DateTask, BatchesHaveEqualSourceLengthsAndShiftedTargets) {
  const auto tokenizer = makeCharTokenizer(dateTaskCharacters());
  std::set<int> lengths;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Rng rng(seed);
    const bool heldOut = seed % 5 == 0;
    const int B = 32;
    const Seq2SeqBatch batch = makeDatesBatch(B, rng, heldOut);
    const int S = batch.sourceSteps, T = batch.targetSteps;
    ASSERT_EQ(batch.batch, B);
    ASSERT_EQ(T, 11);
    ASSERT_EQ(batch.sources.size(), static_cast<size_t>(B * S));
    ASSERT_EQ(batch.inputs.size(), static_cast<size_t>(B * T));
    ASSERT_EQ(batch.targets.size(), static_cast<size_t>(B * T));
    ASSERT_EQ(batch.scored.size(), static_cast<size_t>(B * T));
    lengths.insert(S);
    std::set<std::string> distinctSources;
    for (int b = 0; b < B; ++b) {
      const std::string source = tokenizer->decode(std::span<const int>(batch.sources).subspan(static_cast<size_t>(b) * S, S));
      const std::span<const int> inputs = std::span<const int>(batch.inputs).subspan(static_cast<size_t>(b) * T, T);
      const std::span<const int> targets = std::span<const int>(batch.targets).subspan(static_cast<size_t>(b) * T, T);
      EXPECT_EQ(inputs[0], kDateDecoderStartId) << "row " << b;
      EXPECT_EQ(targets[T - 1], kDateEndId) << "row " << b;
      for (int t = 0; t + 1 < T; ++t) EXPECT_EQ(inputs[t + 1], targets[t]) << "row " << b << " step " << t;
      const std::string target = tokenizer->decode(targets.first(T - 1));
      const std::optional<std::string> parsed = parseSpelledDate(source);
      ASSERT_TRUE(parsed.has_value()) << "row " << b << " of seed " << seed << " does not read: \"" << source << "\"";
      EXPECT_EQ(*parsed, target) << "row " << b << " source and target disagree";
      int y, m, d;
      ASSERT_TRUE(isRealDate(target, &y, &m, &d)) << target;
      EXPECT_EQ(isHeldOutDate(y, m, d), heldOut) << target << " in a " << (heldOut ? "held-out" : "training") << " batch";
      distinctSources.insert(source);
    }
    EXPECT_EQ(std::count(batch.scored.begin(), batch.scored.end(), 1), B * T) << "every target position is scored";
    EXPECT_GE(distinctSources.size(), static_cast<size_t>(B / 2)) << "seed " << seed << ", S = " << S << ": rows should rarely need repeating";
  }
  EXPECT_GE(lengths.size(), 8u) << "the batch length follows the first draw, so it should vary between batches";
  Rng rng(1);
  EXPECT_THROW(makeDatesBatch(0, rng, false), std::exception);
}

TEST(DateTask, SameSeedSameBatchesOtherSeedOtherBatches) {
  Rng first(42), second(42), other(43);
  for (int i = 0; i < 5; ++i) {
    const Seq2SeqBatch a = makeDatesBatch(16, first, i % 2 == 1), b = makeDatesBatch(16, second, i % 2 == 1);
    EXPECT_EQ(a.sources, b.sources) << "batch " << i;
    EXPECT_EQ(a.inputs, b.inputs) << "batch " << i;
    EXPECT_EQ(a.targets, b.targets) << "batch " << i;
    const Seq2SeqBatch c = makeDatesBatch(16, other, i % 2 == 1);
    EXPECT_NE(a.targets, c.targets) << "batch " << i << ": seeds 42 and 43 gave the same dates";
  }
}

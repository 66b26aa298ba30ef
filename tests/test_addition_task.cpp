// The multi-digit addition task (model/train/data.cpp): every example's sum is right, zero-padded
// and reversed, only the sum is scored; its spec parses and prints back; the saved character
// tokenizer shows the digits as '0'..'9', so a typed prompt "123+456=" is the task's own tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "model/train/trainer.h"
#include "test_files.h"

using namespace tscope;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;

namespace {

TaskSpec addition(int digits) {
  TaskSpec spec;
  spec.task = SyntheticTask::Addition;
  spec.digits = digits;
  return spec;
}

// The number written by `count` digit tokens starting at `first`, most significant first when
// !reversed.
uint64_t number(const std::vector<int>& tokens, size_t first, int count, bool reversed) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) {
    const int digit = tokens[first + (reversed ? count - 1 - i : i)];
    EXPECT_GE(digit, 0);
    EXPECT_LE(digit, 9);
    value = value * 10 + static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace

TEST(AdditionTask, SumIsRightPaddedReversedAndScored) {
  for (int digits : {1, 3, 9}) {
    SCOPED_TRACE(digits);
    const TaskSpec spec = addition(digits);
    EXPECT_EQ(taskVocabSize(spec), 12);
    EXPECT_EQ(taskSequenceLength(spec), 3 * digits + 3);
    Rng rng(5);
    bool sawCarryOut = false, sawLeadingZero = false;
    for (int e = 0; e < 300; ++e) {
      const TaskExample ex = makeExample(spec, rng);
      ASSERT_EQ(ex.tokens.size(), static_cast<size_t>(3 * digits + 3));
      ASSERT_EQ(ex.scored.size(), ex.tokens.size());
      const size_t plus = static_cast<size_t>(digits), equals = 2 * plus + 1, answer = equals + 1;
      EXPECT_EQ(ex.tokens[plus], 10);
      EXPECT_EQ(ex.tokens[equals], 11);
      const uint64_t a = number(ex.tokens, 0, digits, false), b = number(ex.tokens, plus + 1, digits, false);
      const uint64_t c = number(ex.tokens, answer, digits + 1, true);
      EXPECT_EQ(c, a + b) << a << " + " << b;
      // Least significant first: the first answer token is the last digit of the sum.
      EXPECT_EQ(static_cast<uint64_t>(ex.tokens[answer]), (a + b) % 10);
      sawCarryOut = sawCarryOut || ex.tokens.back() == 1;
      sawLeadingZero = sawLeadingZero || ex.tokens[0] == 0;
      for (size_t t = 0; t < ex.tokens.size(); ++t) EXPECT_EQ(ex.scored[t], t >= answer ? 1 : 0) << t;
    }
    EXPECT_TRUE(sawCarryOut) << "no sum needed the extra digit";
    EXPECT_TRUE(sawLeadingZero) << "no operand was zero-padded";
  }
}

TEST(AdditionTask, SpecNamesAndErrors) {
  const DataSpec spec = parseDataSpec("addition");
  EXPECT_FALSE(spec.brown);
  EXPECT_EQ(spec.task.task, SyntheticTask::Addition);
  EXPECT_EQ(spec.task.digits, 3);
  EXPECT_EQ(toString(parseDataSpec("addition:digits=5")), "addition:digits=5");
  EXPECT_EQ(parseDataSpec(toString(spec)).task.digits, 3);
  EXPECT_EQ(parseTaskName("addition"), SyntheticTask::Addition);
  EXPECT_STREQ(taskName(SyntheticTask::Addition), "addition");
  const std::vector<std::string> names = taskTokenNames(addition(2));
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "="}));
  for (int digits : {0, 10, -1}) {
    expectMentions(validateTaskSpec(addition(digits)), {"addition", "digits", std::to_string(digits)});
    expectMentions(errorMessage([&] { parseDataSpec("addition:digits=" + std::to_string(digits)); }), {"digits"});
  }
}

TEST(AdditionTask, CharacterTokenizerShowsTheDigits) {
  const std::unique_ptr<DataSource> source = makeDataSource(parseDataSpec("addition:digits=3"), 0, 1);
  const Tokenizer& tokenizer = source->tokenizer();
  EXPECT_EQ(source->vocabSize(), 13);
  // Model id = task id + 1: "123+456=" is the digits 1 2 3, '+', 4 5 6, '='.
  EXPECT_EQ(tokenizer.encode("123+456="), (std::vector<int>{2, 3, 4, 11, 5, 6, 7, 12}));
  std::vector<int> inputs(source->sequenceLength()), targets(inputs.size());
  std::vector<uint8_t> scored(inputs.size());
  Rng rng(3);
  source->trainBatch(1, rng, inputs.data(), targets.data(), scored.data());
  std::string text;
  for (int id : inputs) text += tokenizer.decode(std::vector<int>{id});
  text += tokenizer.decode(std::vector<int>{targets.back()});
  // The decoded sequence reads as the sum it is: "abc+def=" then the reversed sum.
  ASSERT_EQ(text.size(), 12u) << text;
  const uint64_t a = std::stoull(text.substr(0, 3)), b = std::stoull(text.substr(4, 3));
  const std::string reversed(text.rbegin(), text.rbegin() + 4);
  EXPECT_EQ(std::stoull(reversed), a + b) << text;
  EXPECT_EQ(text[3], '+');
  EXPECT_EQ(text[7], '=');
}

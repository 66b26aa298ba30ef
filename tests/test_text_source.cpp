// Text files as training data (model/train/text_source.cpp): the paragraph / line split, every
// one-line error naming the file, the data spec's round trip (paths with ':' and '=' kept, ',' refused),
// and a real source on a temporary file: both splits, the probe, one training step.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model/train/text_source.h"
#include "model/train/train_presets.h"
#include "test_files.h"

using namespace tscope;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

namespace {

// `count` paragraphs of two lines each, every paragraph different.
std::string paragraphs(int count) {
  std::string text;
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away", "today"};
  for (int p = 0; p < count; ++p) {
    for (int line = 0; line < 2; ++line) {
      for (int w = 0; w < 9; ++w) text += std::string(words[(p * 7 + line * 3 + w * 5) % 12]) + (w < 8 ? " " : "");
      text += " " + std::to_string(p) + ".\r\n";
    }
    text += p % 3 ? "\n" : "  \t\n\n";  // blank lines, some with white space
  }
  return text;
}

}  // namespace

TEST(TextSource, ParagraphsAreDocumentsOrLinesWhenFew) {
  const std::vector<std::string> many = textDocuments(paragraphs(25));
  ASSERT_EQ(many.size(), 25u);
  EXPECT_EQ(std::count(many[3].begin(), many[3].end(), '\n'), 2) << many[3];
  EXPECT_EQ(many[3].find('\r'), std::string::npos);
  EXPECT_NE(many[24].find(" 24.\n"), std::string::npos) << many[24];
  // Fewer than kMinParagraphs paragraphs: each non-blank line is a document.
  const std::vector<std::string> few = textDocuments(paragraphs(5));
  ASSERT_EQ(few.size(), 10u);
  EXPECT_EQ(few[0].back(), '\n');
  EXPECT_EQ(std::count(few[0].begin(), few[0].end(), '\n'), 1);
  // The split keeps every document once.
  const TextCorpus corpus = splitTextCorpus("x", many, 0.2);
  EXPECT_EQ(corpus.trainDocuments + corpus.validationDocuments, 25u);
  EXPECT_EQ(corpus.validationDocuments, 5u);
  for (const std::string& document : many)
    EXPECT_NE((corpus.train.find(document) != std::string::npos) + (corpus.validation.find(document) != std::string::npos), 0);
}

TEST(TextSource, ErrorsNameTheFileAndTheProblem) {
  ScratchDir dir;
  const std::string missing = dir.file("missing.txt");
  expectMentions(errorMessage([&] { readTrainingText(missing); }), {missing, "no such file"});
  expectMentions(errorMessage([&] { readTrainingText(dir.path().string()); }), {dir.path().string(), "cannot be read"});
  const std::string empty = dir.file("empty.txt");
  writeBytes(empty, "");
  expectMentions(errorMessage([&] { readTrainingText(empty); }), {empty, "empty"});
  writeBytes(empty, " \n\t\r\n\n");
  expectMentions(errorMessage([&] { readTrainingText(empty); }), {empty, "empty"});
  const std::string latin1 = dir.file("latin1.txt");
  writeBytes(latin1, "caf\xc3\xa9 ok, na\xefve");  // a valid é, then a Latin-1 ï at byte offset 12
  expectMentions(errorMessage([&] { readTrainingText(latin1); }), {latin1, "UTF-8", "byte offset 12", "0xEF"});
  const std::string huge = dir.file("huge.txt");
  writeBytes(huge, "a");
  std::filesystem::resize_file(huge, kMaxTrainingTextBytes + 1);  // sparse: nothing is written
  expectMentions(errorMessage([&] { readTrainingText(huge); }), {huge, "256 MB"});
  const std::string tiny = dir.file("tiny.txt");
  writeBytes(tiny, paragraphs(3));
  expectMentions(errorMessage([&] { makeDataSource(parseDataSpec("text:path=" + tiny + ",vocab=260,val=0.2"), 256, 1); }),
                 {tiny, "too short", "256"});
}

TEST(TextSource, SpecRoundTripsAndRefusesCommas) {
  const DataSpec spec = parseDataSpec("text:path=/data/a:b=c.txt,vocab=300,val=0.1");
  EXPECT_TRUE(spec.brown);
  EXPECT_EQ(spec.textPath, "/data/a:b=c.txt");
  EXPECT_EQ(spec.bpeVocab, 300);
  EXPECT_EQ(toString(spec), "text:path=/data/a:b=c.txt,vocab=300,val=0.1");
  EXPECT_EQ(parseDataSpec(toString(spec)).textPath, spec.textPath);
  const DataSpec defaults = parseDataSpec("text:path=notes.txt");
  EXPECT_EQ(defaults.bpeVocab, 4096);
  EXPECT_EQ(defaults.validationFraction, 0.05);
  EXPECT_EQ(toString(parseDataSpec(toString(defaults))), toString(defaults));
  expectMentions(errorMessage([] { parseDataSpec("text:path=a,b.txt,vocab=300"); }), {"text path", "','", "a,b.txt"});
  expectMentions(errorMessage([] { parseDataSpec("text:vocab=300"); }), {"path=FILE"});
  expectMentions(errorMessage([] { parseDataSpec("text:path=x.txt,dir=y"); }), {"dir"});
  expectMentions(errorMessage([] { parseDataSpec("text:path=x.txt,vocab=10"); }), {"vocab", "text"});
  DataSpec comma = defaults;
  comma.textPath = "a,b.txt";
  expectMentions(errorMessage([&] { toString(comma); }), {"','", "a,b.txt"});
  EXPECT_NE(validateTrainSetup(TrainConfig{}, comma).find("','"), std::string::npos);
}

TEST(TextSource, TrainsOnATextFile) {
  ScratchDir dir;
  const std::string path = dir.file("notes.txt");
  writeBytes(path, paragraphs(40));
  const DataSpec spec = parseDataSpec("text:path=" + path + ",vocab=300,val=0.1");
  const TextCorpus corpus = textFileCorpus(path, 0.1);
  const std::unique_ptr<DataSource> source = makeDataSource(spec, 16, 1);
  EXPECT_LE(source->vocabSize(), 300);
  EXPECT_EQ(source->sequenceLength(), 16);
  expectMentions(source->describe(), {path, "36 training documents", "4 validation documents"});
  // The probe is the start of the validation text, at most 20 tokens and never longer than T.
  const std::vector<int> validation = source->tokenizer().encode(corpus.validation);
  const std::vector<int> probe = source->probeSequence();
  ASSERT_EQ(probe.size(), 16u);
  EXPECT_TRUE(std::equal(probe.begin(), probe.end(), validation.begin()));
  EXPECT_EQ(makeDataSource(spec, 64, 1)->probeSequence().size(), 20u);

  TrainConfig config;
  config.model.n_layer = 1;
  config.model.n_head = 2;
  config.model.n_embd = 32;
  config.batch = 4;
  config.seqLen = 16;
  config.maxSteps = 2;
  config.warmupSteps = 1;
  config.threads = 1;
  EXPECT_EQ(validateTrainSetup(config, spec), "");
  Trainer trainer(config, spec);
  EXPECT_EQ(trainer.config().model.vocab_size, source->vocabSize());
  const StepReport step = trainer.step();
  EXPECT_NEAR(step.loss, std::log(static_cast<double>(source->vocabSize())), 1.0);
  EXPECT_TRUE(std::isfinite(trainer.evaluate().loss));
}

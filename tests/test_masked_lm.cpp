// The masked language model (BERT's objective, issue #33): the special tokens found by their text,
// BERT's 15% and 80/10/10 masking, the masked-text encoding and the fill-in from logits, the
// masked-LM text source and a tiny model that learns to fill blanks from both sides, and the
// one-line refusals (a causal masked LM, a masked LM asked to continue a text or to train on a task).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model/core/error.h"
#include "model/generate/fill_mask.h"
#include "model/generate/generate.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"
#include "model/select/backend_select.h"
#include "model/io/model_io.h"
#include "model/train/fill_eval.h"
#include "model/train/masked_lm.h"
#include "model/train/train_model.h"
#include "model/train/text_source.h"
#include "model/train/train_presets.h"
#include "test_files.h"

using namespace tscope;
using tscope::testing::errorMessage;
using tscope::testing::expectMentions;
using tscope::testing::ScratchDir;
using tscope::testing::writeBytes;

namespace {

// Paragraphs whose words follow a fixed cycle (each word is decided by its neighbours).
std::string cycleParagraphs(int count) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away", "today"};
  std::string text;
  for (int p = 0; p < count; ++p) {
    for (int w = 0; w < 24; ++w) text += std::string(words[(p * 7 + w * 5) % 12]) + (w < 23 ? " " : ".\n\n");
  }
  return text;
}

const MaskedLmTokens kSpecials{100, 101, 102, 103};

}  // namespace

TEST(MaskedLm, MaskingFollowsBertsRates) {
  Rng rng(7);
  const int n = 126, windows = 2000;
  std::vector<int> text(n);
  std::iota(text.begin(), text.end(), 0);
  std::vector<int> inputs(n + 2), targets(n + 2);
  std::vector<uint8_t> scored(n + 2);
  long chosen = 0, masked = 0, kept = 0, replaced = 0;
  for (int w = 0; w < windows; ++w) {
    maskWindow(text, kSpecials, 100, rng, inputs.data(), targets.data(), scored.data());
    ASSERT_EQ(inputs.front(), kSpecials.cls);
    ASSERT_EQ(inputs.back(), kSpecials.sep);
    ASSERT_FALSE(scored.front() || scored.back());
    for (int t = 1; t <= n; ++t) {
      ASSERT_EQ(targets[t], text[t - 1]);
      if (!scored[t]) {
        ASSERT_EQ(inputs[t], text[t - 1]);
        continue;
      }
      ++chosen;
      if (inputs[t] == kSpecials.mask) ++masked;
      else if (inputs[t] == text[t - 1]) ++kept;
      else {
        ++replaced;
        ASSERT_LT(inputs[t], 100);  // never a special token
      }
    }
  }
  const double total = static_cast<double>(n) * windows;
  EXPECT_NEAR(chosen / total, 0.15, 0.005);
  EXPECT_NEAR(masked / static_cast<double>(chosen), 0.8, 0.01);
  EXPECT_NEAR(replaced / static_cast<double>(chosen), 0.1 * 99 / 100, 0.01);  // a random draw may hit the same token
  EXPECT_NEAR(kept / static_cast<double>(chosen), 0.1 + 0.1 / 100, 0.01);
  // One token of text: it is always the one chosen. The same seed masks the same way.
  const std::vector<int> one = {5};
  std::vector<int> in(3), out(3);
  std::vector<uint8_t> s(3);
  Rng single(1);
  for (int i = 0; i < 20; ++i) {
    maskWindow(one, kSpecials, 100, single, in.data(), out.data(), s.data());
    EXPECT_EQ(s[1], 1);
  }
  std::vector<int> a(n + 2), b(n + 2), ta(n + 2), tb(n + 2);
  std::vector<uint8_t> sa(n + 2), sb(n + 2);
  Rng ra(3), rb(3);
  maskWindow(text, kSpecials, 100, ra, a.data(), ta.data(), sa.data());
  maskWindow(text, kSpecials, 100, rb, b.data(), tb.data(), sb.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(sa, sb);
  expectMentions(errorMessage([&] { maskWindow(text, MaskedLmTokens{}, 100, ra, a.data(), ta.data(), sa.data()); }), {"[MASK]"});
}

TEST(MaskedLm, FillsFromLogitsLeavingOutSpecialTokens) {
  const int V = 104;
  std::vector<float> logits(3 * V, 0.0f);
  logits[1 * V + 7] = 3;                // position 1: token 7 first
  logits[1 * V + 9] = 2;                // then 9
  logits[1 * V + kSpecials.mask] = 10;  // a special token is never a candidate, though it takes probability
  const std::vector<int> masks = {1};
  const std::vector<MaskFill> fills = fillFromLogits(logits, V, masks, kSpecials, 3);
  ASSERT_EQ(fills.size(), 1u);
  ASSERT_EQ(fills[0].top.size(), 3u);
  EXPECT_EQ(fills[0].top[0].id, 7);
  EXPECT_EQ(fills[0].top[1].id, 9);
  EXPECT_EQ(fills[0].top[2].id, 0);  // ties: the smaller id
  const double sum = std::exp(10.0) + std::exp(3.0) + std::exp(2.0) + (V - 3);
  EXPECT_NEAR(fills[0].top[0].p, std::exp(3.0) / sum, 1e-9);
  EXPECT_NEAR(fills[0].top[2].p, 1.0 / sum, 1e-9);
  const std::vector<int> past = {3};
  expectMentions(errorMessage([&] { fillFromLogits(logits, V, past, kSpecials, 3); }), {"position 3"});
}

TEST(MaskedLm, TextSourceAddsSpecialTokensAndEncodesMasks) {
  const TextCorpus corpus = splitTextCorpus("cycle", textDocuments(cycleParagraphs(60)), 0.1);
  const std::unique_ptr<DataSource> source = makeTextCorpusSource(corpus, 300, 16, true);
  const Tokenizer& tokenizer = source->tokenizer();
  const MaskedLmTokens specials = findMaskedLmTokens(tokenizer);
  ASSERT_TRUE(specials.complete());
  EXPECT_EQ(specials.mask, tokenizer.vocabSize() - 1);  // after the BPE: [PAD] [CLS] [SEP] [MASK]
  EXPECT_EQ(specials.pad, tokenizer.vocabSize() - 4);
  expectMentions(source->describe(), {"masked LM", "4 special tokens"});
  // Text never encodes to a special token, even when it spells one.
  for (int id : tokenizer.encode("[MASK] [CLS] the cat")) EXPECT_FALSE(specials.isSpecial(id));
  // A batch: [CLS] first, [SEP] last, the scored targets are text.
  std::vector<int> inputs(4 * 16), targets(4 * 16);
  std::vector<uint8_t> scored(4 * 16);
  source->validationBatch(4, 0, inputs.data(), targets.data(), scored.data());
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(inputs[b * 16], specials.cls);
    EXPECT_EQ(inputs[b * 16 + 15], specials.sep);
    EXPECT_GE(std::count(scored.begin() + b * 16, scored.begin() + b * 16 + 16, 1), 1);
  }
  std::vector<int> again(4 * 16);
  source->validationBatch(4, 0, again.data(), targets.data(), scored.data());
  EXPECT_EQ(again, inputs);  // validation masks the same positions every time

  // "[MASK]" in a text: the mask token, with the space in front of it dropped.
  const MaskedText text = encodeMaskedText(tokenizer, specials, "the cat [MASK] on a [MASK]");
  ASSERT_EQ(text.maskPositions.size(), 2u);
  EXPECT_EQ(text.ids.front(), specials.cls);
  EXPECT_EQ(text.ids.back(), specials.sep);
  EXPECT_EQ(text.ids[text.maskPositions[0]], specials.mask);
  std::vector<int> expected = {specials.cls};
  for (const char* piece : {"the cat", "MASK", " on a", "MASK"}) {
    if (std::string(piece) == "MASK") {
      expected.push_back(specials.mask);
      continue;
    }
    for (int id : tokenizer.encode(piece)) expected.push_back(id);
  }
  expected.push_back(specials.sep);
  EXPECT_EQ(text.ids, expected);
  EXPECT_EQ(textWithFill(text, 0, " sat"), "the cat sat on a [MASK]");
  // Editing the tokens (mask one, unmask one) and writing them back as a prompt round-trips.
  EXPECT_EQ(promptFromTokens(tokenizer, specials, text.ids), "the cat [MASK] on a [MASK]");
  std::vector<int> edited = text.ids;
  edited[1] = specials.mask;                                        // "the" at the start: no space in front
  edited[text.maskPositions[1]] = tokenizer.encode(" mat").back();  // the last blank filled
  const std::string prompt = promptFromTokens(tokenizer, specials, edited);
  EXPECT_EQ(prompt.substr(0, 6), "[MASK]");
  EXPECT_EQ(encodeMaskedText(tokenizer, specials, prompt).ids, edited) << prompt;
  EXPECT_EQ(textWithFill(text, 1, "mat"), "the cat [MASK] on a mat");
  const MaskedText plain = encodeMaskedText(tokenizer, specials, "no blank here");
  EXPECT_TRUE(plain.maskPositions.empty());
  EXPECT_EQ(plain.ids.size(), tokenizer.encode("no blank here").size() + 2);
  expectMentions(errorMessage([&] { requireMask(plain); }), {"no [MASK]"});
  expectMentions(errorMessage([&] { encodeMaskedText(tokenizer, MaskedLmTokens{}, "a [MASK]"); }), {"[CLS]", "[MASK]"});
  EXPECT_EQ(contextProblem(text, 16), "");
  expectMentions(contextProblem(text, 4), {"longer than the model's context of 4", "1 [MASK] fall past"});
}

TEST(MaskedLm, RefusesWhatAMaskedModelCannotDo) {
  ModelConfig c;
  c.masked_lm = true;
  expectMentions(validateConfig(c), {"masked_lm", "causal false"});
  c.causal = false;
  EXPECT_EQ(validateConfig(c), "");
  expectMentions(continuationProblem(c), {"masked language model", "fill"});
  EXPECT_EQ(fillProblem(c, kSpecials), "");
  expectMentions(fillProblem(c, MaskedLmTokens{}), {"[MASK]"});
  ModelConfig decoder;
  expectMentions(fillProblem(decoder, kSpecials), {"next token"});
  EXPECT_EQ(continuationProblem(decoder), "");
  TrainConfig run;
  run.model = c;
  expectMentions(validateTrainSetup(run, parseDataSpec("induction")), {"masked_lm", "text"});
  expectMentions(errorMessage([] { makeDataSource(parseDataSpec("induction"), 16, 1, true); }), {"masked language model", "induction"});
  // Generation refuses it in one line.
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.vocab_size = 20;
  c.n_positions = 8;
  Weights weights(c);
  weights.initRandom(1, 0.02);
  auto backend = makeBackend("cpu", 1, nullptr);
  Transformer model(weights, *backend);
  const std::vector<int> prompt = {1, 2};
  expectMentions(errorMessage([&] { Generation generation(model, prompt, SamplingParams{}); }), {"masked language model"});
}

// BERT's segments: the token type of each token is the number of [SEP]s before it, capped at the
// table; a decoder cannot have them; a second segment changes the embedding of every token after the
// [SEP] by the table's row difference and nothing before it.
TEST(MaskedLm, TokenTypesAreCountedFromSep) {
  ModelConfig c;
  c.causal = false;
  c.masked_lm = true;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 8;
  c.vocab_size = 12;
  c.n_positions = 8;
  const std::vector<int> tokens = {2, 5, 3, 6, 3, 7, 8};                           // [CLS] A [SEP] B [SEP] C D, [SEP] = 3
  EXPECT_EQ(tokenTypes(c, tokens.data(), tokens.size()), std::vector<int>(7, 0));  // no token types
  c.type_vocab_size = 2;
  EXPECT_EQ(tokenTypes(c, tokens.data(), tokens.size()), std::vector<int>(7, 0));  // no [SEP] id
  c.sep_token_id = 3;
  EXPECT_EQ(tokenTypes(c, tokens.data(), tokens.size()), (std::vector<int>{0, 0, 0, 1, 1, 1, 1}));
  c.type_vocab_size = 3;
  EXPECT_EQ(tokenTypes(c, tokens.data(), tokens.size()), (std::vector<int>{0, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(validateConfig(c), "");
  ModelConfig decoder = c;
  decoder.causal = true;
  decoder.masked_lm = false;
  expectMentions(validateConfig(decoder), {"type_vocab_size", "encoder-only"});
  ModelConfig outside = c;
  outside.sep_token_id = 12;
  expectMentions(validateConfig(outside), {"sep_token_id", "vocabulary"});
  // The forward adds the rows: embedded rows differ from a one-segment model's by wtt[type] - wtt[0].
  Weights weights(c);
  weights.initRandom(3, 0.5);
  ModelConfig single = c;
  single.sep_token_id = -1;
  Weights one(single);
  std::copy(weights.arena(), weights.arena() + weights.totalFloats(), one.arena());
  auto backend = makeBackend("cpu", 1, nullptr);
  TraceOptions options;
  options.components = true;
  Trace twoSegments, oneSegment;
  Transformer(weights, *backend).logitsFor(tokens, &twoSegments, options);
  Transformer(one, *backend).logitsFor(tokens, &oneSegment, options);
  const std::vector<int> types = tokenTypes(c, tokens.data(), tokens.size());
  ASSERT_EQ(twoSegments.embedded.size(), tokens.size() * 8);
  for (size_t t = 0; t < tokens.size(); ++t)
    for (int i = 0; i < 8; ++i)
      EXPECT_NEAR(twoSegments.embedded[t * 8 + i] - oneSegment.embedded[t * 8 + i], weights.wtt[types[t] * 8 + i] - weights.wtt[i], 1e-5) << t;
}

TEST(MaskedLm, ATinyModelLearnsToFillBlanksFromBothSides) {
  ScratchDir dir;
  const std::string path = dir.file("cycle.txt");
  writeBytes(path, cycleParagraphs(80));
  const DataSpec spec = parseDataSpec("text:path=" + path + ",vocab=320,val=0.1");
  TrainConfig config;
  config.model.n_layer = 2;
  config.model.n_head = 2;
  config.model.n_embd = 32;
  config.model.causal = false;
  config.model.masked_lm = true;
  config.model.position_encoding = PositionEncoding::Rope;  // "the word beside me" is one relative offset: learned in few steps
  config.batch = 8;
  config.seqLen = 24;
  config.maxSteps = 1000;
  config.warmupSteps = 10;
  config.maxLr = 1e-2f;
  config.evalBatches = 4;
  config.threads = 1;
  ASSERT_EQ(validateTrainSetup(config, spec), "");
  Trainer trainer(config, spec);
  const EvalReport before = trainer.evaluate();
  ASSERT_GE(before.accuracy, 0.0);
  while (!trainer.done()) trainer.step();
  const EvalReport after = trainer.evaluate();
  EXPECT_LT(after.loss, before.loss);
  EXPECT_GT(after.accuracy, 0.6) << "before: " << before.accuracy;
  EXPECT_GT(after.accuracy, before.accuracy + 0.3);
  // The trained model fills a blank of the cycle.
  const Tokenizer& tokenizer = trainer.data().tokenizer();
  const MaskedLmTokens specials = findMaskedLmTokens(tokenizer);
  const MaskedText text = encodeMaskedText(tokenizer, specials, "the mat away on [MASK] cat while");
  auto backend = makeBackend("cpu", 1, nullptr);
  Transformer model(trainer.weights(), *backend);
  const std::vector<float> logits = model.logitsFor(text.ids);
  const std::vector<MaskFill> fills = fillFromLogits(logits, trainer.config().model.vocab_size, text.maskPositions, specials, 3);
  EXPECT_EQ(tokenizer.tokenBytes(fills[0].top[0].id), " ran") << tokenizer.tokenBytes(fills[0].top[0].id);
  // What fills a blank depends on the words to its right too: the same left side with another right
  // side changes the prediction (a causal model's logits at the blank would be the same).
  const MaskedText a = encodeMaskedText(tokenizer, specials, "a far sat [MASK] the mat away on");
  const MaskedText b = encodeMaskedText(tokenizer, specials, "a far sat [MASK] cat while today a");
  ASSERT_EQ(a.maskPositions, b.maskPositions);
  const int V = trainer.config().model.vocab_size;
  const MaskFill fillA = fillFromLogits(model.logitsFor(a.ids), V, a.maskPositions, specials, 1)[0];
  const MaskFill fillB = fillFromLogits(model.logitsFor(b.ids), V, b.maskPositions, specials, 1)[0];
  EXPECT_EQ(tokenizer.tokenBytes(fillA.top[0].id), " dogs");
  EXPECT_GT(std::fabs(fillA.top[0].p - fillB.top[0].p) + (fillA.top[0].id != fillB.top[0].id), 0.05);
  // Held-out blanks (fill_eval.h): the trained model beats the unigram guess; the model itself is
  // no causal baseline, and a model that is not a masked LM cannot be evaluated.
  trainer.saveCheckpoint(dir.file("mlm"));
  const LoadedModel loaded = loadModel(dir.file("mlm"));
  const TextCorpus corpus = textFileCorpus(path, 0.1);
  const FillEval eval = evaluateFill(loaded, nullptr, corpus, 100, 1, *backend);
  EXPECT_GT(eval.tokens, 10);
  EXPECT_GT(eval.maskedCorrect, 2 * eval.unigramCorrect) << eval.maskedCorrect << " of " << eval.tokens << ", unigram " << eval.unigramToken;
  EXPECT_FALSE(eval.hasCausal);
  expectMentions(errorMessage([&] { evaluateFill(loaded, &loaded, corpus, 100, 1, *backend); }), {"causal decoder"});
  // A causal model's evaluation counts no masked accuracy.
  EXPECT_EQ(EvalReport{}.accuracy, -1);
}

// The models shipped in assets/models/ show what they were trained to show: induction-2l has an
// induction head (a layer-1 head attends from each repeated token to the token after its earlier
// copy) and predicts the repeat; brown-small continues a prompt with English words (checked
// against the Brown corpus's own vocabulary); brown-moe uses every expert on held-out text;
// dates-encdec translates held-out dates and its cross-attention looks at the words it translates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <filesystem>
#include <set>
#include <sstream>

#include "model/nn/backend.h"
#include "model/train/data.h"
#include "model/core/error.h"
#include "model/generate/generate.h"
#include "model/io/model_io.h"
#include "model/train/trainer.h"
#include "model/nn/transformer.h"
#include "model/train/dates_score.h"
#include "app/session/app_state.h"
#include "app/session/lesson.h"
#include "model/tokenize/pretokenize.h"

namespace fs = std::filesystem;
using namespace tscope;

namespace {

std::string shipped(const std::string& name) { return std::string(TSCOPE_SOURCE_DIR) + "/assets/models/" + name; }

LoadedModel loadShipped(const std::string& name) {
  const std::string dir = shipped(name);
  if (!fs::exists(dir + "/config.json")) throw Error(dir + " is missing");
  return loadModel(dir);
}

// The words of `prompt` (GPT-2's pre-tokenizer pieces holding a letter) that `tokenizer` cuts into
// more than one token, each with its pieces ("jury -> j|ury").
// A masked LM's "[MASK]" is one token of its own (fill_mask.h), not a word: left out.
std::vector<std::string> splitWords(const Tokenizer& tokenizer, std::string prompt) {
  for (size_t at; (at = prompt.find("[MASK]")) != std::string::npos;) prompt.replace(at, 6, " ");
  std::vector<std::string> split;
  for (std::string_view piece : preTokenizeViews(prompt, SplitPattern::Gpt2)) {
    if (std::none_of(piece.begin(), piece.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) continue;
    const std::vector<int> ids = tokenizer.encode(piece);
    if (ids.size() == 1) continue;
    std::string shards;
    for (int id : ids) shards += (shards.empty() ? "" : "|") + tokenizer.tokenText(id);
    split.push_back(std::string(piece) + " -> " + shards);
  }
  return split;
}

}  // namespace

// The first thing a class sees is the default prompt on the default model, then the lessons'
// prompts: each word one token, so the tokenizer does not look broken (a step about sub-word
// tokenization would say so, and the tokenization lesson `tokens` is exempt; character-level models are exempt,
// their tokens are characters).
TEST(ShippedModels, TheDefaultAndLessonPromptsTokenizeIntoWholeWords) {
  const LoadedModel small = loadShipped("brown-small");
  EXPECT_EQ(splitWords(*small.tokenizer, session::AppState{}.prompt), std::vector<std::string>{}) << "the default prompt on brown-small";
  std::map<std::string, LoadedModel> models;
  int checked = 0;
  for (const session::Lesson& lesson : session::loadLessons(std::string(TSCOPE_SOURCE_DIR) + "/assets/lessons")) {
    if (lesson.name == "tokens") continue;  // the tokenization lesson splits rare words on purpose
    for (int step = 0; step < static_cast<int>(lesson.steps.size()); ++step) {
      const std::string model = session::lessonModelAtStep(lesson, step, std::string(TSCOPE_SOURCE_DIR) + "/assets/models");
      if (model.empty()) continue;
      if (!models.count(model)) models.emplace(model, loadModel(model));
      const LoadedModel& loaded = models.at(model);
      // Character models have no words to split; an image model reads a picture, not the prompt.
      if (!loaded.tokenizer || loaded.tokenizer->kind() == TokenizerKind::Char || loaded.weights.config().isImage()) continue;
      const std::string prompt = session::stateAtStep(lesson, step, session::AppState{}, loaded.weights.config()).prompt;
      EXPECT_EQ(splitWords(*loaded.tokenizer, prompt), std::vector<std::string>{})
          << lesson.name << " step " << step + 1 << " on " << fs::path(model).filename() << ": \"" << prompt << "\"";
      ++checked;
    }
  }
  EXPECT_GT(checked, 20) << "lesson steps on BPE models checked";
}

TEST(ShippedModels, InductionHeadCopiesTheRepeat) {
  const LoadedModel model = loadShipped("induction-2l");
  ASSERT_TRUE(model.tokenizer);
  const std::string half = "qwertyuiopasdfgh";  // 16 distinct letters, as in training
  // The context is the training length, 31 tokens: x and x without its last letter.
  const std::vector<int> ids = model.tokenizer->encode(half + half.substr(0, half.size() - 1));
  const int n = static_cast<int>(half.size()), T = static_cast<int>(ids.size());
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  Trace trace;
  const std::vector<float> logits = transformer.logitsFor(ids, &trace);
  // Predictions on the repeated half (positions n .. 2n-2 predict tokens n+1 .. 2n-1).
  const int V = model.weights.config().vocab_size;
  int correct = 0;
  for (int t = n; t < T - 1; ++t) {
    const float* row = logits.data() + (size_t)t * V;
    correct += std::max_element(row, row + V) - row == ids[t + 1];
  }
  EXPECT_EQ(correct, T - 1 - n) << "greedy predictions right on the repeated half";
  // The induction head: layer 1, attention from position t to t - n + 1.
  const int H = trace.H, Tk = trace.Tk;
  ASSERT_EQ(trace.L, 2);
  double best = 0;
  int bestHead = -1;
  for (int h = 0; h < H; ++h) {
    double sum = 0;
    for (int t = n; t < T; ++t) sum += trace.attn[(((size_t)1 * H + h) * trace.T + t) * Tk + (t - n + 1)];
    const double mean = sum / (T - n);
    if (mean > best) best = mean, bestHead = h;
  }
  EXPECT_GT(best, 0.5) << "strongest induction head " << bestHead << " puts only " << best << " on the token after the earlier copy";
}

TEST(ShippedModels, BrownSmallWritesEnglishWords) {
  const LoadedModel model = loadShipped("brown-small");
  ASSERT_TRUE(model.tokenizer);
  EXPECT_LE(fs::file_size(shipped("brown-small") + "/model.safetensors"), 20u << 20);
  const std::string corpusDir = defaultBrownCorpusDir();
  if (corpusDir.empty()) GTEST_SKIP() << "Brown corpus not installed";
  std::set<std::string> vocabulary;
  for (const BrownDocument& doc : loadBrownCorpus(corpusDir).documents)
    for (const TaggedSpan& w : doc.words) {
      std::string word = doc.text.substr(w.offset, w.length);
      std::transform(word.begin(), word.end(), word.begin(), ::tolower);
      vocabulary.insert(word);
    }
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  SamplingParams params;
  params.temperature = 0.8f;
  params.seed = 7;
  const std::vector<int> prompt = model.tokenizer->encode("The jury said that the");
  const GenerationResult result = generate(transformer, prompt, 100, params);
  const std::string text = model.tokenizer->decode(result.ids);
  std::istringstream words(text);
  std::string word;
  int total = 0, known = 0;
  while (words >> word) {
    // Strip punctuation the corpus tags as separate words.
    while (!word.empty() && std::ispunct(static_cast<unsigned char>(word.back()))) word.pop_back();
    while (!word.empty() && std::ispunct(static_cast<unsigned char>(word.front()))) word.erase(word.begin());
    if (word.empty()) continue;
    std::transform(word.begin(), word.end(), word.begin(), ::tolower);
    ++total;
    known += vocabulary.count(word) != 0;
  }
  ASSERT_GT(total, 40) << text;
  // A small model invents some words (about one in ten at temperature 0.8); most must be real.
  EXPECT_GT(static_cast<double>(known) / total, 0.8) << known << " of " << total << " words are Brown words: " << text;
}

TEST(ShippedModels, BrownMoeUsesEveryExpert) {
  const LoadedModel model = loadShipped("brown-moe");
  const ModelConfig& c = model.weights.config();
  ASSERT_EQ(c.n_experts, 8);
  ASSERT_EQ(c.moe_top_k, 2);
  EXPECT_LE(fs::file_size(shipped("brown-moe") + "/model.safetensors"), 20u << 20);
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  const std::string text =
      "The committee met on Tuesday to discuss the new budget. Several members said that the city could not afford "
      "another tax increase, and the mayor agreed to review the plan before the next meeting of the council.";
  Trace trace;
  transformer.logitsFor(model.tokenizer->encode(text), &trace);
  for (int l = 0; l < c.n_layer; ++l) {
    const MoeRouting& routing = trace.moe[l];
    const int total = std::accumulate(routing.load.begin(), routing.load.end(), 0);
    for (int e = 0; e < c.n_experts; ++e) EXPECT_GT(routing.load[e], 0) << "layer " << l << ": expert " << e << " gets no token";
    const int busiest = *std::max_element(routing.load.begin(), routing.load.end());
    EXPECT_LT(busiest, total / 2) << "layer " << l << ": one expert takes half the assignments (collapsed)";
  }
}

// The encoder-decoder translates dates it never saw (5% of dates are held out of training in every
// spelling) and its cross-attention aligns: for most target characters the strongest source position
// (mean over every decoder layer's heads) lies in the words that character comes from
// (seq2seq_dates.h's spans; the dashes and the century's second digit are not measured).
TEST(ShippedModels, DatesEncoderDecoderTranslatesHeldOutDatesAndAligns) {
  const LoadedModel model = loadShipped("dates-encdec");
  ASSERT_TRUE(model.weights.config().isEncoderDecoder());
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  EXPECT_EQ(translateDate(transformer, "the twelfth of march nineteen ninety one"), "1991-03-12");
  EXPECT_EQ(translateDate(transformer, "march twelfth nineteen ninety one"), "1991-03-12");
  const DateTranslationScore score = scoreDateTranslation(transformer, 300, 20261126);
  std::string wrong;
  for (const std::string& line : score.wrong) wrong += "\n  " + line;
  EXPECT_GE(score.exactMatch(), 0.95) << score.exact << " of " << score.examples << " held-out dates exact; wrong:" << wrong;
  EXPECT_GE(score.alignmentAllLayers, 0.8) << "alignment share over every layer's heads, " << score.alignedCharacters << " characters";
  // The year's last two digits come from their own words ("ninety one", "twenty four", "oh five"):
  // some layer looks there almost every time.
  for (int position : {2, 3}) {
    double best = 0;
    for (const auto& layer : score.alignmentByPosition) best = std::max(best, layer[position]);
    EXPECT_GE(best, 0.9) << "target position " << position;
  }
}

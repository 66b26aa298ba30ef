// HuggingFace BERT masked LMs (model/io/hf_bert.cpp): golden logits and attention maps against the
// independent float64 forward of tests/golden/hf_reference.py (its BERT variants, run here at test
// time), the config fields that decide the forward, the MLM head in the logit lens and in training's
// forward, and one clear line for every checkpoint tscope cannot read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/generate/fill_mask.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/model_io.h"
#include "model/io/npy.h"
#include "model/nn/backend.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "model/train/device.h"
#include "model/train/train_model.h"
#include "test_files.h"
#include "test_helpers.h"
#include "tests/golden_checkpoints.h"
#include "tests/cli_output.h"
#include "tests/hf_tiny_model.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;
using json = nlohmann::json;

namespace {

const char* const kBertVariants[] = {"bert", "bert_gamma_beta_heads8", "bert_bf16_gelu_new"};

// The reference's checkpoints, written once for the whole file.
const fs::path& goldenDir() { return goldenCheckpoints("tscope_hf_bert_golden", "hf_reference.py", "bert"); }

std::vector<int> goldenTokens(const std::string& variant) {
  const NpyArray tokens = readNpy((goldenDir() / variant / "tokens.npy").string());
  return {tokens.data.begin(), tokens.data.end()};
}

// A tiny BertForMaskedLM written here (not by the reference): L 1, C 8, H 2, F 12, V 16, 10 positions.
json tinyBertConfig() {
  return {{"architectures", {"BertForMaskedLM"}},
          {"model_type", "bert"},
          {"hidden_size", 8},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"intermediate_size", 12},
          {"vocab_size", 16},
          {"max_position_embeddings", 10},
          {"type_vocab_size", 2},
          {"layer_norm_eps", 1e-12},
          {"hidden_act", "gelu"}};
}

std::map<std::string, std::vector<int64_t>> tinyBertShapes(const std::string& bert = "bert.", bool head = true) {
  std::map<std::string, std::vector<int64_t>> s = {{bert + "embeddings.word_embeddings.weight", {16, 8}},
                                                   {bert + "embeddings.position_embeddings.weight", {10, 8}},
                                                   {bert + "embeddings.token_type_embeddings.weight", {2, 8}},
                                                   {bert + "embeddings.LayerNorm.weight", {8}},
                                                   {bert + "embeddings.LayerNorm.bias", {8}}};
  const std::string p = bert + "encoder.layer.0.";
  for (const char* name : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
    s[p + name + ".weight"] = {8, 8};
    s[p + name + ".bias"] = {8};
  }
  s[p + "intermediate.dense.weight"] = {12, 8};
  s[p + "intermediate.dense.bias"] = {12};
  s[p + "output.dense.weight"] = {8, 12};
  s[p + "output.dense.bias"] = {8};
  for (const char* norm : {"attention.output.LayerNorm", "output.LayerNorm"}) {
    s[p + norm + ".weight"] = {8};
    s[p + norm + ".bias"] = {8};
  }
  if (!head) return s;
  s["cls.predictions.transform.dense.weight"] = {8, 8};
  s["cls.predictions.transform.dense.bias"] = {8};
  s["cls.predictions.transform.LayerNorm.weight"] = {8};
  s["cls.predictions.transform.LayerNorm.bias"] = {8};
  s["cls.predictions.bias"] = {16};
  return s;
}

}  // namespace

TEST(HfBert, MatchesPyTorchReference) {
  for (const char* variant : kBertVariants) {
    SCOPED_TRACE(variant);
    const fs::path folder = goldenDir() / variant;
    const LoadedModel model = loadModel(folder.string());
    EXPECT_EQ(model.format, "hf-bert");
    EXPECT_EQ(model.tokenizer, nullptr);  // no tokenizer files: ids work, the note says why
    expectMentions(model.tokenizerNote, {"WordPiece", "vocab.txt", "token ids work"});
    const ModelConfig& c = model.weights.config();
    EXPECT_FALSE(c.causal);
    EXPECT_TRUE(c.masked_lm);
    EXPECT_FALSE(c.pre_norm);
    EXPECT_FALSE(c.hasFinalNorm());
    EXPECT_TRUE(c.embedding_norm);
    EXPECT_TRUE(c.mlm_head);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_EQ(c.n_positions, 40);
    EXPECT_EQ(c.type_vocab_size, std::string(variant) == "bert_gamma_beta_heads8" ? 3 : 2);
    const std::vector<int> ids = goldenTokens(variant);
    const NpyArray logits = readNpy((folder / "logits.npy").string());        // (T, V)
    const NpyArray attention = readNpy((folder / "attention.npy").string());  // (L, H, T, T)
    for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(1); }}) {
      auto backend = makeBackend();
      Transformer transformer(model.weights, *backend);
      Trace trace;
      const std::vector<float> ours = transformer.logitsFor(ids, &trace);
      ASSERT_EQ(ours.size(), logits.data.size());
      const Difference logitDiff = compare(ours, logits.data), mapDiff = compare(trace.attn, attention.data);
      EXPECT_LT(logitDiff.relative(), 1e-4) << "logits: " << logitDiff.describe();
      EXPECT_LT(mapDiff.relative(), 1e-4) << "attention maps: " << mapDiff.describe();
      std::printf("%-9s %-24s logits: %s\n%-9s %-24s attention: %s\n", backend->name().c_str(), variant, logitDiff.describe().c_str(),
                  backend->name().c_str(), variant, mapDiff.describe().c_str());
      // The logit lens of the last layer is the model's own output: the same head, the same top token.
      const int T = trace.T, V = c.vocab_size, K = trace.lensK, last = c.n_layer - 1;
      ASSERT_GT(K, 0);
      for (int t = 0; t < T; ++t) {
        int best = 0;
        for (int v = 1; v < V; ++v)
          if (ours[(size_t)t * V + v] > ours[(size_t)t * V + best]) best = v;
        EXPECT_EQ(trace.lensIds[((size_t)last * T + t) * K], best) << "position " << t;
      }
    }
  }
}

// The head is not linear in the residual: the direct logit attribution says so in one line.
TEST(HfBert, DirectLogitAttributionSaysWhyNot) {
  const LoadedModel model = loadModel((goldenDir() / "bert").string());
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  TraceOptions options;
  options.components = true;
  Trace trace;
  transformer.logitsFor(goldenTokens("bert"), &trace, options);
  const std::string why = errorMessage([&] { directLogitAttribution(trace, model.weights, 0, 1); });
  expectMentions(why, {"MLM head", "not linear"});
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

// Training's forward runs the same embedding norm, token types and head (its loss is the
// cross-entropy of the inference logits), and so does its backward: the output bias's gradient is
// the mean over positions of softmax - onehot, from the inference logits alone; both token types
// the [SEP] makes get a gradient.
TEST(HfBert, TrainsThroughItsHeadNormsAndTokenTypes) {
  const LoadedModel model = loadModel((goldenDir() / "bert").string());
  const ModelConfig& c = model.weights.config();
  const std::vector<int> ids = goldenTokens("bert");
  const int T = static_cast<int>(ids.size()), V = c.vocab_size, C = c.n_embd;
  std::vector<int> targets(ids.rbegin(), ids.rend());
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  const std::vector<float> logits = transformer.logitsFor(ids);
  double expected = 0;
  std::vector<double> biasGradient(V, 0.0);
  for (int t = 0; t < T; ++t) {
    double top = -INFINITY, sum = 0;
    for (int v = 0; v < V; ++v) top = std::max(top, (double)logits[(size_t)t * V + v]);
    for (int v = 0; v < V; ++v) sum += std::exp(logits[(size_t)t * V + v] - top);
    expected += top + std::log(sum) - logits[(size_t)t * V + targets[t]];
    for (int v = 0; v < V; ++v) biasGradient[v] += (std::exp(logits[(size_t)t * V + v] - top) / sum - (v == targets[t])) / T;
  }
  expected /= T;
  auto device = makeCpuDevice(1);
  TrainModel training(c, *device);
  const BatchView batch{1, T, ids.data(), targets.data(), nullptr};
  EXPECT_NEAR(training.loss(model.weights, batch).loss, expected, 1e-4 * expected);
  Weights grads(c);
  EXPECT_NEAR(training.lossAndGradients(model.weights, grads, batch).loss, expected, 1e-4 * expected);
  for (int v = 0; v < V; ++v) EXPECT_NEAR(grads.mlmBias[v], biasGradient[v], 1e-5) << v;
  ASSERT_EQ(c.type_vocab_size, 2);
  for (int type = 0; type < 2; ++type) {
    double norm = 0;
    for (int i = 0; i < C; ++i) norm += std::abs(grads.wtt[type * C + i]);
    EXPECT_GT(norm, 1e-6) << "token type " << type;
  }
}

// The token type table is loaded whole (BERT's segments, counted from [SEP]); the position table as stored.
TEST(HfBert, TokenTypeTableIsLoadedWhole) {
  ScratchDir dir("tscope_hf_bert_types");
  writeTinyModel(dir.path() / "tiny", tinyBertConfig(), tinyBertShapes());
  const LoadedModel model = loadModel((dir.path() / "tiny").string());
  SafetensorsFile file((dir.path() / "tiny" / "model.safetensors").string());
  const std::vector<float> positions = file.readFloat("bert.embeddings.position_embeddings.weight");
  const std::vector<float> types = file.readFloat("bert.embeddings.token_type_embeddings.weight");
  EXPECT_EQ(model.weights.config().type_vocab_size, 2);
  EXPECT_EQ(model.weights.config().sep_token_id, -1);  // no sep_token_id and no tokenizer: one segment
  ASSERT_TRUE(model.weights.has("wtt.weight"));
  for (int t = 0; t < 10; ++t)
    for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(model.weights.wpe[t * 8 + i], positions[t * 8 + i]) << t << " " << i;
  for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(model.weights.wtt[i], types[i]) << i;
  EXPECT_TRUE(model.weights.has("mlm.dense.weight"));
  EXPECT_TRUE(model.weights.has("ln_emb.bias"));
  EXPECT_FALSE(model.weights.has("ln_f.weight"));  // post-norm: no final norm
}

TEST(HfBert, UnreadableCheckpointsAreOneLine) {
  ScratchDir dir("tscope_hf_bert_bad");
  // BertModel: the encoder without the masked-LM head (no cls.*, no bert. prefix).
  json bertModel = tinyBertConfig();
  bertModel["architectures"] = {"BertModel"};
  writeTinyModel(dir.path() / "bert_model", bertModel, tinyBertShapes("", false));
  expectMentions(loadError(dir.path() / "bert_model"), {"no masked-LM head", "cls.predictions", "BertModel", "model.safetensors"});

  json relative = tinyBertConfig();
  relative["position_embedding_type"] = "relative_key";
  writeTinyModel(dir.path() / "relative", relative, tinyBertShapes());
  expectMentions(loadError(dir.path() / "relative"), {"position_embedding_type", "relative_key", "absolute", "config.json"});

  // A decoder weight that is not the word embeddings (the test's fill pattern differs by name).
  auto untied = tinyBertShapes();
  untied["cls.predictions.decoder.weight"] = {16, 8};
  writeTinyModel(dir.path() / "untied", tinyBertConfig(), untied);
  expectMentions(loadError(dir.path() / "untied"), {"cls.predictions.decoder.weight", "differs from the word embeddings", "model.safetensors"});

  auto missing = tinyBertShapes();
  missing.erase("bert.encoder.layer.0.output.LayerNorm.bias");
  writeTinyModel(dir.path() / "missing", tinyBertConfig(), missing);
  expectMentions(loadError(dir.path() / "missing"), {"missing tensor", "bert.encoder.layer.0.output.LayerNorm.bias"});

  auto types = tinyBertShapes();
  types["bert.embeddings.token_type_embeddings.weight"] = {3, 8};
  writeTinyModel(dir.path() / "types", tinyBertConfig(), types);
  expectMentions(loadError(dir.path() / "types"), {"token_type_embeddings", "[3, 8]", "[2, 8]"});

  auto extra = tinyBertShapes();
  extra["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = {19, 4};
  writeTinyModel(dir.path() / "extra", tinyBertConfig(), extra);
  expectMentions(loadError(dir.path() / "extra"), {"unexpected tensor", "distance_embedding", "BertForMaskedLM"});

  json act = tinyBertConfig();
  act["hidden_act"] = "swish";
  writeTinyModel(dir.path() / "act", act, tinyBertShapes());
  expectMentions(loadError(dir.path() / "act"), {"hidden_act", "swish", "config.json"});

  json classifier = tinyBertConfig();  // another BERT head: not read
  classifier["architectures"] = {"BertForSequenceClassification"};
  writeTinyModel(dir.path() / "classifier", classifier, tinyBertShapes());
  expectMentions(loadError(dir.path() / "classifier"), {"BertForSequenceClassification", "not supported yet", "BertForMaskedLM"});
}

// The HuggingFace cache layout, as for the other HF models.
TEST(HfBert, LoadsFromTheCacheLayout) {
  ScratchDir dir("tscope_hf_bert_cache");
  const fs::path snapshot = dir.path() / "hub" / "models--tiny-org--tiny-bert" / "snapshots" / "3333";
  writeTinyModel(snapshot, tinyBertConfig(), tinyBertShapes());
  const char* saved = std::getenv("HF_HUB_CACHE");
  const std::string savedValue = saved ? saved : "";
  ::setenv("HF_HUB_CACHE", (dir.path() / "hub").c_str(), 1);
  const LoadedModel model = loadModel("tiny-org/tiny-bert");
  std::vector<DownloadedModel> found = findCachedHfModels();
  if (saved) ::setenv("HF_HUB_CACHE", savedValue.c_str(), 1);
  else ::unsetenv("HF_HUB_CACHE");
  EXPECT_EQ(model.format, "hf-bert");
  EXPECT_EQ(model.path, snapshot.string());
  bool listed = false;
  for (const DownloadedModel& m : found) listed = listed || (m.id == "tiny-org/tiny-bert" && m.problem.empty());
  EXPECT_TRUE(listed);
}

// A BERT directory with its WordPiece vocab.txt opens as a masked LM whose blanks tscope fills: the
// special tokens found by their text, "[MASK]" in a text the mask id, the fillers the model's logits
// at the blank, and a filled prompt written back through WordPiece's decode.
TEST(HfBert, FillsBlanksWithItsWordPieceVocabulary) {
  ScratchDir dir;
  const fs::path folder = dir.path() / "bert";
  fs::copy(goldenDir() / "bert", folder, fs::copy_options::recursive);
  json config = json::parse(readBytes((folder / "config.json").string()));
  config.erase("sep_token_id");  // [SEP] from the vocabulary instead
  writeBytes((folder / "config.json").string(), config.dump());
  const int V = config["vocab_size"].get<int>();
  const char* words[] = {"the", "jury", "said", "that", "city", "was", "held", "in", "atlanta", "a", "quiet", "election", "##s", "."};
  std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int id = 5; id < V; ++id) vocab += (id - 5 < (int)std::size(words) ? std::string(words[id - 5]) : "[unused" + std::to_string(id) + "]") + "\n";
  writeBytes((folder / "vocab.txt").string(), vocab);
  const LoadedModel model = loadModel(folder.string());
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizerNote;
  EXPECT_EQ(model.tokenizer->kind(), TokenizerKind::WordPiece);
  const MaskedLmTokens specials = findMaskedLmTokens(*model.tokenizer);
  EXPECT_EQ(specials.pad, 0);
  EXPECT_EQ(specials.cls, 2);
  EXPECT_EQ(specials.sep, 3);
  EXPECT_EQ(specials.mask, 4);
  EXPECT_EQ(model.weights.config().sep_token_id, specials.sep);  // the segments are counted from the tokenizer's [SEP]
  EXPECT_EQ(fillProblem(model.weights.config(), specials), "");
  const MaskedText text = encodeMaskedText(*model.tokenizer, specials, "The jury [MASK] that the city was held.");
  const std::vector<int> expected = {2, 5, 6, 4, 8, 5, 9, 10, 11, 18, 3};
  EXPECT_EQ(text.ids, expected);
  ASSERT_EQ(text.maskPositions, std::vector<int>{3});
  auto backend = makeCpuBackend(1);
  Transformer transformer(model.weights, *backend);
  const std::vector<float> logits = transformer.logitsFor(text.ids);
  const MaskFill fill = fillFromLogits(logits, V, text.maskPositions, specials, 3)[0];
  int best = -1;
  for (int v = 0; v < V; ++v)
    if (!specials.isSpecial(v) && (best < 0 || logits[3 * (size_t)V + v] > logits[3 * (size_t)V + best])) best = v;
  EXPECT_EQ(fill.top[0].id, best);
  std::vector<int> filled = text.ids;
  filled[3] = 7;  // "said"
  const std::string prompt = promptFromTokens(*model.tokenizer, specials, filled);
  EXPECT_EQ(prompt, "the jury said that the city was held.");
  filled[1] = specials.mask;
  EXPECT_EQ(encodeMaskedText(*model.tokenizer, specials, promptFromTokens(*model.tokenizer, specials, filled)).ids, filled);
  // A sentence pair: "[SEP]" typed between the sentences starts segment 1, and fill's JSON says so.
  const CliRun run = runCli("fill --backend cpu --model " + folder.string() + " --text \"The jury [MASK] that. [SEP] The city was held.\"", dir);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  const json pair = tscope::testing::parsed(run);
  const std::vector<int> ids = pair["ids"].get<std::vector<int>>(), types = pair["token_types"].get<std::vector<int>>();
  ASSERT_EQ(types.size(), ids.size());
  const size_t sep = std::find(ids.begin(), ids.end(), specials.sep) - ids.begin();
  ASSERT_LT(sep + 2, ids.size());  // the typed [SEP], then the second sentence and the closing [SEP]
  for (size_t t = 0; t < ids.size(); ++t) EXPECT_EQ(types[t], t <= sep ? 0 : 1) << t;
  // Clicking a word rebuilds the prompt from the ids: the pair's [SEP] survives it.
  const std::string pairPrompt = promptFromTokens(*model.tokenizer, specials, ids);
  EXPECT_NE(pairPrompt.find("[SEP]"), std::string::npos) << pairPrompt;
  EXPECT_EQ(encodeMaskedText(*model.tokenizer, specials, pairPrompt).ids, ids) << pairPrompt;
}

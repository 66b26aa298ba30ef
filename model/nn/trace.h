// What one forward pass records for the UI and the CLI: attention maps and scores, the residual
// stream, logit-lens predictions and the logits. What is captured is chosen by TraceOptions and
// kept under a memory cap (layers past the cap are left out and the trace says so). AttentionRows
// holds the maps of a whole prompt as immutable row pieces, so an edit shares unchanged rows.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/nn/moe.h"

namespace tscope {

struct TraceOptions {
  bool attention = true;        // probabilities and pre-softmax scores of captured layers
  bool residuals = true;        // residual stream after attention and after the MLP
  int logitLensTopK = 5;        // top tokens per (layer, position); 0 = no logit lens
  bool logitLensLastOnly = false;  // lens only at the last new position (cheap for big vocabularies)
  std::vector<int> layers;      // layers to capture; empty = all
  std::vector<int> heads;       // heads whose attention maps are needed; empty = all (maps of other
                                // heads may stay 0: the CUDA backend recomputes only these)
  size_t memoryCapBytes = size_t(512) << 20;

  static TraceOptions nothing() {
    TraceOptions o;
    o.attention = o.residuals = false;
    o.logitLensTopK = 0;
    o.layers = {-1};  // no real layer
    return o;
  }
};

struct Trace {
  int T = 0;      // new tokens in this forward
  int Tk = 0;     // keys each query could see at most (pos0 + T)
  int pos0 = 0;   // tokens already in the KV cache before this forward
  int L = 0, H = 0, C = 0, V = 0;
  std::vector<int> tokens;            // (T) the new token ids
  std::vector<int> layers;            // (Lc) captured layer indices, ascending
  std::vector<float> attn;            // (Lc, H, T, Tk) post-softmax probabilities (0 where masked)
  std::vector<float> scores;          // (Lc, H, T, Tk) pre-softmax q.k/sqrt(D) (-inf where masked)
  std::vector<float> residAfterAttn;  // (Lc, T, C) residual stream after the attention sublayer
  std::vector<float> residAfterMlp;   // (Lc, T, C) residual stream after the block
  std::vector<float> residNorm;       // (L + 1, T) L2 norm: after the embedding, then after each block
  int lensK = 0;
  std::vector<int> lensPositions;     // (P) positions 0..T-1 the logit lens covers
  std::vector<int> lensIds;           // (Lc, P, K) top-K ids of softmax(unembed(ln_f(resid)))
  std::vector<float> lensProbs;       // (Lc, P, K) their probabilities
  std::vector<float> logits;          // (T or 1, V) as returned by the forward
  std::vector<MoeRouting> moe;        // (L) routing of every mixture-of-experts layer (empty for dense layers)
  float moeAuxLoss = 0;               // sum over layers of the load-balancing loss
  double forwardMs = 0;               // wall time of the forward, capture included
  bool truncated = false;             // some requested layers were left out by the memory cap
  std::string note;                   // why, when truncated

  int capturedIndex(int layer) const;  // index into `layers`, or -1
  const float* attnMap(int layerIndex, int head) const { return attn.data() + ((size_t)layerIndex * H + head) * T * Tk; }
  const float* scoreMap(int layerIndex, int head) const { return scores.data() + ((size_t)layerIndex * H + head) * T * Tk; }
};

// Fills trace.layers (and truncated, note) with the layers `options` asks for that fit under its
// memory cap, for a forward of trace.T new tokens over trace.Tk keys with trace.H heads of width
// trace.C. Transformer::forward calls it; so does IncrementalForward, for the whole prompt.
void planCapture(Trace& trace, const TraceOptions& options, const ModelConfig& config);

// The attention maps (probabilities and scores) of a prompt's T tokens over Tk = T keys, stored as
// immutable row pieces shared between copies: an edit keeps the pieces of the unchanged prefix
// (cut to it without copying) and appends the rows it computed. A piece holds rows
// [firstRow, firstRow + rows) of every captured (layer, head) over its own key count; keys past
// it are masked for those rows (causal models), so map() fills them with 0 / -inf as a forward
// over the whole prompt does. Many pieces are merged into one (a copy) now and then.
class AttentionRows {
 public:
  bool empty() const { return pieces_.empty(); }
  int rows() const { return pieces_.empty() ? 0 : pieces_.back().firstRow + pieces_.back().rows; }  // T = Tk
  int heads() const { return H_; }
  int layers() const { return Lc_; }   // captured layers
  size_t pieceCount() const { return pieces_.size(); }

  // Takes the maps out of a forward's trace (rows trace.pos0 .. pos0 + T - 1, which must follow
  // the rows held); the trace's attn and scores are left empty. Throws tscope::Error on a gap or
  // a different layer / head count.
  void append(Trace& forwardTrace);
  void keepRows(int rows);  // forget the rows from `rows` on (no copy)
  void clear() { pieces_.clear(); }
  // out (T, T): the map of captured layer `layerIndex`, head `head`; probabilities or scores.
  void map(int layerIndex, int head, bool scores, float* out) const;
  std::vector<float> map(int layerIndex, int head, bool scores) const;
  // trace.attn and trace.scores (Lc, H, T, T) as one forward over the whole prompt writes them.
  void flattenInto(Trace& trace) const;

 private:
  struct Piece {
    int firstRow = 0, rows = 0;  // rows in use (a cut piece uses fewer than it stores)
    int storedRows = 0, keys = 0;
    std::shared_ptr<const std::vector<float>> attn, scores;  // (Lc, H, storedRows, keys)
  };
  void compact();
  static constexpr size_t kMaxPieces = 16;
  int Lc_ = 0, H_ = 0;
  std::vector<Piece> pieces_;
};

}  // namespace tscope

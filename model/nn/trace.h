// What one forward pass records for the UI and the CLI: attention maps and scores, the residual
// stream, logit-lens predictions and the logits. What is captured is chosen by TraceOptions and
// kept under a memory cap (layers past the cap are left out and the trace says so). AttentionRows
// holds the maps of a whole prompt as immutable row pieces, so an edit shares unchanged rows.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/nn/moe.h"

namespace tscope {

struct TraceOptions {
  bool attention = true;           // probabilities and pre-softmax scores of captured layers
  bool residuals = true;           // residual stream after attention and after the MLP
  int logitLensTopK = 5;           // top tokens per (layer, position); 0 = no logit lens
  bool logitLensLastOnly = false;  // lens only at the last new position (cheap for big vocabularies)
  std::vector<int> layers;         // layers to capture; empty = all
  // The layer looked at (the panels' selected layer): the capture plan takes it first, then its
  // neighbours outward, then the rest as the memory cap allows (planCapture). -1 = from layer 0.
  int focusLayer = -1;
  size_t memoryCapBytes = size_t(512) << 20;  // attention maps and residuals of the captured layers
  // Layers whose attention inputs are kept though their maps are not (IncrementalForward's suffix
  // runs, which must keep what the whole prompt's plan kept); empty = planCapture decides.
  std::vector<int> inputLayers;
  // Every layer's components, the inputs of the direct logit attribution (trace_views.h): the
  // embedding, each head's output before W_O, each feed-forward output, the final residual.
  bool components = false;
  // Layers whose internals are captured: q, k, v per head, the attention sublayer's output after
  // W_O, the two norms' statistics per token and the MLP's activations. Empty = none.
  std::vector<int> internalLayers;
  // Positions (in the whole sequence, 0-based) whose components and per-row internals are kept:
  // empty = every row. The Inside panel asks for its query row only, so its capture costs the
  // same at any prompt length. (k and v always cover every key.)
  std::vector<int> componentRows;

  static TraceOptions nothing() {
    TraceOptions o;
    o.attention = o.residuals = false;
    o.logitLensTopK = 0;
    o.layers = {-1};  // no real layer
    return o;
  }
};

struct Trace {
  int T = 0;     // new tokens in this forward
  int Tk = 0;    // keys each query could see at most (pos0 + T)
  int pos0 = 0;  // tokens already in the KV cache before this forward
  int L = 0, H = 0, C = 0, V = 0;
  int A = 0;                          // H * D: the concatenated heads' width (= C unless the config sets head_dim)
  std::vector<int> tokens;            // (T) the new token ids
  std::vector<int> layers;            // (Lc) captured layer indices, ascending
  std::vector<float> attn;            // (Lc, H, T, Tk) post-softmax probabilities (0 where masked)
  std::vector<float> scores;          // (Lc, H, T, Tk) pre-softmax q.k/sqrt(D) (-inf where masked)
  std::vector<float> residAfterAttn;  // (Lc, T, C) residual stream after the attention sublayer
  std::vector<float> residAfterMlp;   // (Lc, T, C) residual stream after the block
  std::vector<float> residNorm;       // (L + 1, T) L2 norm: after the embedding, then after each block
  int lensK = 0;
  std::vector<int> lensPositions;  // (P) positions 0..T-1 the logit lens covers
  std::vector<int> lensIds;        // (L, P, K) top-K ids of softmax(unembed(ln_f(resid))), every layer (not capped: P K per layer)
  std::vector<float> lensProbs;    // (L, P, K) their probabilities
  // Layers whose maps the memory cap left out, when one layer's maps fit under it: their attention
  // inputs, so Transformer::layerMaps computes one of them alone with the forward's own attention
  // call (the Attention panel's selected layer) without running the prompt again.
  int QKV = 0;                    // A + 2 Hkv D
  std::vector<int> inputLayers;   // (Li) ascending, none of them in `layers`
  std::vector<float> attnInputs;  // (Li, T, QKV) q | k | v after the projection (and q/k norm), before RoPE
  std::vector<float> logits;      // (T or 1, V) as returned by the forward
  // The rows R the components and per-row internals hold (options.componentRows): their positions
  // in the whole sequence, ascending (pos0 + t for row t of this forward); rowIndex() finds one.
  std::vector<int> rowPositions;  // (R)
  // Components (options.components), every layer:
  std::vector<float> embedded;    // (R, C) token + position embedding (the residual entering layer 0)
  std::vector<float> headMix;     // (L, R, A) every head's output before W_O, concatenated (head h: columns h D .. h D + D - 1)
  std::vector<float> crossMix;    // (L, R, A) encoder-decoder models: every cross-attention head's output before its W_O
  std::vector<float> mlpOut;      // (L, R, C) the feed-forward sublayer's output before the residual add (0: attention-only)
  std::vector<float> finalResid;  // (R, C) the residual after the last block (the final norm's input)
  // Internals (options.internalLayers), captured layers Li ascending:
  std::vector<int> internalLayers;  // (Li) layer indices
  int D = 0, Hkv = 0, F = 0;        // head width, key/value heads, MLP hidden width
  std::vector<float> q;             // (Li, H, R, D) queries as compared with the keys (after RoPE; not scaled)
  std::vector<float> k;             // (Li, Hkv, Tk, D) every key the queries could see (after RoPE), from the KV cache
  std::vector<float> v;             // (Li, Hkv, Tk, D) every value
  std::vector<float> attnOut;       // (Li, R, C) the attention sublayer's output after W_O (its bias included)
  std::vector<float> normMean;      // (Li, 2, R) mean over C of each norm's input (ln_1, then ln_2)
  std::vector<float> normRstd;      // (Li, 2, R) 1 / sqrt(var + eps) (LayerNorm) or 1 / sqrt(mean square + eps) (RMSNorm)
  std::vector<float> mlpPre;        // (Li, R, F) dense MLP: x W_fc + b_fc before the nonlinearity (empty for MoE / attention-only)
  std::vector<float> mlpGate;       // (Li, R, F) SwiGLU only: the gate's pre-activation x W_gate + b_gate
  std::vector<float> mlpPost;       // (Li, R, F) after the nonlinearity (SwiGLU: silu(gate) * up), the input of c_proj
  // Encoder-decoder models: the decoder's cross-attention over the S source rows last encoded.
  int S = 0;                    // source rows (0: decoder-only)
  std::vector<float> cross;     // (Lc, H, T, S) post-softmax cross-attention of the captured layers (options.attention)
  std::vector<MoeRouting> moe;  // (L) routing of every mixture-of-experts layer (empty for dense layers)
  float moeAuxLoss = 0;         // sum over layers of the load-balancing loss
  double forwardMs = 0;         // wall time of the forward, capture included
  bool truncated = false;       // some requested layers were left out by the memory cap
  std::string note;             // why, when truncated

  // Index into `layers` of a captured layer; nullopt when the layer's maps were not captured (never
  // another layer's index: a caller says why, or asks for the layer).
  std::optional<int> capturedIndex(int layer) const;
  std::optional<int> inputIndex(int layer) const;  // index into `inputLayers`
  int internalIndex(int layer) const;              // index into `internalLayers`, or -1
  int rowIndex(int position) const;                // index into `rowPositions` of a position in the whole sequence, or -1
  int R() const { return static_cast<int>(rowPositions.size()); }
  int rowOf(int t) const;  // rowIndex(pos0 + t) for row t of this trace; throws tscope::Error when not kept
  const float* attnMap(int layerIndex, int head) const { return attn.data() + ((size_t)layerIndex * H + head) * T * Tk; }
  const float* crossMap(int layerIndex, int head) const { return cross.data() + ((size_t)layerIndex * H + head) * T * S; }
  const float* scoreMap(int layerIndex, int head) const { return scores.data() + ((size_t)layerIndex * H + head) * T * Tk; }
};

// What Transformer::encode records of an encoder-decoder model's encoder.
struct EncoderTrace {
  int S = 0, L = 0, H = 0;      // source rows, encoder layers, heads
  std::vector<int> tokens;      // (S) the source ids
  std::vector<float> attn;      // (L, H, S, S) every encoder layer's self-attention probabilities (bidirectional)
  std::vector<MoeRouting> moe;  // (L) routing of mixture-of-experts encoder layers (empty for dense ones)
  double encodeMs = 0;          // wall time of the encoder and the cross keys / values
  const float* attnMap(int layer, int head) const { return attn.data() + ((size_t)layer * H + head) * S * S; }
};

// The per-row arrays of a trace (the components and the internals but k and v): each is `blocks`
// blocks of R rows of `width` floats, blocks and width from the trace's L, internalLayers, H, C, D, F.
struct RowArray {
  std::vector<float> Trace::*member;
  size_t blocks, width;
};
std::vector<RowArray> rowArrays(const Trace& trace);

// Fills trace.layers (and truncated, note) with the layers `options` asks for that fit under its
// memory cap, for a forward of trace.T new tokens over trace.Tk keys with trace.H heads of width
// trace.C: the focus layer first, then its neighbours outward, then the rest. The layers left out
// keep their attention inputs (trace.inputLayers) when one layer's maps fit under the cap.
// Transformer::forward calls it; so does IncrementalForward, for the whole prompt.
void planCapture(Trace& trace, const TraceOptions& options, const ModelConfig& config);

// Bytes of one layer's attention maps (probabilities and scores, H x T x Tk floats each).
size_t layerMapBytes(int H, int T, int Tk);

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
  int layers() const { return Lc_; }  // captured layers
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

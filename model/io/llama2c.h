// Karpathy's llama2.c checkpoints (stories15M.bin, stories42M.bin, stories110M.bin, stories260K.bin,
// and anything export.py writes) onto tscope's Llama architecture: RMSNorm (eps 1e-5), RoPE (base
// 10000) on the pairs (2i, 2i + 1) of each head as tscope rotates them (run.c rotates (i, i + 1) with
// frequency 10000^(-i / head_size) for even i: the same, so no row is reordered), SwiGLU
// w2(silu(w1 x) * w3 x) (w1 becomes c_gate, w3 c_fc, w2 c_proj), grouped-query attention, no biases,
// the classifier tied to the embedding or not, n_positions = seq_len (at most kHfContextCap).
// Three layouts (karpathy/llama2.c export.py), every matrix an nn.Linear weight (out, in):
//   version 0 (legacy_export; run.c's read_checkpoint): 7 int32 (dim, hidden_dim, n_layers, n_heads,
//     n_kv_heads, vocab_size, seq_len; a negative vocab_size: the classifier is not shared), then
//     float32 token embedding, all attention norms, wq, wk, wv, wo (each over all layers), ffn norms,
//     w1, w2, w3, the final norm, RoPE's cos and sin tables (seq_len * head_size / 2 each, unread), and
//     the classifier when not shared;
//   version 1 (version1_export): 256 bytes of header (uint32 magic "ak42" 0x616b3432, int32 version,
//     the 7 int32, uint8 shared_classifier, zeros), then float32 attention norms, ffn norms, final
//     norm, token embedding, wq, wk, wv, wo, w1, w2, w3, and the classifier when not shared;
//   version 2 (version2_export; runq.c): the same header with an int32 group size at byte 37, the
//     norms in float32, then each matrix (the embedding, every layer's wq, ..., w3, the classifier)
//     as int8 values and their float32 scales, one per group (Q8_0): dequantized to float32 here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/core/weights.h"
#include "model/io/load_progress.h"

namespace tscope {

class MappedFile;  // model/io/safetensors.h

// Whether `path` holds a llama2.c checkpoint: it starts with the magic "ak42" (versions 1 and 2), or
// with 7 positive int32 sizes (vocab_size may be negative) whose legacy layout is exactly the file's size.
// Never throws (an unreadable file is not one).
bool looksLikeLlama2c(const std::string& path);

// Reads a llama2.c checkpoint (any of the three versions). Throws tscope::Error with one line naming
// the file and the problem: truncated, a header field out of range or not dividing another, a
// version or magic it does not know, or a size that is not the one the header implies.
Weights loadLlama2cCheckpoint(const std::string& path, const LoadProgress& progress = {});
// The same from the checkpoint's bytes in memory (`size` bytes, 4-byte aligned; `name` starts every
// error message). With `mapping` (holding the bytes) float32 vectors and embeddings are read in
// place; without, copied.
Weights llama2cCheckpointFromBytes(const std::string& name, const uint8_t* bytes, size_t size, std::shared_ptr<const MappedFile> mapping = nullptr,
                                   const LoadProgress& progress = {});

}  // namespace tscope

// GGUF model files (llama.cpp, Ollama's blobs, LM Studio) onto tscope's architecture. The metadata
// (`<arch>.embedding_length`, `<arch>.block_count`, ...) becomes the config.json a HuggingFace
// checkpoint of the same model would have, so hfLlamaConfig and the Llama-family placement plan
// (hf_checkpoint.cpp) are shared; llama.cpp's tensor names (token_embd, blk.N.attn_q, ffn_gate,
// output_norm, output) map onto HF's. Matrices stay in the file's type (F16, BF16, Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K) as PackedMatrix, read in place from the mapped file; norms and biases become
// float32. Architectures: llama (Llama 2/3, Mistral, SmolLM, TinyLlama), qwen2, qwen3.
// llama.cpp's converter stores a `llama` model's q and k rows permuted to interleaved RoPE pairs
// (convert_hf_to_gguf.py, LlamaModel.permute), which is tscope's own order; qwen2 and qwen3 use
// NeoX RoPE (rotate_half), stored in HF's order and reordered here as for HF checkpoints.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "model/io/model_io.h"

namespace tscope {

class GgufFile;  // model/io/gguf.h

// The architectures this file reads, as general.architecture names them.
bool ggufArchitectureSupported(const std::string& architecture);
// The HuggingFace config.json of the model a GGUF file holds (architectures, sizes, RoPE base, norm
// eps, tie_word_embeddings from whether output.weight is stored). Throws tscope::Error with one line
// naming the file and the key for an unsupported architecture or a missing or malformed key.
nlohmann::json ggufHfConfig(const GgufFile& file);
// The whole model: config, weights and the tokenizer from the file's own tokenizer.ggml.* metadata.
LoadedModel loadGgufModel(const std::string& path, const LoadProgress& progress = {});

}  // namespace tscope

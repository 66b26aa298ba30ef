// Loading models: HuggingFace GPT-2 and Llama-family directories (config.json + model.safetensors
// + tokenizer files), GGUF files (gguf_model.h), llm.c's gpt2_124M.bin, llama2.c's stories*.bin
// (llama2c.h), and tscope's own directories (the same layout). Saving writes
// tscope's layout atomically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/tokenize/tokenizer.h"
#include "model/core/weights.h"
#include "model/io/image.h"
#include "model/io/load_progress.h"

namespace tscope {

class MappedFile;  // model/io/safetensors.h

struct LoadedModel {
  Weights weights;
  std::unique_ptr<Tokenizer> tokenizer;  // null when none was found (ids still work)
  std::string format;                    // "hf-gpt2", "hf-llama", "hf-bert", "hf-vit", "gguf", "llmc-bin", "llama2c-bin" or "tscope"
  std::string path;
  std::string tokenizerNote;  // why there is no tokenizer, when there is none
  // Image models: how an image becomes the model's input (preprocessor_config.json; without one the
  // model's size, rescaled by 1/255 and normalised by 0.5 and 0.5 as ViT's processor does by default).
  ImagePreprocessing preprocessing;
};

// `path` is a model directory (GPT-2, Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2-MoE, BERT: see hf_checkpoint.h), a HuggingFace
// cache repo or "org/name" in the cache (resolveHfModelPath), a GGUF file (told by its magic; an Ollama model's name
// resolves to its blob), or an llm.c or llama2.c .bin file (llama2.c's tokenizer is
// tok<V>.bin or tokenizer.bin beside it; without one, tokenizerNote says where llama2.c keeps it). Throws tscope::Error
// naming the file and the problem (missing file, corrupt safetensors, tensor missing or of the wrong shape, ...).
// `progress` hears of each tensor placed and may throw to stop the load (load_progress.h).
LoadedModel loadModel(const std::string& path, const LoadProgress& progress = {});

// llm.c checkpoint (header of 256 int32, magic 20240326, version 3 = fp32; the 16 tensors
// layer-major with weights in (out, in) layout). Documented in karpathy/llm.c train_gpt2.c.
Weights loadLlmcCheckpoint(const std::string& path, const LoadProgress& progress = {});
// The same from the checkpoint's bytes in memory (`size` bytes, 4-byte aligned; `name` starts every
// error message). With `mapping` (holding the bytes) vectors are read in place; without, copied.
Weights llmcCheckpointFromBytes(const std::string& name, const uint8_t* bytes, size_t size, std::shared_ptr<const MappedFile> mapping = nullptr,
                                const LoadProgress& progress = {});

// Writes config.json + model.safetensors (+ the tokenizer when given) into `dir`.
void saveModelDir(const std::string& dir, const Weights& weights, const Tokenizer* tokenizer, const std::string& vocabJsonSrc = "",
                  const std::string& mergesSrc = "");

// Where to find GPT-2's tokenizer when a model (an llm.c .bin) ships none: $TSCOPE_GPT2_TOKENIZER,
// or the copy the set-up installs under .cache/npm. Returns "" if neither exists.
std::string defaultGpt2TokenizerDir();

}  // namespace tscope

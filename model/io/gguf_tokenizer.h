// The tokenizer a GGUF file carries in its metadata (ggml's docs/gguf.md, "Tokenizer"):
// tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, the pre-tokenizer named by
// tokenizer.ggml.pre) or "llama" (SentencePiece's score-based BPE: tokens, scores, token types),
// with tokenizer.ggml.bos_token_id / eos_token_id and add_bos_token.
#pragma once
#include <memory>

#include "model/tokenize/tokenizer.h"

namespace tscope {

class GgufFile;  // model/io/gguf.h

// Throws tscope::Error with one line naming the file and the key: no tokenizer in the file, a
// tokenizer model or pre-tokenizer tscope does not read (named), arrays of different lengths, a
// merge of pieces not in the vocabulary.
std::unique_ptr<Tokenizer> ggufTokenizer(const GgufFile& file);

}  // namespace tscope

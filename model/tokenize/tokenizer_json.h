// HuggingFace tokenizer.json for BPE models: byte-level BPE with the model's own pre-tokenizer
// pattern (GPT-2, Llama 3, Qwen2/3) and SentencePiece-style BPE with byte fallback (Llama 2,
// Mistral), added and special tokens, and the normalizers these models use; and for WordPiece
// models (BERT: tokenizer_wordpiece.h).
#pragma once
#include <memory>
#include <string>

#include "model/tokenize/tokenizer.h"

namespace tscope {

// Reads tokenizer.json ("model": {"type": "BPE"}, or "WordPiece": then kind() is TokenizerKind::WordPiece and
// the rest is as tokenizer_wordpiece.h says). The tokenizer's kind() is TokenizerKind::HfBpe ("hf-bpe"); encode()
// never adds the BOS token (bosId() says which one the file's post_processor would put first, or
// -1). Throws tscope::Error with one line naming the file and the problem on a malformed file,
// an unsupported component (an unknown pre-tokenizer regex is named), or hostile sizes.
std::unique_ptr<Tokenizer> loadHfTokenizer(const std::string& tokenizerJsonPath);
// The same from the file's contents in memory; `name` starts the error messages.
std::unique_ptr<Tokenizer> hfTokenizerFromText(const std::string& name, const std::string& tokenizerJson);

}  // namespace tscope

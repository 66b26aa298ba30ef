// SentencePiece's score-based BPE ("spm-bpe"): a vocabulary of pieces, each with a score, merged
// greedily by score. It is what llama2.c's tokenizer.bin holds (karpathy/llama2.c: tokenizer.py's
// export, run.c's build_tokenizer / encode / decode) and what a GGUF file whose tokenizer.ggml.model
// is "llama" carries (tokens, scores, token types), which llama.cpp's llm_tokenizer_spm encodes the
// same way. encode(): a space in front of non-empty text (add_dummy_prefix), every space written as
// the space marker ("▁" U+2581 in SentencePiece and GGUF pieces, " " in tokenizer.bin), the text
// cut into UTF-8 characters, each the piece that spells it or else its bytes as <0xNN> byte tokens
// (or <unk>), then repeatedly the adjacent pair whose concatenation is a piece with the highest
// score merged (ties: the leftmost), until no pair is a piece. decode(): byte tokens give their byte,
// the space marker a space, and a token right after BOS loses one leading space (run.c's rule,
// SentencePiece's removal of the dummy prefix). encode never adds BOS.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenize/tokenizer.h"

namespace tscope {

// Token types as GGUF's tokenizer.ggml.token_type numbers them (llama.cpp's llama_token_type).
// Only normal, user-defined and undefined pieces are matched in text and merged into; a byte token's
// piece is "<0xNN>"; control, unknown and unused tokens are only ever given by id.
enum class SpmTokenType : int { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct ScoreBpeOptions {
  std::string name = "tokenizer";            // the file, starts every error message
  std::string spaceMarker = "\xE2\x96\x81";  // how pieces spell a space: "▁" (SentencePiece, GGUF) or " " (tokenizer.bin)
  bool addDummyPrefix = true;                // a space in front of non-empty text
  int bosId = -1, eosId = -1, unkId = -1;    // -1: none
  int stopId = -1;                           // eotId(), where generation stops; -1: eosId
  std::string source;                        // where the vocabulary came from, for description(): "llama2.c tokenizer.bin", ...
};

// `pieces` (V) as the vocabulary spells them, `scores` (V), `types` (V, SpmTokenType values) or
// empty: then `options.unkId` is the unknown token, BOS and EOS are control tokens, "<0xNN>" pieces
// byte tokens and every other piece normal. Throws tscope::Error (one line starting with
// options.name) on mismatched sizes, a type outside 0..6, a NaN score, a special id outside the
// vocab, a byte token that is not "<0xNN>", or a vocabulary that can neither spell every byte nor
// fall back to an unknown token. A piece spelled twice is matched as its lowest id.
std::unique_ptr<Tokenizer> makeScoreBpeTokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int> types,
                                                 const ScoreBpeOptions& options);

// llama2.c's tokenizer.bin for a model of `vocabSize` tokens (the file does not say how many it
// holds): uint32 max_token_length, then per token a float32 score, an int32 length and that many
// bytes. Ids 0, 1, 2 are <unk>, <s>, </s> (tokenizer.py writes the last two as "\n<s>\n" and
// "\n</s>\n": they read "<s>" and "</s>" here), "<0xNN>" pieces byte tokens, spaces written as " ".
// eotId() is BOS (1), where run.c's generate stops: the TinyStories models begin every story with
// it and never saw </s>.
// Throws tscope::Error naming the file: truncated, a length negative, above max_token_length or past
// the end, bytes left after the last token (a tokenizer of another vocab: stories260K's is tok512.bin).
std::unique_ptr<Tokenizer> loadLlama2cTokenizer(const std::string& path, int vocabSize);
// The same from the file's bytes; `name` starts the error messages.
std::unique_ptr<Tokenizer> llama2cTokenizerFromBytes(const std::string& name, std::string_view bytes, int vocabSize);

}  // namespace tscope

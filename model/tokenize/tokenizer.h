// Tokenizers, five kinds: GPT-2's byte-level BPE from vocab.json + merges.txt ("gpt2-bpe",
// identical ids to GPT-2; it can also show its merges step by step), HuggingFace tokenizer.json BPE
// ("hf-bpe", tokenizer_json.h: byte-level as Llama 3 and Qwen2/3, or SentencePiece style with byte
// fallback as Llama 2 and Mistral), SentencePiece's score-based BPE ("spm-bpe", tokenizer_spm.h:
// pieces and scores, as llama2.c's tokenizer.bin and GGUF's "llama" tokenizer hold them), BERT's
// WordPiece ("wordpiece", tokenizer_wordpiece.h: from a tokenizer.json or a vocab.txt), and a
// character-level tokenizer for small models ("char").
// padTokenizer wraps any of them for a model with more embedding rows than tokens.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tscope {

enum class TokenizerKind { Gpt2Bpe, HfBpe, WordPiece, Char, Labels, Spm };

// The kind's name, its on-disk form: "gpt2-bpe", "hf-bpe", "wordpiece", "char", "labels" or "spm-bpe" (config.json's
// "tokenizer", loadTokenizerFromDir's kind, the CLI's JSON, error messages).
std::string tokenizerKindName(TokenizerKind kind);

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual TokenizerKind kind() const = 0;
  std::string kindName() const { return tokenizerKindName(kind()); }  // "gpt2-bpe", "hf-bpe", "wordpiece", "char", ...
  // What the tokenizer is, for people: "GPT-2 byte-level BPE", "byte-level BPE (tokenizer.json, Qwen2
  // split)", "SentencePiece-style BPE with byte fallback (tokenizer.json)", "WordPiece (BERT, uncased)", "character-level".
  virtual std::string description() const { return kindName(); }
  virtual int vocabSize() const = 0;
  // Any byte string, invalid UTF-8 included.
  virtual std::vector<int> encode(std::string_view text) const = 0;
  // Throws tscope::Error for an id outside [0, vocabSize).
  virtual std::string decode(std::span<const int> ids) const = 0;
  // The raw bytes one token stands for (may be a partial UTF-8 sequence).
  virtual std::string tokenBytes(int id) const = 0;
  // A printable form of a token for display (GPT-2 style: leading space shown as the token's text).
  virtual std::string tokenText(int id) const { return tokenBytes(id); }
  // The end-of-text id, or -1 if there is none.
  virtual int eotId() const { return -1; }
  // The beginning-of-sequence id a model expects in front (encode never adds it), or -1.
  virtual int bosId() const { return -1; }
  // Each of `ids` decoded alone, in order (the pieces whose byte spans line up two tokenizations of
  // one text: compare_views.h's spansOf).
  std::vector<std::string> decodeEach(std::span<const int> ids) const;
};

// One step of BPE on a single pre-tokenized word: the pieces after the merge and the pair merged.
struct BpeStep {
  std::vector<std::string> pieces;  // byte strings, concatenating to the word
  std::string left, right;          // the pair merged to reach `pieces` ("" for the initial split)
  int rank = -1;                    // merge rank (priority) of that pair, -1 for the initial split
};

class Gpt2BpeTokenizer;  // defined in tokenizer_bpe.cpp

// GPT-2's tokenizer from vocab.json + merges.txt (same formats as encoder.json + vocab.bpe).
// Throws tscope::Error naming the file and the problem on a malformed file.
std::unique_ptr<Tokenizer> loadGpt2Tokenizer(const std::string& vocabJsonPath, const std::string& mergesPath);
// The same from the two files' contents in memory; the names start the error messages.
std::unique_ptr<Tokenizer> gpt2TokenizerFromText(const std::string& vocabJsonName, const std::string& vocabJson, const std::string& mergesName,
                                                 const std::string& merges);

// The GPT-2 pre-tokenization (the regex of GPT-2's encoder.py, implemented by hand): splits text
// into the byte strings that BPE then works on one at a time.
std::vector<std::string> gpt2PreTokenize(std::string_view text);
// The same split as views into `text` (no copies); they concatenate to `text`.
std::vector<std::string_view> gpt2PreTokenizeViews(std::string_view text);
// The Unicode version of the letter/number/white-space tables the pre-tokenizer uses.
const char* gpt2PreTokenizerUnicodeVersion();

// BPE applied one merge at a time to one pre-tokenized word, for display. Throws if `tokenizer` is
// not a GPT-2 BPE tokenizer.
std::vector<BpeStep> bpeMergeSteps(const Tokenizer& tokenizer, std::string_view word);

// Character-level tokenizer over UTF-8 code points. Unknown characters (and invalid UTF-8 bytes)
// map to id 0 ("<unk>"), which decodes to the text "<unk>". `characters` lists one code point per
// entry; "<unk>" is put in front as id 0 unless characters[0] already is "<unk>". Throws
// tscope::Error on an entry that is not exactly one code point, or on a duplicate.
std::unique_ptr<Tokenizer> makeCharTokenizer(const std::vector<std::string>& characters);
// chars.json: {"chars": ["<unk>", "a", ...]} (id = index; index 0 is the unknown character).
std::unique_ptr<Tokenizer> loadCharTokenizer(const std::string& charsJsonPath);
// The same from chars.json's contents in memory; `name` starts the error messages.
std::unique_ptr<Tokenizer> charTokenizerFromJsonText(const std::string& name, const std::string& charsJson);
void saveCharTokenizer(const Tokenizer& tokenizer, const std::string& charsJsonPath);

// An image classifier's class names as its "tokenizer" ("labels"): id i is class i, its text the
// label (HF's id2label). encode() gives the ids of the whitespace-separated words that are labels (an
// image model reads no text; the rest is dropped). Throws tscope::Error on an empty list.
std::unique_ptr<Tokenizer> makeLabelTokenizer(std::vector<std::string> labels);
// labels.json: {"labels": ["0", "1", ...]} (id = index). `name` starts the error messages.
std::unique_ptr<Tokenizer> labelTokenizerFromJsonText(const std::string& name, const std::string& labelsJson);
void saveLabelTokenizer(const Tokenizer& tokenizer, const std::string& labelsJsonPath);

// Finds and loads the tokenizer in a model directory: vocab.json + merges.txt, or encoder.json +
// vocab.bpe, or tokenizer.json (for "gpt2-bpe" or "hf-bpe"), or chars.json (for config tokenizer
// "char"). A tokenizer.json whose model is WordPiece gives the WordPiece tokenizer whatever the
// kind asked; "wordpiece" (and "hf-bpe" when the directory has no tokenizer.json) also takes a bare
// vocab.txt; labels.json for "labels" (an image model's classes). Throws naming what is missing.
std::unique_ptr<Tokenizer> loadTokenizerFromDir(const std::string& dir, const std::string& kind);

// A model may have more embedding rows than its tokenizer has tokens (Qwen2.5 pads 151,665 tokens
// to 151,936 rows): the tokenizer as the model sees it, with vocabSize() = vocabSize. Ids past the
// tokenizer's own are never produced by encode; they have no bytes, show as "<unused ID>", and
// decode skips them. Returns `tokenizer` itself when it already covers vocabSize.
std::unique_ptr<Tokenizer> padTokenizer(std::unique_ptr<Tokenizer> tokenizer, int vocabSize);

// Splits bytes into UTF-8 characters: each valid code point's bytes, and each byte that is not
// part of a valid UTF-8 sequence (overlong, surrogate, truncated, stray) on its own.
std::vector<std::string> splitUtf8Characters(std::string_view text);
// Bytes in the character that starts at text[pos] (pos < size): 1..4 for a valid code point, 1 for
// a byte that does not start one.
size_t utf8CharacterLength(std::string_view text, size_t pos);
// The bytes with valid UTF-8 kept as is and every other byte written as \xNN (for display).
std::string printableBytes(std::string_view bytes);

}  // namespace tscope

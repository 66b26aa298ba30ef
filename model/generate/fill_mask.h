// Filling in the blanks with a masked language model (BERT; config.masked_lm): the input is
// [CLS] text [SEP] with each "[MASK]" written in the text as the [MASK] token, one forward over
// all of it (attention sees both sides), and at each mask the softmax of its logits: what the model
// would put there. The CLI's `fill`, the Fill-in-the-blank panel and the tests share this.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/core/config.h"
#include "model/tokenize/special_tokens.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

inline constexpr std::string_view kMaskText = "[MASK]";

struct MaskedText {
  std::vector<int> ids;             // [CLS] text [SEP]
  std::vector<int> maskPositions;   // where ids holds [MASK], ascending
  std::vector<std::string> pieces;  // the text between the masks (pieces.size() = masks + 1)
};

// "" when `config` with a tokenizer holding `specials` can fill masks, else one line saying why:
// a model that predicts the next token (causal, or an encoder-decoder), or a tokenizer without
// [CLS], [SEP] and [MASK].
std::string fillProblem(const ModelConfig& config, const MaskedLmTokens& specials);

// [CLS] text [SEP] with each literal "[MASK]" the mask token. The one space in front of a "[MASK]"
// is dropped: in a byte-level BPE a word carries its leading space, so the masked token " said" of
// "The jury said" is what "The jury [MASK]" hides (WordPiece ignores spaces either way). A text with
// no "[MASK]" is [CLS] text [SEP]. Throws tscope::Error when the tokenizer lacks the special tokens.
MaskedText encodeMaskedText(const Tokenizer& tokenizer, const MaskedLmTokens& specials, std::string_view text);
// Throws tscope::Error (one line) when the text has no mask to fill.
void requireMask(const MaskedText& text);

// "" when `ids` fit a context of `context` tokens, else one line: the input is N tokens with [CLS]
// and [SEP], and which mask falls past the context (a masked LM cannot drop the front of a text:
// every token's prediction depends on both sides).
std::string contextProblem(const MaskedText& text, int context);

struct FillCandidate {
  int id = -1;
  double p = 0;  // softmax probability at the mask
};
struct MaskFill {
  int position = -1;               // index into MaskedText::ids
  std::vector<FillCandidate> top;  // the k most probable tokens, most probable first; specials left out
};

// Each mask's top `k` from logits (T, V) of every position. The special tokens ([CLS], [SEP],
// [MASK], [PAD]) are left out of the candidates, but the probabilities are over the whole vocabulary.
std::vector<MaskFill> fillFromLogits(std::span<const float> logits, int V, std::span<const int> maskPositions, const MaskedLmTokens& specials, int k);

// The prompt text of `ids` ([CLS] text [SEP] as encodeMaskedText makes them, edited: a token made
// [MASK], a [MASK] made a token): the runs of ordinary tokens decoded, each [MASK] written "[MASK]"
// after a space unless it starts the text or follows white space, a [SEP] inside the text (a
// sentence pair's boundary) written "[SEP]" the same way; [CLS], the last [SEP] and [PAD] left out.
// encodeMaskedText of the result gives `ids` back (the space in front of a [MASK] is the one it drops).
std::string promptFromTokens(const Tokenizer& tokenizer, const MaskedLmTokens& specials, std::span<const int> ids);

// The text with mask `which` replaced by `token`'s text (the space dropped in front of the mask
// comes back when the token does not start with one); the other masks stay "[MASK]".
std::string textWithFill(const MaskedText& text, int which, const std::string& tokenText);
// The text with mask i replaced by tokenTexts[i] by the same rule (an empty or missing one stays "[MASK]").
std::string textWithFills(const MaskedText& text, const std::vector<std::string>& tokenTexts);

}  // namespace tscope

// Filling in [MASK]s with a masked language model (see fill_mask.h).
#include "model/generate/fill_mask.h"

#include <algorithm>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

std::string fillProblem(const ModelConfig& config, const MaskedLmTokens& specials) {
  if (!config.masked_lm)
    return "this model predicts the next token, it does not fill in [MASK]s: open a masked language model (brown-bert, or a BERT checkpoint)";
  if (!specials.complete()) return "this model's tokenizer has no [CLS], [SEP] and [MASK] tokens, so there is nothing to mark a blank with";
  return "";
}

MaskedText encodeMaskedText(const Tokenizer& tokenizer, const MaskedLmTokens& specials, std::string_view text) {
  if (!specials.complete()) throw Error("the tokenizer has no [CLS], [SEP] and [MASK] tokens");
  MaskedText out;
  out.ids.push_back(specials.cls);
  size_t from = 0;
  while (true) {
    const size_t at = text.find(kMaskText, from);
    std::string_view piece = text.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from);
    out.pieces.emplace_back(piece);
    if (at != std::string_view::npos && piece.ends_with(' ')) piece.remove_suffix(1);
    const std::vector<int> ids = tokenizer.encode(piece);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    if (at == std::string_view::npos) break;
    out.maskPositions.push_back(static_cast<int>(out.ids.size()));
    out.ids.push_back(specials.mask);
    from = at + kMaskText.size();
  }
  out.ids.push_back(specials.sep);
  return out;
}

void requireMask(const MaskedText& text) {
  if (text.maskPositions.empty()) throw Error("the text has no [MASK]: write [MASK] where a word should be filled in");
}

std::string contextProblem(const MaskedText& text, int context) {
  const int n = static_cast<int>(text.ids.size());
  if (n <= context) return "";
  std::string line = "the text is " + std::to_string(n) + " tokens with [CLS] and [SEP], longer than the model's context of " +
                     std::to_string(context) + " (a masked model reads the whole text at once: shorten it)";
  const int past = static_cast<int>(std::count_if(text.maskPositions.begin(), text.maskPositions.end(), [&](int p) { return p >= context; }));
  if (past > 0) line += "; " + std::to_string(past) + " [MASK] fall past the context";
  return line;
}

std::vector<MaskFill> fillFromLogits(std::span<const float> logits, int V, std::span<const int> maskPositions, const MaskedLmTokens& specials,
                                     int k) {
  std::vector<MaskFill> fills;
  std::vector<double> probs(V);
  std::vector<int> order;
  for (int position : maskPositions) {
    if (position < 0 || (size_t)(position + 1) * V > logits.size()) throw Error("mask position " + std::to_string(position) + " has no logits");
    const std::span<const float> row = logits.subspan((size_t)position * V, V);
    std::vector<double> wide(row.begin(), row.end());
    softmax(std::span<const double>(wide), std::span<double>(probs));
    order.clear();
    for (int v = 0; v < V; ++v)
      if (!specials.isSpecial(v)) order.push_back(v);
    const int keep = std::clamp(k, 0, static_cast<int>(order.size()));
    std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                      [&](int a, int b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); });
    MaskFill fill;
    fill.position = position;
    for (int i = 0; i < keep; ++i) fill.top.push_back({order[i], probs[order[i]]});
    fills.push_back(std::move(fill));
  }
  return fills;
}

std::string promptFromTokens(const Tokenizer& tokenizer, const MaskedLmTokens& specials, std::span<const int> ids) {
  std::string text;
  std::vector<int> run;
  // WordPiece decodes words without their spaces (decode puts them between the words of a run):
  // a run after a [MASK] needs one in front.
  const bool spacesBetweenRuns = tokenizer.kind() == TokenizerKind::WordPiece;
  auto flush = [&] {
    if (run.empty()) return;
    const std::string words = tokenizer.decode(run);
    if (spacesBetweenRuns && !text.empty() && !words.empty() && words.front() != ' ') text += ' ';
    text += words;
    run.clear();
  };
  auto writeName = [&](std::string_view name) {
    flush();
    const bool spaced = text.empty() || text.back() == ' ' || text.back() == '\n' || text.back() == '\t';
    text += (spaced ? "" : " ") + std::string(name);
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    const int id = ids[i];
    if (id == specials.mask) {
      writeName(kMaskText);
    } else if (id == specials.sep && i + 1 < ids.size()) {  // a [SEP] inside the text: a sentence pair's boundary
      writeName("[SEP]");
    } else if (!specials.isSpecial(id)) {
      run.push_back(id);
    }
  }
  flush();
  return text;
}

std::string textWithFills(const MaskedText& text, const std::vector<std::string>& tokenTexts) {
  std::string out;
  const int masks = static_cast<int>(text.pieces.size()) - 1;
  for (int i = 0; i <= masks; ++i) {
    out += text.pieces[i];
    if (i == masks) break;
    const std::string& tokenText = i < static_cast<int>(tokenTexts.size()) ? tokenTexts[i] : std::string();
    if (tokenText.empty()) {
      out += kMaskText;
      continue;
    }
    // The piece kept the space the encoding dropped; the token brings its own when it has one.
    if (tokenText.front() == ' ' && out.ends_with(' ')) out.pop_back();
    out += tokenText;
  }
  return out;
}

std::string textWithFill(const MaskedText& text, int which, const std::string& tokenText) {
  std::vector<std::string> tokenTexts(text.pieces.empty() ? 0 : text.pieces.size() - 1);
  if (which >= 0 && which < static_cast<int>(tokenTexts.size())) tokenTexts[which] = tokenText;
  return textWithFills(text, tokenTexts);
}

}  // namespace tscope

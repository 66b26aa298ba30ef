// The pre-tokenizers' regexes, each written out by hand over the Unicode tables (std::regex cannot
// do \p{L}): GPT-2's (also HF's ByteLevel with use_regex) and the Split patterns of Llama 3 and
// Qwen2/3. Each splits text into the byte strings that BPE then works on one at a time.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace tscope {

enum class SplitPattern {
  Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Qwen2,   // the same with \p{N} one digit at a time
};

// The pattern a tokenizer.json regex spells exactly, or nothing for any other regex.
std::optional<SplitPattern> knownSplitPattern(std::string_view regex);
// The regex text of a known pattern (as tokenizer.json writes it).
std::string_view splitPatternRegex(SplitPattern pattern);

// Splits `text` into the pattern's matches as views into it; they concatenate to `text` (every
// position matches one alternative, so nothing is dropped). Invalid UTF-8 bytes count as [^\s\p{L}\p{N}].
std::vector<std::string_view> preTokenizeViews(std::string_view text, SplitPattern pattern);

}  // namespace tscope
